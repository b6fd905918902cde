"""What every pipeline's driver shares: the runner, its counters, the CLI's errors."""

import logging
import sys
from collections.abc import Callable
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from pipelines.options import GenerateOptions, parse_options
from transforms.errors import input_error_message


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


def cli(
    argv: list[str] | None,
    run: Callable[[Any, list[str]], str],
    options_type: type = GenerateOptions,
) -> int:
    """Parses flags into ``options_type``, runs, prints what ``run`` returns.

    An input error is one line and exit code 2.
    """
    logging.getLogger().setLevel(logging.INFO)
    options, beam_args = parse_options(argv, options_type)
    try:
        summary = run(options, beam_args)
    except Exception as error:
        message = input_error_message(error)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
    print(summary)
    return 0
