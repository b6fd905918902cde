"""benchmarks/under_load.py: the harness, without its two generate runs."""

import subprocess
import sys

import pytest

from benchmarks import under_load


def test_the_busy_process_runs_for_the_command_and_is_gone_after():
    seen = []

    def busy_processes() -> int:
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
        return sum(under_load.BUSY in line for line in ps.stdout.splitlines())

    before = busy_processes()
    with under_load.busy_process(True):
        seen.append(busy_processes())
    assert seen == [before + 1] and busy_processes() == before
    assert under_load.wall_seconds([sys.executable, "-c", "pass"], busy=True) > 0


def test_a_failed_command_is_an_error_not_a_time():
    with pytest.raises(subprocess.CalledProcessError):
        under_load.wall_seconds([sys.executable, "-c", "raise SystemExit(3)"], busy=False)


def test_generate_runs_alone_then_beside_a_busy_process_on_the_corpus_it_wrote(monkeypatch, capsys):
    runs = []

    def wall_seconds(command, busy):
        runs.append((command, busy))
        return 30.0 if busy else 20.0

    monkeypatch.setattr(under_load, "wall_seconds", wall_seconds)
    assert under_load.main(["--num_images", "16", "--", "--decoys", "mcic"]) == 0
    [(alone, first_busy), (loaded, then_busy)] = runs
    assert (first_busy, then_busy) == (False, True)
    assert alone == loaded and alone[1:3] == ["-m", "pipelines.generate"]
    assert alone[-2:] == ["--decoys", "mcic"] and "--force" in alone
    assert "| beside a busy process | 30.0 | 1.50 |" in capsys.readouterr().out
