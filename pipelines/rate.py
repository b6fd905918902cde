"""Human evaluation of a generated dataset: the paper's Table 2, and human-filtered subsets.

::

    python -m pipelines.rate export --dataset out/coco --output out/rate-job [--images val2017/]
    python -m pipelines.rate import --job out/rate-job --answers 'answers/*.json,batch.csv'
    python -m pipelines.rate filter --ratings out/coco/versions/<v>/ratings/<job> \\
        --output out/coco-human

``export`` samples a completed version's instances (Ding et al. 2016, section 3.4:
1,000 dev instances, three raters each, trained first on train instances with the
target shown) and writes the job: the rating app (``transforms/report/rating_app.py``),
a crowd platform's bulk-upload CSV and the answer key. ``import`` reads the answers of
either, checks them (``transforms/report/ratings.py``) and writes Table 2 and the
per-instance results next to the version (``<version>/ratings/<job>/``, which the
version's manifest leaves out). ``filter`` writes a new completed version holding the
rated instances enough raters got right (Visual Madlibs' rule) and the other splits as
they were; its manifest names the ratings. No Beam pipeline runs: a few whole-file reads
and writes through Beam's filesystems, so gs:// paths work.
"""

import csv
import dataclasses
import hashlib
import io
import json
import os
import sys
from collections.abc import Iterable
from functools import partial

from apache_beam.io.filesystems import FileSystems

from pipelines.cli.commands import RATE, RATE_USAGE, rate_overview
from pipelines.options import (
    GenerateOptions,
    RateExportOptions,
    RateFilterOptions,
    RateImportOptions,
)
from pipelines.runner import checked_version, cli
from pipelines.store.claims import Fence
from pipelines.store.lifecycle import Produced, write_version
from pipelines.store.versions import (
    Version,
    check_output,
    completed_dataset,
    fingerprint,
    is_complete,
    read_manifest,
    verify_version,
)
from schemas.layout import (
    DATASET,
    PARQUET,
    RATINGS_DIRECTORY,
    VERSIONS_DIRECTORY,
    dataset_path,
    shard_pattern,
)
from schemas.options import renamed_options
from transforms.dataset.write import instance_formats, records_written, shard_path
from transforms.errors import InputError
from transforms.files import (
    check_location,
    check_writable,
    list_files,
    parse_json,
    read_file,
    read_json,
    read_parquet_files,
    write_file,
    write_json,
)
from transforms.report.preview import copy_images, image_source, sampled_split
from transforms.report.rating_app import render_app
from transforms.report.ratings import (
    GOLD,
    MALFORMED,
    RATED,
    TOO_FAST,
    TRAINING,
    Answer,
    Item,
    check_answers,
    failed_gold,
    filter_card_section,
    gold_scores,
    instance_results,
    kept_instances,
    read_answers,
    table_text,
    table_two,
)
from transforms.seeds import keyed_int, keyed_rng
from transforms.strategies.registry import STRATEGIES

JOB_FILE = "job.json"
JOB_KEYS = ("job", "dataset", "version", "split", "raters", "items")  # what import reads
APP_DIRECTORY = "app"
APP_FILE = "index.html"
CROWD_FILE = "crowd.csv"
REPORT_FILE = "report.json"
RESULTS_FILE = "results.jsonl"
TABLE_FILE = "table.txt"
ANSWERS_FILE = "answers.csv"
EXAMPLES = 5  # examples of each skip reason kept in the report
FAILED_GOLD = "failed_gold"


def version_name(directory: str) -> str:
    return directory.rstrip("/").rsplit("/", 1)[-1]


def job_name(version: str, split: str, instances: int, seed: int) -> str:
    """
    >>> job_name("b798d7187659", "dev", 1000, 0)
    'b798d7187659-dev-1000-seed0'
    """
    return f"{version}-{split}-{instances}-seed{seed}"


def key_item(instance: dict, kind: str) -> dict:
    """What the answer key keeps of an instance."""
    return {
        "example_id": instance["example_id"],
        "kind": kind,
        "options": instance["options"],
        "label": instance["label"],
        "image_file": instance["image_file"],
        "image_url": instance["image_url"],
    }


