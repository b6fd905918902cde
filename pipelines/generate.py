"""Generates an MC-IC dataset (Ding et al. 2016, Algorithm 1) with Apache Beam.

For every caption (the target) of every image: take its N nearest captions of
other images by PV cosine, score them by Score = lambda*simPV + (1-lambda)*simSURF
(0 when simSURF >= L), keep the 4 best as decoys, shuffle, write.

Locally (DirectRunner)::

    python -m pipelines.generate --input 'annotations/captions_*2014.json' \\
        --output out/mcic-coco --direct_num_workers 2 --direct_running_mode multi_processing

On Dataflow::

    python -m pipelines.generate --input 'gs://BUCKET/coco/captions_*2014.json' \\
        --output gs://BUCKET/mcic-coco --runner DataflowRunner --project PROJECT \\
        --region REGION --temp_location gs://BUCKET/tmp --setup_file ./setup.py
"""

import logging
import sys

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.utils.shared import Shared

from pipelines.manifest import build_manifest
from pipelines.options import GenerateOptions, parse_options
from schemas.records import SKIPPED
from transforms.corpus import TrainParagraphVectors
from transforms.decoys import ChooseDecoys
from transforms.errors import input_error_message
from transforms.instances import BuildInstances
from transforms.neighbours import FindNeighbourhoods, SharedCorpus
from transforms.normalize import NormalizeCaptions
from transforms.read import ReadCaptions, expand_inputs
from transforms.split import AssignSplits
from transforms.statistics import (
    WriteSkips,
    compute_statistics,
    read_written,
    table_one,
    write_json,
)
from transforms.write import WriteInstances

STATISTICS_FILE = "statistics.json"
MANIFEST_FILE = "manifest.json"


def build_pipeline(pipeline: beam.Pipeline, options: GenerateOptions, inputs: list[str]) -> None:
    """Algorithm 1's main loop as a graph; ``pipeline`` may be a TestPipeline."""
    corpus_copy = SharedCorpus(Shared(), options.decoy_pool, options.index_config())
    raw = pipeline | "ReadCaptions" >> ReadCaptions(inputs)
    normalized = raw | "NormalizeCaptions" >> NormalizeCaptions()
    captions = normalized["captions"] | "AssignSplits" >> AssignSplits(
        seed=options.seed, n_dev=options.n_dev, n_test=options.n_test
    )
    corpus = captions | "TrainParagraphVectors" >> TrainParagraphVectors(
        pv=options.pv_config(),
        neighbours=options.neighbours,
        decoy_pool=options.decoy_pool,
        output=options.output,
    )
    neighbourhoods = corpus | "FindNeighbourhoods" >> FindNeighbourhoods(
        corpus=corpus_copy,
        neighbours=options.neighbours,
        shard_size=options.shard_size,
        batch_size=options.batch_size,
    )
    decoys = neighbourhoods | "ChooseDecoys" >> ChooseDecoys(
        corpus=corpus_copy, lam=options.score_lambda, limit=options.surf_limit
    )
    instances = decoys["selections"] | "BuildInstances" >> BuildInstances(seed=options.seed)
    _ = instances | "WriteInstances" >> WriteInstances(
        output=options.output, num_shards=options.output_shards
    )
    skips = (normalized[SKIPPED], decoys[SKIPPED]) | "Skips" >> beam.Flatten()
    _ = skips | "WriteSkips" >> WriteSkips(output=options.output)


def local_or_given_runner(beam_args: list[str]) -> beam.Pipeline:
    """The runner named by ``--runner``, else Beam's in-process FnApiRunner.

    Beam's DirectRunner first tries to download the Prism runner binary and
    falls back to the FnApiRunner when it cannot; going straight to the
    FnApiRunner keeps local runs offline and on the engine the tests use. It
    honours ``--direct_num_workers`` and ``--direct_running_mode``.
    """
    pipeline_options = PipelineOptions(beam_args)
    if pipeline_options.view_as(StandardOptions).runner:
        return beam.Pipeline(options=pipeline_options)
    return beam.Pipeline(runner=FnApiRunner(), options=pipeline_options)


def counters(result: beam.runners.runner.PipelineResult) -> dict[str, int]:
    """Beam counters of a finished run as {"namespace/name": value}."""
    values = {}
    for counter in result.metrics().query()["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        key = f"{counter.key.metric.namespace}/{counter.key.metric.name}"
        values[key] = values.get(key, 0) + value
    return dict(sorted(values.items()))


def run(options: GenerateOptions, beam_args: list[str] | None = None) -> dict:
    """Runs the pipeline, then writes the statistics and, last, the manifest."""
    options.validate()
    inputs = expand_inputs(options.input)
    pipeline = local_or_given_runner(beam_args or [])
    build_pipeline(pipeline, options, inputs)
    result = pipeline.run()
    result.wait_until_finish()
    statistics = compute_statistics(*read_written(options.output))
    write_json(FileSystems.join(options.output, STATISTICS_FILE), statistics)
    manifest = build_manifest(options, inputs, beam_args or [], statistics, counters(result))
    write_json(FileSystems.join(options.output, MANIFEST_FILE), manifest)
    return statistics


def main(argv: list[str] | None = None) -> int:
    logging.getLogger().setLevel(logging.INFO)
    options, beam_args = parse_options(argv)
    try:
        statistics = run(options, beam_args)
    except Exception as error:
        message = input_error_message(error)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
    print(table_one(statistics))
    print(f"dataset written to {options.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
