"""Zero-shot scoring of a generated dataset with a contrastive vision-language model.

Every dev and test instance's image and options are encoded by the model (open_clip or
transformers: CLIP, SigLIP, ...); each option's cosine with the image is its score and
the argmax is the answer. The accuracy per split, with its binomial standard deviation,
is reported beside the text-only rows ``generate`` audited the version with, with the
image margin (accuracy minus the best text-only row's) and, for closed sets, the set
score. Run per strategy on one image set, it compares decoy families as SugarCrepe does::

    python -m pipelines.evaluate --dataset out/mcic-coco --images /data/coco/val2014 \\
        --model ViT-B-32 --pretrained laion2b_s34b_b79k --output out/eval-coco

Needs the ``vision`` extra. On Dataflow (workers get the extra through a requirements
file the run writes, as the trainer's)::

    python -m pipelines.evaluate --dataset gs://BUCKET/mcic-coco --images gs://BUCKET/val2014 \\
        --model ViT-B-32 --pretrained laion2b_s34b_b79k --output gs://BUCKET/eval \\
        --runner DataflowRunner --project PROJECT --region REGION \\
        --temp_location gs://BUCKET/tmp --setup_file ./setup.py
"""

import dataclasses
import sys

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils.shared import Shared

from pipelines.cli.commands import EVALUATE
from pipelines.options import EvaluateOptions
from pipelines.runner import cli, local_or_given_runner, run_to_completion
from pipelines.store.versions import completed_dataset, read_manifest
from schemas.layout import PARQUET, STATISTICS_FILE, dataset_path, shard_pattern
from transforms.errors import InputError
from transforms.files import (
    check_location,
    check_writable,
    list_files,
    read_json,
    read_parquet_files,
    read_parquet_shards,
    remove_shards,
    write_file,
    write_json,
)
from transforms.report.plots import accuracy
from transforms.strategies.registry import STRATEGIES
from transforms.trainer.features import ReadInstances, read_num_options
from transforms.trainer.metrics import EVALUATION_SPLITS
from transforms.vision.evaluation import evaluation_metrics, evaluation_table
from transforms.vision.zero_shot import (
    SCORES,
    UNREADABLE,
    ScoreInstances,
    SharedModel,
    WriteScores,
    problem_kind,
)

VISION = "vision"  # the extra Dataflow workers install (through --requirements_file)
SCORES_FOLDER = "scores.parquet"  # a folder of sorted shards, as Parquet readers take one
METRICS_FILE = "metrics.json"
TABLE_FILE = "table.txt"
ACCURACY_PLOT = "accuracy.png"


def instance_images(dataset: str) -> list[str]:
    """The ``image_file`` of every dev and test instance: the files the scoring will read."""
    return [
        name
        for split in EVALUATION_SPLITS
        for table in read_parquet_files(shard_pattern(dataset, PARQUET, split), ["image_file"])
        for name in table.column(0).to_pylist()
    ]


def present_images(images: str) -> frozenset[str]:
    """The files under the ``--images`` folder, at any depth, named as instances name them:
    by their path relative to it. One listing, not a request per image."""
    folder = images.rstrip("/")
    return frozenset(path[len(folder) + 1 :] for path in list_files(f"{folder}/**"))


def check_images(
    images: str, wanted: list[str], present: frozenset[str], allow_missing: bool
) -> None:
    """Refuses, before the model loads, an ``--images`` folder that holds none of the
    instances' images (missing, empty, or another folder) and, unless ``allow_missing``, one
    that lacks most of them: a wrong folder would give a table of ``-`` or of a few images.

    >>> check_images("imgs", ["a.jpg", "b.jpg", "b.jpg"], frozenset({"a.jpg"}), False)
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: --images imgs: 2 of 3 instances' images are missing \
(e.g. imgs/b.jpg); --allow_missing scores the others
    >>> check_images("imgs", ["a.jpg", "b.jpg", "b.jpg"], frozenset({"a.jpg"}), True)
    """
    if not present:
        raise InputError(f"--images {images}: no files match (a missing or empty folder)")
    missing = [name for name in wanted if name not in present]
    if not missing:
        return
    example = FileSystems.join(images, missing[0])
    if len(missing) == len(wanted):
        raise InputError(
            f"--images {images}: none of the {len(wanted)} instances' images is there "
            f"(e.g. {example})"
        )
    if 2 * len(missing) > len(wanted) and not allow_missing:
        raise InputError(
            f"--images {images}: {len(missing)} of {len(wanted)} instances' images are missing "
            f"(e.g. {example}); --allow_missing scores the others"
        )


