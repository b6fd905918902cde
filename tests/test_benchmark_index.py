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
