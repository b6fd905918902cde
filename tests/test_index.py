import faiss
import numpy as np
import pytest

from tests.support.vectors import clustered
from transforms.corpus import index as faiss_index
from transforms.corpus.index import IndexConfig, build_index, read_index, write_index


def test_small_pools_are_searched_exactly():
    vectors = clustered(count=500)
    index = build_index(
        vectors, IndexConfig(exact_limit=500, nlist=0, nprobe=1, scan=1, neighbours=10, seed=0)
    )
    assert isinstance(index, faiss.IndexFlatIP)
    _, found = index.search(vectors[:5], 10)
    expected = np.argsort(-(vectors[:5] @ vectors.T), axis=1, kind="stable")[:, :10]
    assert found.tolist() == expected.tolist()


def test_large_pools_use_ivf_with_high_recall_and_survive_the_file(tmp_path):
    vectors = clustered()
    config = IndexConfig(exact_limit=1000, nlist=0, nprobe=16, scan=1, neighbours=50, seed=0)
    write_index(build_index(vectors, config), str(tmp_path / "pool.faiss"))
    index = read_index(str(tmp_path / "pool.faiss"), config)
    assert isinstance(index, faiss.IndexIVFScalarQuantizer)
    assert index.nlist == int(4 * np.sqrt(len(vectors))) and index.nprobe == 16
    queries = vectors[:200]
    _, found = index.search(queries, 50)
    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :50]
    recall = np.mean([len(set(f) & set(t)) / 50 for f, t in zip(found, truth, strict=True)])
    assert recall > 0.9


def test_ivf_is_reproducible_for_a_seed():
    vectors = clustered()
    config = IndexConfig(exact_limit=0, nlist=32, nprobe=0, scan=20, neighbours=20, seed=5)
    first = build_index(vectors, config).search(vectors[:50], 20)[1]
    second = build_index(vectors, config).search(vectors[:50], 20)[1]
    assert first.tolist() == second.tolist()


@pytest.mark.parametrize("exact_limit", [0, 10_000], ids=["ivf", "exact"])
def test_a_pool_added_by_chunks_of_its_rows_is_the_index_of_its_vectors(
    exact_limit, monkeypatch, tmp_path
):
    vectors = clustered()
    rows = np.flatnonzero(np.random.default_rng(1).random(len(vectors)) < 0.7)
    config = IndexConfig(exact_limit, nlist=0, nprobe=0, scan=20, neighbours=20, seed=3)
    whole = faiss.serialize_index(build_index(vectors[rows], config))
    monkeypatch.setattr(faiss_index, "ADD_CHUNK", 97)
    write_index(build_index(vectors, config, rows), str(tmp_path / "pool.faiss"))
    assert (tmp_path / "pool.faiss").read_bytes() == whole.tobytes()
