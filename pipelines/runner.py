"""What every pipeline's driver shares: the runner, its counters, the CLI's errors."""

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner, worker_handlers

from pipelines.cli import Command, parse_flags
from pipelines.options import GenerateOptions, LogOptions
from transforms.errors import NotPublished, input_error_message


def local_or_given_runner(beam_args: list[str]) -> beam.Pipeline:
    """The runner named by ``--runner``, else Beam's in-process FnApiRunner.

    Beam's DirectRunner first tries to download the Prism runner binary and
    falls back to the FnApiRunner when it cannot; going straight to the
    FnApiRunner keeps local runs offline and on the engine the tests use. It
    honours ``--direct_num_workers`` and ``--direct_running_mode``.
    """
    flush_by_size_only()
    pipeline_options = PipelineOptions(beam_args)
    if pipeline_options.view_as(StandardOptions).runner:
        return beam.Pipeline(options=pipeline_options)
    return beam.Pipeline(runner=FnApiRunner(), options=pipeline_options)


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
    """Runs and waits; returns the Beam counters as {"namespace/name": value}."""
    result = pipeline.run()
    result.wait_until_finish()
    values: dict[str, int] = {}
    for counter in result.metrics().query()["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        key = f"{counter.key.metric.namespace}/{counter.key.metric.name}"
        values[key] = values.get(key, 0) + value
    return dict(sorted(values.items()))


class _ProgressOnly(logging.Filter):
    """Our progress lines and anyone's warnings; no tracebacks and no third-party chatter.

    Beam logs a failing stage's traceback at ERROR level before it re-raises; the
    CLI reports that failure itself (one line for an input error, the traceback
    otherwise), so on a terminal it would only be printed twice.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info or (record.levelno >= logging.ERROR and record.name != "root"):
            return False
        return record.name == "root" or record.levelno >= logging.WARNING


@contextmanager
def logging_to(log: LogOptions) -> Iterator[None]:
    """Log lines go to ``--log_file``; to stderr all of them with ``--verbose``, else
    progress and warnings when stderr is a terminal (as progress bars do), else none.

    So a script or scheduler sees nothing on stderr but an error. The NullHandler
    keeps Python's last-resort handler, which would print Beam's tracebacks, off.
    """
    handlers: list[logging.Handler] = [logging.NullHandler()]
    if log.verbose or sys.stderr.isatty():
        handlers.append(logging.StreamHandler(sys.stderr))
        if not log.verbose:
            handlers[-1].addFilter(_ProgressOnly())
    if log.log_file:
        handlers.append(logging.FileHandler(log.log_file, encoding="utf-8"))
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    try:
        yield
    finally:
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)


def one_line_error(error: BaseException) -> str | None:
    """``error: <message>`` for an input error (exit code 2), None for anything else."""
    message = input_error_message(error)
    return None if message is None else f"error: {message}"


def cli(
    argv: list[str] | None,
    run: Callable[[Any, list[str]], str],
    options_type: type = GenerateOptions,
    *,
    command: Command,
) -> int:
    """Parses flags into ``options_type``, runs, prints what ``run`` returns.

    ``command`` is what --help says about the entry point. An input error (a bad
    flag included) is one line on stderr and exit code 2; a version its audit gate held
    back (NotPublished) one line and exit code 3; anything else raises, which prints its
    traceback and exits with 1.
    """
    try:
        (options, log), beam_args = parse_flags(argv, options_type, LogOptions, command=command)
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
