"""Image features from image files, for dmc-train's ``--image_features``.

Reads every image matching ``--images`` (local or gs://), preprocesses it as the encoder
was trained, encodes batches with the model (loaded once per worker) and writes a folder of
Parquet shards of (image, features), each sorted by image (the file's name), the same bytes
on every run of the same inputs. Unreadable files are skipped, counted and listed beside
the output (``feats.skipped.json`` for ``feats.parquet``)::

    python -m pipelines.features --images 'coco/train2014/*.jpg' \\
        --model resnet152 --pretrained IMAGENET1K_V2 --output feats.parquet
    python -m pipelines.train --dataset out/mcic-coco --output out/train \\
        --image_features feats.parquet

Needs the ``train`` and ``vision`` extras (PyTorch; torchvision, open_clip_torch,
transformers). On Dataflow, add ``--runner DataflowRunner --project PROJECT --region REGION
--temp_location gs://BUCKET/tmp --setup_file ./setup.py`` and a requirements file of both
extras (workers install the package without them).
"""

import logging
import operator
import os
import sys

import apache_beam as beam
import numpy as np
from apache_beam.utils.shared import Shared

from pipelines.cli.commands import FEATURES
from pipelines.options import FeaturesOptions
from pipelines.runner import cli, local_or_given_runner, run_to_completion
from schemas.image_features import IMAGES_PER_SHARD, SHARDS
from schemas.records import SKIPPED
from transforms.dataset.write import Format, WriteShards, known_shards
from transforms.errors import InputError
from transforms.files import (
    check_location,
    check_writable,
    list_files,
    read_json,
    remove_shards,
    write_json,
)
from transforms.vision.features import (
    NAMESPACE,
    UNREADABLE,
    EncodeImages,
    SharedEncoder,
    check_image_ids,
    features_table,
    parquet_bytes,
)

WILDCARDS = frozenset("*?[")
SHOWN_SKIPS = 5  # unreadable files named in the summary; the rest are in the JSON


def images_pattern(images: str) -> str:
    """``--images`` as a glob: a glob as it is, a folder as all the files in it.

    >>> images_pattern("coco/train2014"), images_pattern("gs://b/x/*.jpg")
    ('coco/train2014/*', 'gs://b/x/*.jpg')
    """
    return images if WILDCARDS & set(images) else images.rstrip("/") + "/*"


def skipped_path(output: str) -> str:
    """ "feats.parquet" -> "feats.skipped.json": the unreadable images' list, beside it."""
    return f"{os.path.splitext(output)[0]}.skipped.json"


def features_bytes(rows: list[tuple[str, np.ndarray]]) -> bytes:
    return parquet_bytes(features_table(rows))


def _write_skipped(skipped: list[dict], path: str) -> None:
    write_json(path, {"unreadable": sorted(skipped, key=lambda skip: skip["file"])})


def build_pipeline(
    pipeline: beam.Pipeline, options: FeaturesOptions, paths: list[str], encoder: SharedEncoder
) -> None:
    encoded = (
        pipeline
        | "Paths" >> beam.Create(paths)
        | "EncodeImages"
        >> EncodeImages(encoder=encoder, batch_size=options.batch_size, total=len(paths))
    )
    _ = encoded["features"] | "WriteFeatures" >> WriteShards(
        output=options.output,
        name=SHARDS,
        formats=(Format("", ".parquet", features_bytes),),
        key=operator.itemgetter(0),
        plan=known_shards(pipeline, SHARDS, len(paths), options.output, IMAGES_PER_SHARD),
    )
    _ = (
        encoded[SKIPPED]
        | "GatherSkipped" >> beam.combiners.ToList()
        | "WriteSkipped" >> beam.Map(_write_skipped, skipped_path(options.output))
    )


def summary(options: FeaturesOptions, matched: int, skipped: list[dict]) -> str:
    encoded = matched - len(skipped)
    lines = [f"features of {encoded} of {matched} images written to {options.output}"]
    if skipped:
        lines.append(
            f"{len(skipped)} unreadable images skipped, listed in {skipped_path(options.output)}:"
        )
        lines += [f"  {skip['file']}: {skip['why']}" for skip in skipped[:SHOWN_SKIPS]]
    return "\n".join(lines)


def run(options: FeaturesOptions, beam_args: list[str] | None = None) -> str:
    """Runs the job; returns its summary (how many images, which were unreadable and why)."""
    options.validate()
    check_location(options.output, "output")
    paths = list_files(images_pattern(options.images))
    if not paths:
        raise InputError(f"--images {options.images}: no files match")
    check_image_ids(paths)
    encoder = SharedEncoder(Shared(), options.encoder_spec())
    # a model that cannot load is one error here, before any work; held while the run lasts,
    # in-process workers share it
    loaded = encoder.acquire()
    logging.info("encoder: %s %s", options.library, type(loaded.model).__name__)
    remove_shards(options.output, SHARDS, ".parquet")
    check_writable(options.output)
    pipeline = local_or_given_runner(beam_args or [], extra="vision")
    build_pipeline(pipeline, options, paths, encoder)
    counters = run_to_completion(pipeline)
    skipped = read_json(skipped_path(options.output))["unreadable"]
    if counters.get(f"{NAMESPACE}/{UNREADABLE}", 0) != len(skipped):
        raise RuntimeError(f"{skipped_path(options.output)} does not list every unreadable image")
    if len(skipped) == len(paths):
        raise InputError(
            f"--images {options.images}: none of the {len(paths)} files is an image PIL "
            f"reads (e.g. {skipped[0]['file']}: {skipped[0]['why']})"
        )
    return summary(options, len(paths), skipped)


def main(argv: list[str] | None = None) -> int:
    return cli(argv, run, FEATURES)


if __name__ == "__main__":
    sys.exit(main())
