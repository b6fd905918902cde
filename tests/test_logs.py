"""What stderr shows: progress lines throttled off a terminal, ours only, workers' lines too."""

import io
import logging
import re
import types

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.portability.api import beam_fn_api_pb2
from apache_beam.runners.portability import local_job_service
from apache_beam.runners.worker import sdk_worker_main

from pipelines import generate
from pipelines.options import LogOptions
from pipelines.runner import logging_to
from pipelines.store import versions
from tests.support.local import local_pipeline
from transforms import progress
from transforms.corpus.synthetic import write_coco
from transforms.errors import InputError
from transforms.progress import report

UTC_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (INFO|WARNING|ERROR) \S+: (.*)$")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def messages(text: str) -> list[str]:
    """The messages of stderr's lines, each checked to carry a UTC timestamp."""
    lines = text.splitlines()
    assert all(UTC_LINE.match(line) for line in lines), lines
    return [UTC_LINE.match(line).group(2) for line in lines]


def log_as_ours(level: int, message: str) -> None:
    """As a line of pipelines/store/versions.py (this file is not the project's: its lines are not
    ours)."""
    logging.getLogger().handle(
        logging.LogRecord("root", level, versions.__file__, 1, message, (), None)
    )


def three_epochs_of_two_stages() -> None:
    log_as_ours(logging.INFO, "loaded corpus of 9 captions")  # not a progress line
    for epoch in (1, 2, 3):
        report("audit", "Text-FFNN epoch %d of 3", epoch)
        report("neighbourhoods", "targets %d of 3 done by this worker", epoch)


def test_off_a_terminal_only_progress_shows_one_line_per_stage_and_interval(capsys):
    with logging_to(LogOptions(progress_interval=3600)):
        three_epochs_of_two_stages()
    assert messages(capsys.readouterr().err) == [
        "audit: Text-FFNN epoch 1 of 3",
        "neighbourhoods: targets 1 of 3 done by this worker",
    ]


def test_off_a_terminal_an_interval_of_zero_shows_every_line(capsys):
    with logging_to(LogOptions(progress_interval=0)):
        three_epochs_of_two_stages()
    shown = messages(capsys.readouterr().err)
    assert shown[::2] == [f"audit: Text-FFNN epoch {epoch} of 3" for epoch in (1, 2, 3)]
    assert len(shown) == 6


def test_a_terminal_shows_every_line_as_it_comes(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with logging_to(LogOptions(progress_interval=3600)):
        three_epochs_of_two_stages()
    shown = messages(terminal.getvalue())  # UTC, as off a terminal and with --verbose
    assert len(shown) == 7 and shown[0] == "loaded corpus of 9 captions"
    assert shown[5] == "audit: Text-FFNN epoch 3 of 3"


def test_quiet_shows_no_progress_and_no_warning(capsys):
    with logging_to(LogOptions(quiet=True, progress_interval=0)):
        three_epochs_of_two_stages()
        log_as_ours(logging.WARNING, "a warning of ours")
        log_as_ours(logging.ERROR, "an error of ours")
    assert messages(capsys.readouterr().err) == ["an error of ours"]


def test_beams_own_lines_stay_out_unless_verbose(capsys):
    for verbose in (False, True):
        with logging_to(LogOptions(verbose=verbose)):
            logging.getLogger(sdk_worker_main.__name__).warning("No semi_persistent_directory")
            log_as_ours(logging.WARNING, "a warning of ours")
            logging.warning("a warning of this test's (not the project's)")
        shown = messages(capsys.readouterr().err)
        assert ("No semi_persistent_directory" in shown) is verbose
        assert "a warning of ours" in shown
        assert ("a warning of this test's (not the project's)" in shown) is verbose


def worker_entry(message: str, module, severity) -> beam_fn_api_pb2.LogEntry:
    entry = beam_fn_api_pb2.LogEntry(message=message, severity=severity, thread="MainThread")
    entry.log_location = f"{module.__file__}:40"
    entry.timestamp.seconds = 1_700_000_000
    return entry


def test_a_worker_process_progress_line_is_shown_and_its_beam_warning_is_not(capsys):
    """Through the servicer a multi_processing worker's lines arrive on (a whole run is below)."""
    severity = beam_fn_api_pb2.LogEntry.Severity.Enum
    entries = beam_fn_api_pb2.LogEntry.List(
        log_entries=[
            worker_entry("No semi_persistent_directory found", sdk_worker_main, severity.WARN),
            worker_entry("closed_sets: parts 1 of 3 done by this worker", progress, severity.INFO),
        ]
    )
    with logging_to(LogOptions(progress_interval=0)):
        local_job_service.BeamFnLoggingServicer().Logging([entries])
    err = capsys.readouterr().err
    assert messages(err) == ["closed_sets: parts 1 of 3 done by this worker"]
    assert err.startswith("2023-11-14T22:13:20.000Z")  # the worker's time, not the line's arrival


TINY_RUN = "--n_dev 10 --n_test 10 --neighbours 20 --pv_dim 16 --pv_epochs 2"
MULTI_PROCESSING = "--direct_num_workers 2 --direct_running_mode multi_processing"


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("corpus") / "captions.json")
    write_coco(path, seed=0, num_images=60)
    return path


