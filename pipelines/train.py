"""Trains and evaluates the paper's models on a generated dataset (Ding et al. 2016, Tables 3-5).

Reads a dataset written by ``pipelines.generate``, turns every instance into
vectors (image, options, text-only features), fits Baseline-I2C, -C2I, -LinM,
the FFNN, a text-only FFNN, a bigram language model and Vec2seq+FFNN (one per
--vec2seq_sizes and --lambda_gen value) on train, selected on dev, streaming
minibatches in bounded memory; reports the accuracy of each, and of the
untrained text-only audits, on dev and test against chance 1/k (k options per
instance: 5, 4 or 2), and the CIDEr-D and ROUGE-L of the captions each
Vec2seq+FFNN generates for the dev and test images::

    python -m pipelines.train --dataset out/mcic-coco --output out/train-coco \\
        [--image_features inception.parquet] [--lambda_gen 0,0.1,1,10]

Needs the ``train`` extra (PyTorch, scikit-learn, pycocoevalcap). On Dataflow
(workers get the extra through a requirements file the run writes)::

    python -m pipelines.train --dataset gs://BUCKET/mcic-coco --output gs://BUCKET/train \\
        --runner DataflowRunner --project PROJECT --region REGION \\
        --temp_location gs://BUCKET/tmp --setup_file ./setup.py
"""

import dataclasses
import sys

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils.shared import Shared

from pipelines.cli.commands import TRAIN
from pipelines.options import TrainOptions
from pipelines.runner import cli, local_or_given_runner, run_to_completion
from pipelines.store.versions import completed_dataset, read_manifest
from transforms.corpus.split import SPLITS
from transforms.files import (
    check_location,
    check_writable,
    delete_folder,
    read_json,
    write_file,
    write_json,
)
from transforms.report.plots import accuracy
from transforms.strategies.registry import STRATEGIES
from transforms.trainer.features import (
    BuildExamples,
    ReadInstances,
    SharedFeatureSpace,
    read_num_options,
)
from transforms.trainer.metrics import captioning_table, metrics_table, set_table
from transforms.trainer.registry import require_train_extra, run_fitters
from transforms.trainer.stages import (
    EXAMPLES_DIRECTORY,
    CaptionImages,
    Evaluate,
    FitModels,
    ScoreSets,
    WriteMetrics,
)

METRICS_FILE = "metrics.json"
TABLE_FILE = "table.txt"
ACCURACY_PLOT = "accuracy.png"


def build_pipeline(pipeline: beam.Pipeline, options: TrainOptions, dataset: str) -> None:
    """Read, featurise, fit (one worker, streaming), evaluate and caption (parallel), write
    the metrics."""
    space = SharedFeatureSpace(Shared(), options.feature_config(dataset))
    config = options.train_config()
    num_options = read_num_options(dataset)
    instances = pipeline | "ReadInstances" >> ReadInstances(dataset=dataset, splits=SPLITS)
    examples = instances | "BuildExamples" >> BuildExamples(space=space, num_options=num_options)
    models = examples | "FitModels" >> FitModels(config=config, output=options.output)
    counts = examples | "Evaluate" >> Evaluate(models=models)
    captioning = examples | "CaptionImages" >> CaptionImages(
        models=models, space=space, config=config, output=options.output
    )
    if STRATEGIES[read_manifest(dataset)["options"]["decoys"]].answered_in_sets:
        sets = examples | "ScoreSets" >> ScoreSets(models=models)
    else:
        sets = pipeline | "NoSets" >> beam.Create([])
    _ = counts | "WriteMetrics" >> WriteMetrics(
        models=models,
        captioning=captioning,
        sets=sets,
        order=list(run_fitters(config)),
        path=FileSystems.join(options.output, METRICS_FILE),
        num_options=num_options,
    )


def report(metrics: dict) -> str:
    """Table 3, then Tables 4-5's captioning columns when a model captions, then the set
    score on closed sets."""
    tables = [metrics_table(metrics), captioning_table(metrics), set_table(metrics)]
    return "\n\n".join(table for table in tables if table)


def run(options: TrainOptions, beam_args: list[str] | None = None) -> dict:
    """Runs the trainer; returns the metrics (also in <output>/metrics.json, table.txt and
    accuracy.png)."""
    options.validate()
    require_train_extra()
    check_location(options.output, "output")
    dataset = completed_dataset(options.dataset)  # before the write check creates the output
    check_writable(options.output)
    pipeline = local_or_given_runner(beam_args or [], extra="train")
    build_pipeline(pipeline, options, dataset)
    examples = FileSystems.join(options.output, EXAMPLES_DIRECTORY)
    try:
        counters = run_to_completion(pipeline)
    finally:
        delete_folder(examples)
    path = FileSystems.join(options.output, METRICS_FILE)
    metrics = {
        **read_json(path),
        "dataset": dataset,
        "image_features": options.image_features or "concept",
        "options": dataclasses.asdict(options),
        "counters": counters,
    }
    write_json(path, metrics)
    write_file(FileSystems.join(options.output, TABLE_FILE), report(metrics).encode())
    write_file(FileSystems.join(options.output, ACCURACY_PLOT), accuracy(metrics))
    return metrics


def main(argv: list[str] | None = None) -> int:
    def train(options: TrainOptions, beam_args: list[str]) -> str:
        table = report(run(options, beam_args))
        return f"{table}\nmetrics and models written to {options.output}"

    return cli(argv, train, TRAIN)


if __name__ == "__main__":
    sys.exit(main())