def app_item(item: dict, copied: set[str], *, with_label: bool) -> dict:
    """What the app shows of an item: the label only for training items."""
    image = image_source(item, copied)
    shown = {
        "example_id": item["example_id"],
        "image_file": item["image_file"],
        "image": {"kind": image.kind, "src": image.src},
        "options": item["options"],
    }
    return {**shown, "label": item["label"]} if with_label else shown


def question_order(items: list[dict], seed: int) -> list[dict]:
    """Rated and gold items mixed in a seeded order, as crowd.csv lists them."""
    return sorted(items, key=lambda item: (keyed_int(seed, item["example_id"]), item["example_id"]))


def csv_bytes(rows: Iterable[list]) -> bytes:
    """UTF-8 CSV with CRLF line ends (RFC 4180). The csv module quotes a field holding a
    character of its line terminator, so with CRLF a field holding a lone CR or LF is quoted
    too; with "\\n" alone, a CR would be written bare and end the record for every reader."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue().encode("utf-8")


def crowd_csv(questions: list[dict], seed: int, image_base_url: str) -> tuple[bytes, int]:
    """(crowd.csv, rows without an image address): one row per question, its options as
    columns in a seeded order, each beside its index in the dataset's order, which is what
    the form's answer (``option``) must be."""
    width = max(len(item["options"]) for item in questions)
    header = ["example_id", "image_url", "num_options"]
    header += [f"option_{i}" for i in range(1, width + 1)]
    header += [f"option_{i}_index" for i in range(1, width + 1)]
    rows, no_image = [header], 0
    for item in questions:
        url = image_base_url + item["image_file"] if image_base_url else item["image_url"]
        no_image += not url
        order = keyed_rng(seed, f"crowd:{item['example_id']}").permutation(len(item["options"]))
        blanks = [""] * (width - len(order))
        rows.append(
            [item["example_id"], url, len(order)]
            + [item["options"][i] for i in order]
            + blanks
            + [int(i) for i in order]
            + blanks
        )
    return csv_bytes(rows), no_image


def export(options: RateExportOptions) -> str:
    """Writes the job's folder; returns what to print."""
    version = checked_version(options)
    available, rated = sampled_split(version, options.split, options.instances, options.seed)
    _, from_train = sampled_split(version, "train", options.training + options.gold, options.seed)
    if len(from_train) < options.training + options.gold:
        raise InputError(
            f"{version}: train has {len(from_train)} instances, fewer than --training "
            f"{options.training} + --gold {options.gold}"
        )
    items = [
        *(key_item(row, TRAINING) for row in from_train[: options.training]),
        *(key_item(row, GOLD) for row in from_train[options.training :]),
        *(key_item(row, RATED) for row in rated),
    ]
    name = job_name(version_name(version), options.split, len(rated), options.seed)
    app = FileSystems.join(options.output, APP_DIRECTORY)
    copied = copy_images(items, options.images, app) if options.images else set()
    training = [item for item in items if item["kind"] == TRAINING]
    questions = question_order([item for item in items if item["kind"] != TRAINING], options.seed)
    page = render_app(
        {
            "job": name,
            "seed": options.seed,
            "title": f"Which caption fits the image? ({name})",
            "training": [app_item(item, copied, with_label=True) for item in training],
            "questions": [app_item(item, copied, with_label=False) for item in questions],
        }
    )
    write_file(FileSystems.join(app, APP_FILE), page.encode("utf-8"))
    crowd, no_image = crowd_csv(questions, options.seed, options.image_base_url)
    write_file(FileSystems.join(options.output, CROWD_FILE), crowd)
    job = {
        "job": name,
        "version": version_name(version),
        # absolute, so the import finds the version from any working directory
        "dataset": version if FileSystems.get_scheme(version) else os.path.abspath(version),
        "split": options.split,
        "split_instances": available,
        "raters": options.raters,
        "seed": options.seed,
        "items": items,
    }
    write_json(FileSystems.join(options.output, JOB_FILE), job)
    lines = [
        f"job {name}: {len(rated):,} of {available:,} {options.split} instances"
        f"{' (all of them)' if len(rated) < options.instances else ''}, {options.raters} raters "
        f"each, {options.training} training and {options.gold} gold items from train",
        f"rating app: {FileSystems.join(app, APP_FILE)} ({len(copied):,} images copied)",
        f"crowd upload: {FileSystems.join(options.output, CROWD_FILE)} "
        f"({len(questions):,} rows, {no_image:,} without an image address)",
        f"answer key (keep it): {FileSystems.join(options.output, JOB_FILE)}",
    ]
    return "\n".join(lines)


