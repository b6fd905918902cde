import faiss
import numpy as np
import pytest

from transforms.corpus import index as faiss_index
from transforms.corpus.index import IndexConfig, build_index, read_index, write_index


def _clustered(count=4000, dim=16, clusters=40, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    vectors = centres[rng.integers(clusters, size=count)] + 0.3 * rng.normal(size=(count, dim))
    vectors = vectors.astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_small_pools_are_searched_exactly():
    vectors = _clustered(count=500)
    index = build_index(
        vectors, IndexConfig(exact_limit=500, nlist=0, nprobe=1, scan=1, neighbours=10, seed=0)
    )
    assert isinstance(index, faiss.IndexFlatIP)
    _, found = index.search(vectors[:5], 10)
    expected = np.argsort(-(vectors[:5] @ vectors.T), axis=1, kind="stable")[:, :10]
    assert found.tolist() == expected.tolist()


def test_large_pools_use_ivf_with_high_recall_and_survive_the_file(tmp_path):
    vectors = _clustered()
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
    vectors = _clustered()
    config = IndexConfig(exact_limit=0, nlist=32, nprobe=0, scan=20, neighbours=20, seed=5)
    first = build_index(vectors, config).search(vectors[:50], 20)[1]
    second = build_index(vectors, config).search(vectors[:50], 20)[1]
    assert first.tolist() == second.tolist()


@pytest.mark.parametrize("exact_limit", [0, 10_000], ids=["ivf", "exact"])
def test_a_pool_added_by_chunks_of_its_rows_is_the_index_of_its_vectors(
    exact_limit, monkeypatch, tmp_path
):
    vectors = _clustered()
    rows = np.flatnonzero(np.random.default_rng(1).random(len(vectors)) < 0.7)
    config = IndexConfig(exact_limit, nlist=0, nprobe=0, scan=20, neighbours=20, seed=3)
    whole = faiss.serialize_index(build_index(vectors[rows], config))
    monkeypatch.setattr(faiss_index, "ADD_CHUNK", 97)
    write_index(build_index(vectors, config, rows), str(tmp_path / "pool.faiss"))
    assert (tmp_path / "pool.faiss").read_bytes() == whole.tobytes()