def check_scored(scores: pa.Table, images: str) -> None:
    """Refuses a run whose images were all unreadable, as dmc-features refuses files none
    of which PIL reads: a table without a model row is no evaluation. The example is an
    unreadable one where there is one (with --allow_missing, others may be missing)."""
    rows = scores.to_pylist()
    if rows and not any(row["image_found"] for row in rows):
        unreadable = (row for row in rows if problem_kind(row["image_problem"]) == UNREADABLE)
        first = next(unreadable, rows[0])
        raise InputError(
            f"--images {images}: no instance's image could be scored (e.g. "
            f"{FileSystems.join(images, first['image_file'])}: {first['image_problem']})"
        )


def build_pipeline(
    pipeline: beam.Pipeline, options: EvaluateOptions, dataset: str, total: int
) -> None:
    """Read dev and test (``total`` instances), score every instance (the model once per
    worker), write the scores."""
    model = SharedModel(Shared(), options.model_spec())
    score = ScoreInstances(
        model=model, images=options.images, batch_size=options.batch_size, total=total
    )
    _ = (
        pipeline
        | "ReadInstances" >> ReadInstances(dataset=dataset, splits=EVALUATION_SPLITS)
        | "Score" >> score
        | "WriteScores"
        >> WriteScores(folder=FileSystems.join(options.output, SCORES_FOLDER), total=total)
    )


def run(options: EvaluateOptions, beam_args: list[str] | None = None) -> dict:
    """Runs the evaluation; returns the metrics (also in <output>/metrics.json, table.txt and
    accuracy.png, beside the per-instance scores.parquet)."""
    options.validate()
    check_location(options.output, "output")
    dataset = completed_dataset(options.dataset)  # before the write check creates the output
    wanted, present = instance_images(dataset), present_images(options.images)
    check_images(options.images, wanted, present, options.allow_missing)
    check_writable(options.output)
    remove_shards(FileSystems.join(options.output, SCORES_FOLDER), SCORES, ".parquet")
    strategy = read_manifest(dataset)["options"]["decoys"]
    audit = read_json(dataset_path(dataset, STATISTICS_FILE)).get("text_only_audit", {})
    pipeline = local_or_given_runner(beam_args or [], extra=VISION)
    build_pipeline(pipeline, options, dataset, len(wanted))
    counters = run_to_completion(pipeline)
    scores = read_parquet_shards(FileSystems.join(options.output, SCORES_FOLDER), SCORES)
    check_scored(scores, options.images)
    metrics = {
        **evaluation_metrics(
            scores,
            name=options.model_name(),
            audit=audit,
            strategy=strategy,
            num_options=read_num_options(dataset),
            sets=STRATEGIES[strategy].answered_in_sets,
        ),
        "dataset": dataset,
        "options": dataclasses.asdict(options),
        "counters": counters,
    }
    write_json(FileSystems.join(options.output, METRICS_FILE), metrics)
    table = evaluation_table(metrics)
    write_file(FileSystems.join(options.output, TABLE_FILE), table.encode())
    write_file(FileSystems.join(options.output, ACCURACY_PLOT), accuracy(metrics))
    return metrics


def main(argv: list[str] | None = None) -> int:
    def evaluate(options: EvaluateOptions, beam_args: list[str]) -> str:
        table = evaluation_table(run(options, beam_args))
        return f"{table}\nscores and metrics written to {options.output}"

    return cli(argv, evaluate, EVALUATE)


if __name__ == "__main__":
    sys.exit(main())
