"""Neighbour indexes over unit PV vectors (inner product = cosine = simPV).

Pools of up to ``exact_limit`` captions are searched exactly (faiss
``IndexFlatIP``). Larger ones use an inverted-file index (``IndexIVFFlat``):
exact search over COCO 2014 (~616k captions, 500 neighbours each) is ~10^14
multiply-adds, ~17 minutes of BLAS on two cores, while IVF scans only ``nprobe`` of
``nlist`` clusters per query. Its recall@N against exact search is measured
by ``benchmarks/scale.py``; the defaults keep it at 0.95 or above.

Indexes are built once, in the global step, and serialised next to the corpus;
workers load them once per process.
"""

import math
from dataclasses import dataclass

import faiss
import numpy as np

KMEANS_ITERATIONS = 10
TRAINING_POINTS_PER_CLUSTER = 64


@dataclass(frozen=True)
class IndexConfig:
    exact_limit: int  # pools of at most this many captions are searched exactly
    nlist: int  # IVF clusters; 0 = 4 * sqrt(pool size)
    nprobe: int  # IVF clusters scanned per query; 0 = enough to scan `scan` * `neighbours`
    scan: float  # with nprobe 0: vectors scanned per query, as a multiple of neighbours
    neighbours: int  # how many neighbours queries ask for
    seed: int
    threads: int = 0  # faiss (OpenMP) threads per process; 0 = faiss's default, all cores


def probes(config: IndexConfig, count: int, nlist: int) -> int:
    """IVF clusters to scan: recall@N depends on how many vectors a query sees
    relative to N (measured: ~20 N gives 0.96 on 600k PV vectors), not on the
    fraction of the corpus.

    >>> probes(IndexConfig(0, 0, 0, 20, 500, 0), count=600_000, nlist=3098)
    52
    """
    if config.nprobe:
        return min(config.nprobe, nlist)
    return min(nlist, math.ceil(config.scan * config.neighbours * nlist / count))


def build_index(vectors: np.ndarray, config: IndexConfig) -> faiss.Index:
    """Exact for small pools, IVF above ``exact_limit`` captions."""
    count, dim = vectors.shape
    if count <= config.exact_limit:
        index = faiss.IndexFlatIP(dim)
        index.add(vectors)
        return index
    nlist = config.nlist or int(4 * math.sqrt(count))
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = config.seed
    index.cp.niter = KMEANS_ITERATIONS
    # A seeded sample of 64 points a cluster: k-means on all of COCO 2014
    # costs a minute more and gains no measurable recall.
    sample_size = min(count, TRAINING_POINTS_PER_CLUSTER * nlist)
    sample = np.random.default_rng(config.seed).choice(count, sample_size, replace=False)
    index.train(vectors[np.sort(sample)])
    index.add(vectors)
    index.nprobe = probes(config, count, nlist)  # saved with the index
    index.make_direct_map()  # targets are looked up in the index, not kept twice
    return index


def serialize(index: faiss.Index) -> bytes:
    return faiss.serialize_index(index).tobytes()


def deserialize(data: bytes, config: IndexConfig) -> faiss.Index:
    """Loads an index for searching with ``config``'s threads.

    Several worker processes on one machine each running faiss on all cores
    oversubscribe it (OpenMP threads spin while waiting); ``threads`` caps it.
    """
    if config.threads:
        faiss.omp_set_num_threads(config.threads)
    return faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
