"""What every pipeline's driver shares: the runner, its counters, its log lines, the CLI's
errors."""

import importlib.metadata
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.portability.api import beam_fn_api_pb2
from apache_beam.runners.portability.fn_api_runner import FnApiRunner, worker_handlers
from google.protobuf import text_format

import pipelines
import schemas
import transforms
from pipelines.cli import Command, parse_flags
from pipelines.options import LogOptions
from pipelines.store.versions import completed_dataset
from transforms.errors import NotPublished, input_error_message
from transforms.files import check_location, check_writable
from transforms.progress import is_progress_line, stage_of
from transforms.report.preview import check_images
from transforms.shutdown import exit_without_collecting
from transforms.threads import child_processes_use, chosen_threads, cores, share_of_cores

DISTRIBUTION = "dmc-datasets"
# --runner values that run the pipeline on this machine (None: our in-process FnApiRunner)
LOCAL_RUNNERS = (None, "DirectRunner", "direct", "SwitchingDirectRunner", "PrismRunner", "prism")


def local_or_given_runner(beam_args: list[str], extra: str = "") -> beam.Pipeline:
    """The runner named by ``--runner``, else Beam's in-process FnApiRunner; workers that
    install the package by ``--setup_file`` also get the command's ``extra``.

    Beam's DirectRunner first tries to download the Prism runner binary and
    falls back to the FnApiRunner when it cannot; going straight to the
    FnApiRunner keeps local runs offline and on the engine the tests use. It
    honours ``--direct_num_workers`` and ``--direct_running_mode``.
    """
    flush_by_size_only()
    pipeline_options = PipelineOptions(
        worker_requirements(beam_args, extra) if extra else beam_args
    )
    if pipeline_options.view_as(StandardOptions).runner:
        return beam.Pipeline(options=pipeline_options)
    return beam.Pipeline(runner=FnApiRunner(), options=pipeline_options)


def worker_requirements(beam_args: list[str], extra: str = "train") -> list[str]:
    """With ``--setup_file`` (workers install the package without extras), a requirements
    file of the ``extra`` (the trainer's: train; dmc-features' and dmc-evaluate's: vision),
    read from the installed package's metadata, that workers install from the package
    index (``--requirements_cache skip``: nothing is downloaded here)."""
    if "--setup_file" not in beam_args or "--requirements_file" in beam_args:
        return beam_args
    requirements = [
        requirement.split(";")[0].strip()
        for requirement in importlib.metadata.requires(DISTRIBUTION) or []
        if f'extra == "{extra}"' in requirement
    ]
    with tempfile.NamedTemporaryFile("w", suffix=f"-{extra}.txt", delete=False) as handle:
        handle.write("\n".join(requirements) + "\n")
    return [*beam_args, "--requirements_file", handle.name, "--requirements_cache", "skip"]


def flush_by_size_only() -> None:
    """Beam's local runner flushes its gRPC data streams every second as well as by size.
    A timed flush clears the buffer after its send returns, dropping whatever was written
    meanwhile: whole chunks of a stage's output vanished between stages, with no error, in
    the multi_threading and multi_processing modes (``benchmarks/runner_loss.py``,
    docs/troubleshooting.md). Flushing by size alone loses nothing and costs a batch run
    nothing. The limit is a module constant, read when the runner starts its data server
    and its in-process workers; subprocess workers flush by size already.
    """
    worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = 0


