"""benchmarks/help.py on one command, so that it cannot rot unnoticed: its table's rows."""

import re

from benchmarks import help as help_benchmark


def test_the_help_benchmark_prints_a_row_a_command_and_the_floor_beneath_them(capsys):
    assert help_benchmark.main(["--repeats", "1", "--commands", "dmc-make-corpus"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "median of 1 turns, each a fresh process" in lines[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[4:-2]]
    assert [row[0] for row in rows] == ["dmc-make-corpus"]
    helped, as_module, ratio = rows[0][1:]
    assert float(helped) > 0 and float(as_module) > 0 and re.fullmatch(r"\d+\.\d\dx", ratio)
    assert re.fullmatch(r"Beam's import: \d+\.\d\d s; python alone: \d+\.\d\d s", lines[-1])