def read_job(folder: str) -> dict:
    path = FileSystems.join(folder, JOB_FILE)
    if not FileSystems.exists(path):
        raise InputError(f"{path}: no such file; --job takes the folder dmc-rate export wrote")
    job = read_json(path, dict, "the answer key dmc-rate export writes")
    try:
        missing = [key for key in JOB_KEYS if key not in job]
        if missing:
            raise KeyError(", ".join(missing))
        job_items(job)
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(
            f"{path}: not the answer key dmc-rate export writes (no or malformed {error}); "
            "export the job again"
        ) from None
    return job


def job_items(job: dict) -> dict[str, Item]:
    if not isinstance(job["items"], list):
        raise TypeError("items: not a list")
    return {
        item["example_id"]: Item(
            item["example_id"], item["kind"], tuple(item["options"]), int(item["label"])
        )
        for item in job["items"]
    }


def answer_files(patterns: str) -> list[str]:
    """Every file the comma-separated paths or globs name, in the order given."""
    paths = []
    for pattern in filter(None, (part.strip() for part in patterns.split(","))):
        found = list_files(pattern)
        if not found:
            raise InputError(f"--answers {pattern}: no such file")
        for path in found:
            if path in paths:
                raise InputError(
                    f"--answers: {path} is named twice (again by {pattern}); name each file once"
                )
            paths.append(path)
    if not paths:
        raise InputError("--answers is empty: give the answers files")
    return paths


def answers_csv(answers: list[Answer]) -> bytes:
    header = ["rater", "example_id", "option", "seconds", "source"]
    rows = [[a.rater, a.example_id, a.option, a.seconds, a.where] for a in answers]
    return csv_bytes([header, *rows])


def read_answer_files(paths: list[str], job: str) -> tuple[list[Answer], list[str], list[dict]]:
    """(answers, malformed rows, each file's path, checksum and counts), in the order given."""
    answers, malformed, files = [], [], []
    for path in paths:
        data = read_file(path)
        read, bad = read_answers(path, data, job)
        answers += read
        malformed += bad
        files.append(
            {"path": path, **fingerprint(data), "answers": len(read), "malformed": len(bad)}
        )
    return answers, malformed, files


def _examples(values: list[str]) -> dict:
    return {"count": len(values), "examples": values[:EXAMPLES]}