def run_to_completion(pipeline: beam.Pipeline) -> dict[str, int]:
    """Runs and waits; returns the Beam counters as {"namespace/name": value}.

    Local worker processes each get their share of the cores for their libraries' threads.
    """
    with child_processes_use(share_of_cores(local_worker_processes(pipeline.options))):
        result = pipeline.run()
        result.wait_until_finish()
    values: dict[str, int] = {}
    for counter in result.metrics().query()["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        key = f"{counter.key.metric.namespace}/{counter.key.metric.name}"
        values[key] = values.get(key, 0) + value
    return dict(sorted(values.items()))


def worker_threads(options: PipelineOptions) -> int:
    """Threads each worker process's numerical libraries start: on this machine its share of
    the cores (a user's OMP_NUM_THREADS wins); on a remote runner one, since Dataflow starts
    an SDK process per vCPU and a pool per core in each would oversubscribe them.

    >>> worker_threads(PipelineOptions(["--runner", "DataflowRunner"]))
    1
    """
    if options.view_as(StandardOptions).runner not in LOCAL_RUNNERS:
        return 1
    return chosen_threads(local_worker_processes(options))


def local_worker_processes(options: PipelineOptions) -> int:
    """How many worker processes Beam's local runner starts (``--direct_num_workers`` in the
    ``multi_processing`` mode, 0 meaning one per core); 1 for the rest, which run in this
    process or on other machines.

    >>> local_worker_processes(PipelineOptions(["--direct_num_workers", "2"]))
    1
    >>> local_worker_processes(PipelineOptions(
    ...     ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"]))
    2
    """
    direct = options.view_as(DirectOptions)
    if direct.direct_running_mode != "multi_processing":
        return 1
    return direct.direct_num_workers or cores()


WORKER_LINES = "apache_beam.runners.portability.local_job_service"  # a worker process's lines
FORWARDED = "Worker: "  # ...arrive there as this and the worker's LogEntry as one line of text
OUR_PACKAGES = tuple(
    os.path.join(os.path.realpath(os.path.dirname(package.__file__)), "")
    for package in (pipelines, schemas, transforms)
)
TERMINAL_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def is_ours(pathname: str) -> bool:
    """Whether a record was logged by this project's code, not Beam's or a library's."""
    return os.path.realpath(pathname).startswith(OUR_PACKAGES)


def unwrap_worker_record(record: logging.LogRecord) -> None:
    """Makes a line a worker process forwarded (the ``multi_processing`` mode) the worker's
    own record again: its message, file, line, time and traceback, so it is shown, kept or
    dropped as if it had been logged in this process. Any other record is left as it is."""
    text = record.getMessage()
    if not text.startswith(FORWARDED):
        return
    entry = beam_fn_api_pb2.LogEntry()
    try:
        text_format.Parse(text[len(FORWARDED) :], entry)
    except text_format.ParseError:
        return
    pathname, _, line = entry.log_location.rpartition(":")
    record.name, record.msg, record.args = "worker", entry.message, ()
    record.pathname, record.filename = pathname, os.path.basename(pathname)
    record.lineno = int(line) if line.isdigit() else 0
    record.created = entry.timestamp.seconds + entry.timestamp.nanos / 1e9
    record.msecs = entry.timestamp.nanos // 1_000_000
    record.threadName = entry.thread
    record.exc_text = entry.trace or None


class WorkerRecords(logging.Filter):
    """A filter of the logger a worker process's lines arrive on: see unwrap_worker_record."""

    def filter(self, record: logging.LogRecord) -> bool:
        unwrap_worker_record(record)
        return True


class ShownOnStderr(logging.Filter):
    """Without --verbose: our own lines at ``level`` and above, not Beam's or a library's,
    and no tracebacks (Beam logs a failing stage's before it re-raises; the CLI reports the
    failure itself). With an ``interval`` (a scheduler's log), of the info lines only the
    progress lines, and one of a stage every ``interval`` seconds at most."""

    def __init__(self, level: int, interval: float | None):
        super().__init__()
        self._level, self._interval = level, interval
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < self._level or record.exc_info or record.exc_text:
            return False
        if not is_ours(record.pathname):
            return False
        if self._interval is None or record.levelno > logging.INFO:
            return True
        if not is_progress_line(record.pathname):
            return False
        stage = stage_of(record.getMessage())
        with self._lock:
            last = self._last.get(stage)
            if last is not None and record.created - last < self._interval:
                return False
            self._last[stage] = record.created
        return True


def utc_formatter() -> logging.Formatter:
    """Lines a scheduler or a file keeps: ``2026-11-26T11:16:57.210Z INFO root: ...``."""
    formatter = logging.Formatter(TERMINAL_FORMAT)
    formatter.converter = time.gmtime
    formatter.default_time_format = "%Y-%m-%dT%H:%M:%S"
    formatter.default_msec_format = "%s.%03dZ"
    return formatter


def stderr_handler(log: LogOptions, terminal: bool) -> logging.Handler:
    """Every line with --verbose; errors only with --quiet; else our info lines and warnings
    as they come on a terminal, and off a terminal (a scheduler's log) our warnings and a
    stage's progress at most once every ``--progress_interval`` seconds. One timestamp
    everywhere, UTC: a terminal's lines, a scheduler's and ``--log_file``'s compare as they are."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(utc_formatter())
    if not log.verbose:
        level = logging.ERROR if log.quiet else logging.INFO
        handler.addFilter(ShownOnStderr(level, None if terminal else log.progress_interval))
    return handler


@contextmanager
def logging_to(log: LogOptions) -> Iterator[None]:
    """Log lines go to stderr (see stderr_handler) and all of them to ``--log_file``.

    The stderr handler, even when it shows nothing, keeps Python's last-resort handler
    (which would print Beam's tracebacks) off.
    """
    handlers = [stderr_handler(log, sys.stderr.isatty())]
    if log.log_file:
        handlers.append(logging.FileHandler(log.log_file, encoding="utf-8"))
        handlers[-1].setFormatter(utc_formatter())
    root, workers, unwrap = logging.getLogger(), logging.getLogger(WORKER_LINES), WorkerRecords()
    level = root.level
    root.setLevel(logging.INFO)
    workers.addFilter(unwrap)
    for handler in handlers:
        root.addHandler(handler)
    try:
        yield
    finally:
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        workers.removeFilter(unwrap)
        root.setLevel(level)


def one_line_error(error: BaseException) -> str | None:
    """``error: <message>`` for an input error (exit code 2), None for anything else."""
    message = input_error_message(error)
    return None if message is None else f"error: {message}"


def cli(argv: list[str] | None, run: Callable[[Any, list[str]], str], command: Command) -> int:
    """Parses flags into ``command``'s options (LogOptions last), runs, prints what ``run``
    returns.

    An input error (a bad flag included) is one line on stderr and exit code 2; a version
    its audit gate held back (NotPublished) one line and exit code 3; anything else raises,
    which prints its traceback and exits with 1. Either way the process then exits without
    the final garbage collection (transforms.shutdown).
    """
    exit_without_collecting()
    try:
        (options, log), beam_args = parse_flags(argv, command=command)
        log.validate()
        with logging_to(log):
            summary = run(options, beam_args)
    except NotPublished as error:
        print(f"error: {error}", file=sys.stderr)
        return NotPublished.EXIT_CODE
    except Exception as error:
        line = one_line_error(error)
        if line is None:
            raise
        print(line, file=sys.stderr)
        return 2
    print(summary)
    return 0


def checked_version(options) -> str:
    """The checks of a command that reads a completed version (``--dataset``, ``--images``)
    and writes a folder (``--output``); returns the version's directory."""
    options.validate()
    check_location(options.dataset, "dataset")
    check_location(options.output, "output")
    if options.images:
        check_images(options.images)
    version = completed_dataset(options.dataset)
    check_writable(options.output)
    return version
