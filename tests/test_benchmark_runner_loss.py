"""benchmarks/runner_loss.py at a tiny size, so that it cannot rot unnoticed."""

import pytest

from benchmarks import runner_loss


def test_the_runner_loss_pipeline_counts_every_record_of_each_source():
    assert runner_loss.arrived("in_memory", "size", 3, 50, 70, 10) == {"part": 150, "border": 70}


@pytest.mark.slow
def test_the_runner_loss_benchmark_prints_one_row_per_mode_and_flush(capsys):
    flags = "--modes in_memory,multi_threading --flushes size --runs 1 --parts 2 --per_part 40"
    assert runner_loss.main([*flags.split(), "--border", "30", "--size", "10"]) == 0
    rows = [line.strip("|").split("|") for line in capsys.readouterr().out.splitlines()[2:]]
    assert [(row[0].strip(), row[1].strip()) for row in rows] == [
        ("in_memory", "size"),
        ("multi_threading", "size"),
    ]
    assert [int(row[2]) for row in rows] == [1, 1]
    assert [row[3:5] for row in rows] == [[" 0 ", " 0 "]] * 2