def import_answers(options: RateImportOptions) -> str:
    """Checks the answers, writes the report and the per-instance results; returns what to print."""
    options.validate()
    check_location(options.job, "job")
    job = read_job(options.job)
    items = job_items(job)
    version = completed_dataset(job["dataset"])
    answers, malformed, files = read_answer_files(answer_files(options.answers), job["job"])
    checked = check_answers(
        answers, items, min_seconds=options.min_seconds, drop_too_fast=options.drop_too_fast
    )
    gold = gold_scores(checked.answers, items)
    failed = failed_gold(gold, options.gold_pass)
    counted = checked.answers
    if options.drop_failed_raters:
        counted = [answer for answer in counted if answer.rater not in failed]
        for answer in checked.answers:
            if answer.rater in failed:
                checked.skip(
                    FAILED_GOLD, f"{answer.where}: rater {answer.rater} failed the gold items"
                )
    results = instance_results(counted, items)
    table = table_two(results, job["raters"])
    title = (
        f"Human performance on {job['split']} of {job['version']} (the paper's Table 2; "
        f"accuracy in % +- one binomial standard deviation)"
    )
    text = table_text(table, title)
    skipped = {reason: _examples(values) for reason, values in sorted(checked.skipped.items())}
    if malformed:
        skipped[MALFORMED] = _examples(malformed)
    too_fast = [
        f"{a.where}: rater {a.rater}, {a.example_id}: {a.seconds}s" for a in checked.too_fast
    ]
    report = {
        "job": job["job"],
        "version": job["version"],
        "dataset": version,
        "split": job["split"],
        "raters": job["raters"],
        "options": dataclasses.asdict(options),
        "files": files,
        "rows": len(answers) + len(malformed),
        "counted": len(counted),
        "skipped": skipped,
        TOO_FAST: {**_examples(too_fast), "dropped": options.drop_too_fast},
        "gold": {rater: {"right": right, "answered": n} for rater, (right, n) in gold.items()},
        "failed_gold": failed,
        "table": table,
    }
    output = options.output or FileSystems.join(version, RATINGS_DIRECTORY, job["job"])
    check_writable(output)
    results_lines = "".join(json.dumps(result, sort_keys=True) + "\n" for result in results)
    write_file(FileSystems.join(output, RESULTS_FILE), results_lines.encode("utf-8"))
    write_file(FileSystems.join(output, ANSWERS_FILE), answers_csv(counted))
    write_file(FileSystems.join(output, TABLE_FILE), f"{text}\n".encode())
    write_json(FileSystems.join(output, REPORT_FILE), report)
    return f"{text}\n\n{accounting(report)}\nreport and per-instance results written to {output}"


def accounting(report: dict) -> str:
    """Where every answer row went, in a few lines."""
    lines = [f"{report['rows']:,} answer rows read, {report['counted']:,} counted"]
    for reason, entry in report["skipped"].items():
        lines.append(f"  left out, {reason}: {entry['count']:,} (e.g. {entry['examples'][0]})")
    fast = report[TOO_FAST]
    if fast["count"]:
        verb = "left out" if fast["dropped"] else "flagged, counted"
        lines.append(
            f"  {verb}, faster than {report['options']['min_seconds']}s: {fast['count']:,} "
            f"(e.g. {fast['examples'][0]})"
        )
    for rater in report["failed_gold"]:
        score = report["gold"][rater]
        lines.append(
            f"  rater {rater} failed the gold items: {score['right']} of {score['answered']} right"
        )
    return "\n".join(lines)


def subset_name(source: str, ratings: dict[str, str], min_right: int) -> str:
    """``<source>-human-<12 hex digits>`` from the source, the ratings' checksums and the rule."""
    content = json.dumps(
        {"source": source, "ratings": ratings, "min_right": min_right}, sort_keys=True
    )
    return f"{source}-human-{hashlib.sha256(content.encode()).hexdigest()[:12]}"


def split_rows(version: str, split: str) -> list[dict]:
    return [
        row
        for table in read_parquet_files(shard_pattern(version, PARQUET, split))
        for row in table.to_pylist()
    ]


def write_subset(
    directory: str, source: str, manifest: dict, split: str, kept: list[dict], fence: Fence
) -> dict[str, int]:
    """Copies the files the source version's ``manifest`` lists but the rated split's shards,
    writes that split's kept instances as one shard per format; returns the records written
    per shard name (the others' as the source's run wrote them)."""
    fence()
    formats = instance_formats(split, STRATEGIES[manifest["options"]["decoys"]].num_options)
    shard_prefixes = tuple(f"{DATASET}/{form.directory}/" for form in formats)
    for entry in manifest["files"]:
        if not entry["path"].startswith(shard_prefixes):
            path = entry["path"]
            write_file(FileSystems.join(directory, path), read_file(FileSystems.join(source, path)))
    rows = sorted(kept, key=lambda row: row["example_id"])
    for form in formats:
        write_file(shard_path(dataset_path(directory), form, split, 0, 1), form.encode(rows))
    return {**records_written(manifest["metrics"]), split: len(rows)}


