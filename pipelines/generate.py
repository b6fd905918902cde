"""Generates a caption-choice dataset (Ding et al. 2016's MC-IC and its relatives) with Beam.

Reads and splits the captions, trains paragraph vectors (PV) and finds each target's
neighbourhood, and lets the decoy strategy (``--decoys``) choose each target's decoys
among candidates that pass the validity rules: by default closed sets, where every option
is the target of its own instance so that no option is told by the text alone; with
``--decoys mcic`` the paper's Algorithm 1 (the 4 neighbours of best Score = lambda*simPV +
(1-lambda)*simSURF). Then instances are built, shuffled and written, with every skipped
caption counted, and the written version audits itself with text-only models.

Locally (DirectRunner)::

    python -m pipelines.generate --input 'annotations/captions_*2014.json' \\
        --output out/mcic-coco --direct_num_workers 2 --direct_running_mode multi_processing

On Dataflow::

    python -m pipelines.generate --input 'gs://BUCKET/coco/captions_*2014.json' \\
        --output gs://BUCKET/mcic-coco --runner DataflowRunner --project PROJECT \\
        --region REGION --temp_location gs://BUCKET/tmp --setup_file ./setup.py
"""

import dataclasses
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.cli.commands import GENERATE
from pipelines.optimize import run_search
from pipelines.options import GenerateOptions
from pipelines.runner import cli, local_or_given_runner, run_to_completion, worker_threads
from pipelines.store.claims import Fence
from pipelines.store.lifecycle import (
    DRIVER,
    Produced,
    driver_metrics,
    latest_card,
    not_published,
    write_version,
)
from pipelines.store.manifest import build_manifest, file_checksum, read_inputs
from pipelines.store.versions import (
    Version,
    check_output,
    plan_version,
    point_latest,
    verify_version,
    version_name,
)
from schemas.layout import (
    ADVERSARIAL_FILE,
    FEATURE_SPEC_FILE,
    LATEST_FILE,
    SEARCH_DIRECTORY,
    SEARCH_REPORT_FILE,
    STATISTICS_FILE,
    build_path,
    dataset_path,
)
from schemas.records import SKIPPED
from schemas.tf_example import tfrecord_feature_spec
from transforms.corpus.pv_training import TrainParagraphVectors
from transforms.corpus.read import check_distinct_contents, check_outside, expand_inputs
from transforms.corpus.sentences import EncodeCaptions, model_checksum
from transforms.dataset.instances import BuildInstances
from transforms.dataset.statistics import WriteSkips, table_one
from transforms.dataset.write import WriteInstances, records_written
from transforms.errors import InputError, NotPublished
from transforms.files import check_location, read_json, unfenced, write_json
from transforms.progress import timed
from transforms.search.optimize import report_table
from transforms.strategies.adversarial import AdversarialFilter
from transforms.strategies.registry import STRATEGIES
from transforms.trainer.dataset_audit import held_back
from transforms.trainer.metrics import metrics_table


def build_pipeline(
    pipeline: beam.Pipeline,
    options: GenerateOptions,
    inputs: list[str],
    fence: Callable[[], None] = unfenced,
) -> None:
    """The method's outline as a graph; ``pipeline`` may be a TestPipeline. ``fence``:
    what the writers into the version check first (the version's claim, when held)."""
    prepared = pipeline | "PrepareCaptions" >> options.prepare_captions(inputs)
    threads = worker_threads(pipeline.options)  # each worker's PyTorch and faiss
    config = dataclasses.replace(options.strategy_config(threads), fence=fence)
    strategy = STRATEGIES[options.decoys](config)
    corpus = prepared["captions"] | "TrainParagraphVectors" >> TrainParagraphVectors(
        pv=options.pv_config(),
        pretrained=options.pv_model,
        neighbours=options.neighbours,
        decoy_pool=strategy.config.decoy_pool,
        output=options.output,
        fence=fence,
    )
    encoder = options.encoder_spec()
    if encoder is not None:
        corpus = corpus | "EncodeCaptions" >> EncodeCaptions(encoder, fence, threads)
    decoys = corpus | "ChooseDecoys" >> strategy
    selections = decoys["selections"]
    if options.adversarial_rounds:
        selections = selections | "AdversarialFilter" >> AdversarialFilter(
            corpus=strategy.corpus,
            ref=corpus,
            rounds=options.adversarial_rounds,
            reserve=options.adversarial_reserve,
            seed=options.seed,
            output=build_path(options.output),
        )
    instances = selections | "BuildInstances" >> BuildInstances(seed=options.seed)
    _ = instances | "WriteInstances" >> WriteInstances(
        output=dataset_path(options.output),
        num_shards=options.output_shards,
        num_options=strategy.num_options,
        corpus=corpus,
        fence=fence,
    )
    skips = (prepared[SKIPPED], decoys[SKIPPED]) | "Skips" >> beam.Flatten()
    _ = skips | "WriteSkips" >> WriteSkips(
        output=build_path(options.output), corpus=corpus, fence=fence
    )


def with_search_winners(options: GenerateOptions, report: dict) -> GenerateOptions:
    """The options the search chose; its winning model is reused when it saw the whole corpus."""
    winner = report["optimize_pv"]["winner"]
    return dataclasses.replace(
        options,
        pv_dim=winner["dim"],
        pv_epochs=winner["epochs"],
        score_lambda=report["optimize_score"]["winner"]["lambda"],
        pv_model=winner["model"] if report["evaluation"]["full_corpus"] else "",
    )


@dataclass(frozen=True)
class Generated:
    """What a run produced, or found already produced (``up_to_date``)."""

    version: Version
    statistics: dict
    up_to_date: bool


