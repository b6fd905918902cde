"""benchmarks/index.py on a small vector set, so that it cannot rot unnoticed."""

import numpy as np

from benchmarks import index
from tests.support.vectors import clustered


def test_the_index_benchmark_prints_one_row_per_setting_with_its_recall(tmp_path, capsys):
    path = tmp_path / "embeddings.npy"
    np.save(path, clustered(count=3000))
    argv = ["--embeddings", str(path), "--settings", "4x40,1x40", "--queries", "100"]
    assert index.main(argv) == 0
    rows = [line.strip("|").split("|") for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[0].split(" a cluster")[0].strip() for row in rows] == ["4 x 40", "1 x 40"]
    assert rows[0][2].strip() == "1.00x"
    recalls = [float(cell) for row in rows for cell in row[3:]]
    assert len(recalls) == 4 and all(0.8 < recall <= 1.0 for recall in recalls)


def test_a_wider_scan_recalls_at_least_as_much(tmp_path, capsys):
    path = tmp_path / "embeddings.npy"
    np.save(path, clustered(count=3000))
    argv = ["--embeddings", str(path), "--settings", "1x40", "--scans", "2,8", "--queries", "100"]
    assert index.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    narrow, wide = (line.strip("|").split("|") for line in lines[-2:])
    assert [narrow[0].strip(), wide[0].strip()] == ["2", "8"]
    for small, large in zip(narrow[1:], wide[1:], strict=True):
        (probes_small, recall_small, ratio), (probes_large, recall_large, _) = (
            cell.strip().split(", ") for cell in (small, large)
        )
        assert int(probes_small) < int(probes_large)
        assert 0.0 < float(recall_small) <= float(recall_large) <= 1.0
        assert ratio == "1.00x"