def subset(
    directory: str, fence: Fence, *, source: str, kept: list[dict], human_filter: dict
) -> Produced:
    """Writes the claimed, empty version ``directory``: the subset, described as its source
    (options, inputs, the counters of the run that wrote its records) and its filter."""
    manifest = read_manifest(source)
    records = write_subset(directory, source, manifest, human_filter["split"], kept, fence)
    manifest = {key: value for key, value in manifest.items() if key != "files"}
    return Produced(
        records=records,
        counters=manifest["metrics"],
        manifest={**manifest, "human_filter": human_filter},
        audit=GenerateOptions(**renamed_options(GenerateOptions, manifest["options"])).audit_config(
            directory
        ),
        card=filter_card_section(human_filter),
        marker={"human_filter": human_filter},
        every_caption=False,  # the rated split keeps only what enough raters got right
    )


def filter_version(options: RateFilterOptions) -> str:
    """Writes the human-filtered subset as a completed version; returns what to print."""
    options.validate()
    check_location(options.ratings, "ratings")
    check_location(options.output, "output")
    report_path = FileSystems.join(options.ratings, REPORT_FILE)
    if not FileSystems.exists(report_path):
        raise InputError(
            f"{report_path}: no such file; --ratings takes the folder dmc-rate import wrote"
        )
    results_path = FileSystems.join(options.ratings, RESULTS_FILE)
    report_data, results_data = read_file(report_path), read_file(results_path)
    report = parse_json(report_path, report_data)
    results = [
        parse_json(f"{results_path}: line {number}", line)
        for number, line in enumerate(results_data.decode("utf-8").split("\n"), 1)
        if line
    ]
    raters, split, source = report["raters"], report["split"], report["dataset"]
    if options.min_right > raters:
        raise InputError(f"--min_right {options.min_right}: the job had {raters} raters")
    verify_version(source)
    checksums = {
        REPORT_FILE: fingerprint(report_data)["sha256"],
        RESULTS_FILE: fingerprint(results_data)["sha256"],
    }
    name = subset_name(report["version"], checksums, options.min_right)
    directory = FileSystems.join(options.output, VERSIONS_DIRECTORY, name)
    up_to_date = f"up to date: {directory} already holds this subset"
    if is_complete(directory):
        verify_version(directory)
        return up_to_date
    check_output(options.output)
    keep = set(kept_instances(results, raters, options.min_right))
    rows = split_rows(source, split)
    kept = [row for row in rows if row["example_id"] in keep]
    fully_rated = sum(result["answers"] == raters for result in results)
    human_filter = {
        "source": report["version"],
        "source_directory": source,
        "ratings": options.ratings,
        "ratings_sha256": checksums,
        "job": report["job"],
        "split": split,
        "raters": raters,
        "min_right": options.min_right,
        "split_instances": len(rows),
        "rated": len(results),
        "fully_rated": fully_rated,
        "kept": len(kept),
        "dropped_too_few_right": fully_rated - len(kept),
        "dropped_not_fully_rated": len(results) - fully_rated,
    }
    version = Version(name, directory, complete=False)
    produce = partial(subset, source=source, kept=kept, human_filter=human_filter)
    if write_version(options.output, version, produce) is None:  # completed meanwhile
        verify_version(directory)
        return up_to_date
    return (
        f"human-filtered subset written to {directory}: {len(kept):,} of {fully_rated:,} fully "
        f"rated {split} instances kept (at least {options.min_right} of {raters} raters right; "
        f"{len(results) - fully_rated:,} not fully rated, "
        f"{human_filter['split_instances'] - len(results):,} not rated, left out); the other "
        "splits as in the source"
    )


RUNS = {"export": export, "import": import_answers, "filter": filter_version}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"]):
        print(rate_overview())
        sys.exit(0)  # as argparse's --help does
    if not argv or argv[0] not in RATE:
        got = f"unknown command {argv[0]!r}" if argv else "no command"
        print(f"error: {got}; {RATE_USAGE}", file=sys.stderr)
        return 2
    run = RUNS[argv[0]]
    return cli(argv[1:], lambda options, _: run(options), RATE[argv[0]])


if __name__ == "__main__":
    sys.exit(main())
