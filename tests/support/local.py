"""The pipeline the tests run their transforms on."""

import apache_beam as beam

from pipelines.runner import local_or_given_runner


def local_pipeline() -> beam.Pipeline:
    """Beam's in-process FnApiRunner, as a command without ``--runner`` gets: Beam's
    TestPipeline and DirectRunner first try to download the Prism runner, leaving a
    temporary folder behind each time and, where there is network, testing an engine the
    pipelines do not run on."""
    return local_or_given_runner([])
