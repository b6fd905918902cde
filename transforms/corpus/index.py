"""Neighbour indexes over unit PV vectors (inner product = cosine = simPV).

Pools of up to ``exact_limit`` captions are searched exactly (faiss
``IndexFlatIP``). Larger ones use an inverted-file index
(``IndexIVFScalarQuantizer``): exact search over COCO 2014 (~616k captions, 500
neighbours each) is ~10^14 multiply-adds, ~17 minutes of BLAS on two cores, while IVF
scans only ``nprobe`` of ``nlist`` clusters per query. Its recall against exact search
is measured by ``benchmarks/scale.py`` and ``benchmarks/index.py``: with the defaults,
0.975 at MC-IC's N = 500 and 0.955 at the 200 closed sets search on 598,575 synthetic PV
vectors (2026-11-27), and 0.90 at 200 on 3.19M (2026-11-25, a scan of 20 N). Halving
``nlist`` there made the search slower, not faster (5,908 queries a second against 6,335;
the lists scanned grow), and cost 4 points.

An IVF index keeps each vector's residual to its cluster's centre as fp16: half the
memory of float32 in every searching worker (1.6 GB less each at CC3M size, dim 256),
and a scan that reads half the bytes. Its similarities differ from float32's by under
1e-4, and its top 200 agree with float32's IVF on 99.97% of 200k random unit vectors.

Indexes are built once, in the global step, and written next to the corpus; workers
load them once per process. Vectors go in by chunks and the index streams to and from
its file, so a pool's vectors are held once (3.3 GB at CC3M size, dim 256), not as
their copy, the index, its serialised bytes and those bytes' copy.
"""

import math
from dataclasses import dataclass

import faiss
import numpy as np
from apache_beam.io.filesystems import FileSystems

# IVF training is the index build's cost and runs in one process: its k-means sees 40
# points a cluster (faiss warns below 39) for 5 iterations. Against 64 points and 10
# iterations on 598,575 synthetic PV vectors (benchmarks/index.py, docs/benchmarks.md) it
# builds 1.9x faster for 0.4 points of recall@200 and @500.
KMEANS_ITERATIONS = 5
TRAINING_POINTS_PER_CLUSTER = 40
ADD_CHUNK = 1 << 16  # rows added at a time: the only copy of a pool's vectors


@dataclass(frozen=True)
class IndexConfig:
    exact_limit: int  # pools of at most this many captions are searched exactly
    nlist: int  # IVF clusters; 0 = 4 * sqrt(pool size)
    nprobe: int  # IVF clusters scanned per query; 0 = enough to scan `scan` * `neighbours`
    scan: float  # with nprobe 0: vectors scanned per query, as a multiple of neighbours
    neighbours: int  # how many neighbours queries ask for
    seed: int
    threads: int = 0  # faiss (OpenMP) threads per process; 0 = faiss's default, all cores
    kmeans_iterations: int = KMEANS_ITERATIONS  # IVF training (benchmarks/index.py)
    points_per_cluster: int = TRAINING_POINTS_PER_CLUSTER  # its seeded sample, per cluster


def probes(config: IndexConfig, count: int, nlist: int) -> int:
    """IVF clusters to scan: recall@N depends on how many vectors a query sees
    relative to N (measured at N = 500 on 600k PV vectors: 0.966 scanning 20 N, 0.975
    scanning 24 N), not on the fraction of the corpus.

    >>> probes(IndexConfig(0, 0, 0, 20, 500, 0), count=600_000, nlist=3098)
    52
    """
    if config.nprobe:
        return min(config.nprobe, nlist)
    return min(nlist, math.ceil(config.scan * config.neighbours * nlist / count))


def build_index(
    vectors: np.ndarray, config: IndexConfig, rows: np.ndarray | None = None
) -> faiss.Index:
    """Exact for small pools, IVF above ``exact_limit`` captions. ``rows``: the rows of
    ``vectors`` in the pool, ascending (every row when None)."""
    rows = np.arange(len(vectors)) if rows is None else rows
    count, dim = len(rows), vectors.shape[1]
    if count <= config.exact_limit:
        index = faiss.IndexFlatIP(dim)
        add_chunks(index, vectors, rows)
        return index
    nlist = config.nlist or int(4 * math.sqrt(count))
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, dim, nlist, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
    )
    index.cp.seed = config.seed
    index.cp.niter = config.kmeans_iterations
    # A seeded sample: k-means on all of COCO 2014 costs a minute more and gains no
    # measurable recall.
    sample_size = min(count, config.points_per_cluster * nlist)
    sample = np.random.default_rng(config.seed).choice(count, sample_size, replace=False)
    index.train(vectors[rows[np.sort(sample)]])
    add_chunks(index, vectors, rows)
    index.nprobe = probes(config, count, nlist)  # saved with the index
    index.make_direct_map()  # targets are looked up in the index, not kept twice
    return index


def add_chunks(index: faiss.Index, vectors: np.ndarray, rows: np.ndarray) -> None:
    """The same index as one ``add`` of ``vectors[rows]``: both index kinds append, and
    IVF assigns each vector to its list on its own."""
    for start in range(0, len(rows), ADD_CHUNK):
        index.add(vectors[rows[start : start + ADD_CHUNK]])


def write_index(index: faiss.Index, path: str) -> None:
    """Streamed into the file (local or GCS), never as bytes in memory."""
    with FileSystems.create(path) as handle:
        faiss.write_index(index, faiss.PyCallbackIOWriter(handle.write))


def read_index(path: str, config: IndexConfig) -> faiss.Index:
    """Loads an index for searching with ``config``'s threads, streamed from the file.

    Several worker processes on one machine each running faiss on all cores
    oversubscribe it (OpenMP threads spin while waiting); ``threads`` caps it.
    """
    if config.threads:
        faiss.omp_set_num_threads(config.threads)
    with FileSystems.open(path) as handle:
        return faiss.read_index(faiss.PyCallbackIOReader(handle.read))
