"""Scheduled regeneration: generate only when the inputs or options changed; one log line.

    python -m pipelines.regenerate --input 'gs://BUCKET/coco/captions_*.json' \\
        --output gs://BUCKET/mcic-coco [--train] [generate's options] [Beam's options]

Compares the inputs' checksums and the options with the manifest of the
version ``OUTPUT/latest`` names, runs :mod:`pipelines.generate` when they
differ (which itself finds an already completed version and does nothing),
with ``--train`` evaluates the paper's models on a version not evaluated yet,
and prints one line for a scheduler's log. Exit codes: 0 generated or up to
date, 2 bad input or options, 3 a version written but not published (``--audit_gate
fail`` and a text-only audit off chance), 1 failure.
"""

import sys
import time
import traceback
from datetime import datetime, timezone

from apache_beam.io.filesystems import FileSystems

from pipelines import train
from pipelines.cli import parse_flags
from pipelines.cli.commands import REGENERATE
from pipelines.generate import Generated, run
from pipelines.options import GenerateOptions, RegenerateOptions, TrainOptions
from pipelines.runner import logging_to, one_line_error
from pipelines.store.versions import (
    Version,
    content_options,
    latest_version,
    read_manifest,
)
from pipelines.train import METRICS_FILE
from schemas.layout import EVALUATION_DIRECTORY
from transforms.errors import NotPublished, first_line


def changes(previous: dict | None, current: dict) -> str:
    """What differs between two manifests, in words, for the log line."""
    if previous is None:
        return "first run"
    before = {entry["path"]: entry["sha256"] for entry in previous["inputs"]}
    after = {entry["path"]: entry["sha256"] for entry in current["inputs"]}
    what = [f"new input {path}" for path in sorted(after.keys() - before.keys())]
    what += [f"input gone {path}" for path in sorted(before.keys() - after.keys())]
    what += [
        f"input changed {path}"
        for path in sorted(after.keys() & before.keys())
        if after[path] != before[path]
    ]
    before_options = content_options(previous["options"])
    options = sorted(
        name
        for name, value in content_options(current["options"]).items()
        if before_options.get(name) != value
    )
    if options:
        what.append("options " + ", ".join(options))
    return "; ".join(what) or "no change (--force)"


def latest_move(before: Version | None, after: Version) -> str:
    """What the run did to ``OUTPUT/latest``, in words.

    >>> latest_move(None, Version("b", "out/b", True))
    'latest set to b'
    >>> latest_move(Version("a", "out/a", True), Version("b", "out/b", True))
    'latest moved from a to b'
    """
    if before is None:
        return f"latest set to {after.name}"
    if before.name == after.name:
        return f"latest left at {after.name}"
    return f"latest moved from {before.name} to {after.name}"


def summary_line(
    generated: Generated, latest: Version | None, previous: dict | None, seconds: float
) -> str:
    """``latest``: the version ``OUTPUT/latest`` named before; ``previous``: its manifest."""
    instances = generated.statistics["total"]["instances"]
    moved = latest_move(latest, generated.version)
    if generated.up_to_date:
        return f"up to date: {generated.version.name} ({instances:,} instances), {moved}"
    current = read_manifest(generated.version.directory)
    return (
        f"generated {generated.version.name} in {seconds:.0f}s ({changes(previous, current)}): "
        f"{instances:,} instances, {moved}"
    )


def evaluate(version: str, beam_args: list[str]) -> str:
    """Trains and evaluates on a completed version, once: its metrics file is the record."""
    output = FileSystems.join(version, EVALUATION_DIRECTORY)
    if FileSystems.exists(FileSystems.join(output, METRICS_FILE)):
        return f"; evaluated before, in {output}"
    train.run(TrainOptions(dataset=version, output=output), beam_args)
    return f"; evaluated into {output}"


def regenerate(
    options: GenerateOptions, regenerate_options: RegenerateOptions, beam_args: list[str]
) -> str:
    latest = latest_version(options.output)
    previous = read_manifest(latest.directory) if latest and latest.complete else None
    started = time.monotonic()
    generated = run(options, beam_args)
    line = summary_line(generated, latest, previous, time.monotonic() - started)
    if regenerate_options.train:
        line += evaluate(generated.version.directory, beam_args)
    return line


def main(argv: list[str] | None = None) -> int:
    """Always exactly one line on stdout: ``<UTC time> regenerate <output>: <what happened>``.

    A failure (exit code 1) also prints its traceback on stderr.
    """
    time_now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        (regenerate_options, options, log), beam_args = parse_flags(argv, command=REGENERATE)
    except Exception as error:
        print(f"{time_now} regenerate: {one_line_error(error)}")
        return 2
    prefix = f"{time_now} regenerate {options.output}"
    try:
        with logging_to(log):
            line, code = regenerate(options, regenerate_options, beam_args), 0
    except NotPublished as error:
        line, code = f"NOT PUBLISHED: {error}", NotPublished.EXIT_CODE
    except Exception as error:
        line, code = one_line_error(error), 2
        if line is None:
            traceback.print_exc()
            line, code = f"FAILED: {type(error).__name__}: {first_line(error)}", 1
    print(f"{prefix}: {line}")
    return code


if __name__ == "__main__":
    sys.exit(main())
