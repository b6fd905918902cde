"""benchmarks/pairs.py on a small closed-sets version, so that it cannot rot unnoticed."""

import pytest

from benchmarks import pairs


def test_the_pairs_benchmark_keeps_the_same_k_checking_fewer_pairs(closed_sets_dataset, capsys):
    directory, _ = closed_sets_dataset
    assert pairs.main(["--dataset", directory, "--targets", "200"]) == 0
    rows = [line.strip("|").split("|") for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[0].split()[0] for row in rows] == ["all", "until"]
    assert rows[0][2].strip() == "1.00x"
    checked = [int(row[3].replace(",", "")) for row in rows]
    assert 0 < checked[1] < checked[0]
    assert [row[4].strip() for row in rows] == ["True", "True"]


def test_the_pairs_benchmark_refuses_a_version_of_another_strategy(mcic_dataset):
    with pytest.raises(SystemExit, match="generated with --decoys mcic, not closed_sets"):
        pairs.main(["--dataset", mcic_dataset])