def input_checksums(options: GenerateOptions, corpus: list[dict]) -> list[dict]:
    """The sha256 of every input file (``corpus``: :func:`read_inputs`'), of ``--image_list``,
    of ``--pv_model``, of the ``--objects`` files and of the validity model's weights: what
    the version is named after."""
    objects = expand_inputs(options.objects) if options.objects else []
    checksums = [*corpus, *(file_checksum(path) for path in objects)]
    check_distinct_contents(checksums)
    if options.image_list:  # there: read_inputs read it
        checksums.append(file_checksum(options.image_list))
    if options.pv_model:
        if not FileSystems.exists(options.pv_model):
            raise InputError(f"--pv_model {options.pv_model}: no such file")
        checksums.append(file_checksum(options.pv_model))
    encoder = options.encoder_spec()
    if encoder is not None:
        checksums.append(model_checksum(encoder, options.language))
    return checksums


def up_to_date(options: GenerateOptions, version: Version) -> Generated:
    """The completed version, made the latest again unless its audit gate holds it back."""
    verify_version(version.directory)
    statistics = read_json(dataset_path(version.directory, STATISTICS_FILE))
    leak = held_back(options.audit_gate, statistics["text_only_audit"])
    if leak is not None:
        raise NotPublished(not_published(version, leak))
    point_latest(options.output, version, latest_card(version))
    return Generated(version, statistics, up_to_date=True)


def run(options: GenerateOptions, beam_args: list[str] | None = None) -> Generated:
    """Generates OUTPUT/versions/<version>/ unless a completed one exists; publishes it last.

    The version is written by :func:`pipelines.store.lifecycle.write_version`, which claims it
    before anything in it is cleared or written; another run holding it stops this one
    with an InputError.
    """
    options.validate()
    beam_args = beam_args or []
    check_location(options.output, "output")
    inputs = expand_inputs(options.input)
    check_outside(inputs, options.output)
    check_output(options.output)
    with timed(DRIVER, "inputs") as reading:  # checksums, the models' too; --language's sample
        corpus, sample = read_inputs(inputs, options.image_list)
        options = options.with_language(sample)
        checksums = input_checksums(options, corpus)
    version = plan_version(options.output, version_name(options, checksums), force=options.force)
    if version.complete:
        return up_to_date(options, version)
    timings = driver_metrics({"inputs": reading})
    produce = partial(generate, options, beam_args, inputs, checksums, timings)
    published = write_version(options.output, version, produce)
    if published is None:  # another run completed it meanwhile
        return up_to_date(options, dataclasses.replace(version, complete=True))
    return Generated(published.version, published.statistics, up_to_date=False)


def generate(
    options: GenerateOptions,
    beam_args: list[str],
    inputs: list[str],
    checksums: list[dict],
    timings: dict[str, int],
    directory: str,
    fence: Fence,
) -> Produced:
    """Writes the claimed, empty version ``directory``: the search, the pipeline's records.
    ``timings``: the driver's own steps so far."""
    options = dataclasses.replace(options, output=directory)
    search = None
    if options.optimize:
        report = run_search(dataclasses.replace(options, output=build_path(directory)), beam_args)
        logging.info("hyper-parameter search:\n%s", report_table(report))
        options = with_search_winners(options, report)
        search = {
            "report": build_path(directory, SEARCH_DIRECTORY, SEARCH_REPORT_FILE),
            "chosen": {
                "pv_dim": options.pv_dim,
                "pv_epochs": options.pv_epochs,
                "score_lambda": options.score_lambda,
                "pv_model": options.pv_model,
            },
        }
    pipeline = local_or_given_runner(beam_args)
    with timed(DRIVER, "build") as building:  # the graph's construction, before any stage
        build_pipeline(pipeline, options, inputs, fence)
    metrics = run_to_completion(pipeline)
    write_json(
        dataset_path(directory, FEATURE_SPEC_FILE),
        tfrecord_feature_spec(STRATEGIES[options.decoys].num_options),
    )
    return Produced(
        records=records_written(metrics),
        counters=metrics,
        manifest=build_manifest(options, checksums, beam_args, search),
        audit=options.audit_config(directory),
        statistics=strategy_sections(options),
        audit_gate=options.audit_gate,
        timings={**timings, **driver_metrics({"build": building})},
    )


def strategy_sections(options: GenerateOptions) -> dict:
    """What statistics.json adds about the decoys: the strategy's report, the adversarial
    filter's (before and after per split, as written)."""
    sections = {}
    report = STRATEGIES[options.decoys].report(options.output)
    if report:
        sections["strategy"] = report
    if options.adversarial_rounds:
        sections["adversarial_filtering"] = read_json(build_path(options.output, ADVERSARIAL_FILE))
    return sections


def summary(generated: Generated, output: str) -> str:
    """The printed outcome; an up-to-date run made its version the latest again, so it
    repeats that version's audit verdict."""
    if generated.up_to_date:
        verdict = generated.statistics["text_only_audit"].get("verdict")
        return (
            f"up to date: {generated.version.directory} already holds these inputs and "
            f"options (--force to generate again); {output}/{LATEST_FILE} names it"
        ) + (f"\n{verdict['line']}" if verdict else "")
    return (
        f"{table_one(generated.statistics)}\n{audit_summary(generated.statistics)}\n"
        f"dataset written to {generated.version.directory}"
    )


def audit_summary(statistics: dict) -> str:
    audit = statistics["text_only_audit"]
    if "verdict" not in audit:
        return f"text-only audit: {audit['skipped']}"
    return f"{metrics_table(audit)}\n{audit['verdict']['line']}"


def main(argv: list[str] | None = None) -> int:
    return cli(
        argv,
        lambda options, beam_args: summary(run(options, beam_args), options.output),
        GENERATE,
    )


if __name__ == "__main__":
    sys.exit(main())