def generate_stderr(corpus: str, output, flags: str, capfd) -> str:
    """What a generate run writes on stderr when stderr is not a terminal (a captured fd,
    which its worker processes write to as well)."""
    argv = ["--input", corpus, "--output", str(output), *TINY_RUN.split(), *flags.split()]
    assert generate.main(argv) == 0
    return capfd.readouterr().err


@pytest.mark.slow
def test_a_multi_processing_run_shows_its_workers_progress_and_no_beam_warning(
    tiny_corpus, tmp_path, capfd
):
    err = generate_stderr(tiny_corpus, tmp_path, f"--progress_interval 0 {MULTI_PROCESSING}", capfd)
    shown = messages(err)
    assert "semi_persistent_directory" not in err
    assert re.search(r"Z INFO worker: (neighbourhoods|closed_sets): \w+ \d+ of \d+ done", err)
    epochs = [line.split(": dev accuracy")[0] for line in shown if ": dev accuracy" in line]
    assert epochs == [f"audit: Text-FFNN epoch {epoch} of 20" for epoch in range(1, 21)]
    assert not any(line.startswith("train: ") for line in shown)


def test_a_run_shows_one_progress_line_per_stage_and_interval(tiny_corpus, tmp_path, capfd):
    flags = "--progress_interval 3600 --language auto"
    shown = messages(generate_stderr(tiny_corpus, tmp_path, flags, capfd))
    [chosen] = [line for line in shown if line.startswith("language: ")]  # a scheduler's too
    assert chosen.startswith("language: --language auto chose en (English")
    audit = [line for line in shown if line.startswith("audit: ")]
    assert len(audit) == 1 and audit[0].startswith("audit: Text-FFNN epoch 1 of 20")
    assert len([line for line in shown if line.startswith("closed_sets: ")]) == 1


def test_a_quiet_run_shows_nothing(tiny_corpus, tmp_path, capfd):
    assert generate_stderr(tiny_corpus, tmp_path, "--quiet --progress_interval 0", capfd) == ""


@pytest.mark.parametrize(
    "log, problem",
    [
        (LogOptions(verbose=True, quiet=True), "--verbose and --quiet contradict each other"),
        (LogOptions(progress_interval=-1), "--progress_interval must be >= 0"),
    ],
)
def test_contradicting_or_negative_log_options_are_refused(log, problem):
    with pytest.raises(InputError, match=problem):
        log.validate()


def test_timed_items_counts_making_the_items_not_the_stages_they_go_on_to(monkeypatch):
    """A clock of its own, which the stages reach through the module (Beam pickles them):
    making each item takes 1 s, the next stage 100 s an item."""
    clock = types.SimpleNamespace(now=0.0, monotonic=lambda: clock.now)
    monkeypatch.setattr(progress, "time", clock)

    def made(count: int):
        for item in range(count):
            progress.time.now += 1
            yield item

    def slow(item: int) -> int:
        progress.time.now += 100
        return item

    pipeline = local_pipeline()
    _ = (
        pipeline
        | beam.Create([4])
        | beam.FlatMap(lambda count: progress.timed_items("test", "made", made(count)))
        | beam.Map(slow)
    )
    result = pipeline.run()
    result.wait_until_finish()
    [counter] = result.metrics().query(MetricsFilter().with_name("made_ms"))["counters"]
    assert counter.committed == 4000
