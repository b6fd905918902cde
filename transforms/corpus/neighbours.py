"""Neighbourhoods: each target's top-N captions of other images by simPV.

Inner-product search over unit PV vectors (transforms/index.py: exact for
small pools, IVF for large ones). A target's own image is excluded by asking
for ``N + m`` neighbours, where ``m`` is the most captions any one image has
in the pool, and dropping same-image hits: whenever the pool has ``N``
captions of other images, exactly ``N`` candidates come back.
"""

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import apache_beam as beam
import faiss
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils.shared import Shared

from schemas.layout import EMBEDDINGS_FILE, index_file
from transforms.corpus import index as faiss_index
from transforms.corpus.split import SPLITS
from transforms.corpus.store import (
    Corpus,
    CorpusRef,
    load_corpus,
    pool_rows,
    read_caption_table,
    read_npy,
    split_codes,
)
from transforms.memory import release_freed_memory
from transforms.progress import Progress, timed, timed_load


class Neighbourhood(NamedTuple):
    """A batch of targets and their candidate lists (rows of the corpus)."""

    directory: str
    targets: np.ndarray  # int64 (B,)
    candidates: np.ndarray  # int64 (B, N); -1 where the pool ran out
    sim_pv: np.ndarray  # float64 (B, N); 0 where candidates is -1


@dataclass
class Pool:
    """The captions decoys may come from, and an index over them."""

    rows: np.ndarray  # corpus rows in the pool, ascending
    index: faiss.Index
    largest_image: int  # most captions of one image in the pool


@dataclass
class SearchableCorpus:
    """A corpus with one pool per ``decoy_pool`` value; loaded once per process."""

    corpus: Corpus
    pools: dict[str, Pool]  # "all", or one per split

    def by_pool(self, rows: np.ndarray) -> list[tuple[Pool, np.ndarray]]:
        """Groups target rows by the pool their decoys come from."""
        if "all" in self.pools:
            return [(self.pools["all"], rows)]
        codes = self.corpus.split_of[rows]
        return [(self.pools[SPLITS[code]], rows[codes == code]) for code in np.unique(codes)]


def build_indexes(ref: CorpusRef, *, decoy_pool: str, config: faiss_index.IndexConfig) -> CorpusRef:
    """The global step of this stage: one index per pool, written beside the corpus. It
    reads the vectors and the splits only, not the rest of the corpus."""
    embeddings = read_npy(FileSystems.join(ref.directory, EMBEDDINGS_FILE))
    split_of = split_codes(read_caption_table(ref.directory, ["split"]).column("split"))
    for pool, rows in pool_rows(split_of, decoy_pool).items():
        with timed("index", "build") as elapsed:
            index = faiss_index.build_index(embeddings, config, rows)
            faiss_index.write_index(index, index_file(ref.directory, pool))
        logging.info(
            "built %s index of the %s pool (%d captions) in %.1fs",
            type(index).__name__,
            pool,
            len(rows),
            elapsed.seconds,
        )
        del index  # its lists live in the heap: this worker may load it again to search
        release_freed_memory()
    return ref


def make_pool(corpus: Corpus, rows: np.ndarray, index: faiss.Index) -> Pool:
    per_image = np.bincount(corpus.image_of[rows]) if len(rows) else np.zeros(1, np.int64)
    return Pool(rows=rows, index=index, largest_image=int(per_image.max()))


def load_searchable(
    directory: str, decoy_pool: str, config: faiss_index.IndexConfig
) -> SearchableCorpus:
    with timed_load("corpus"):
        corpus = load_corpus(directory, embeddings=False)
        pools = {
            pool: make_pool(
                corpus,
                rows,
                faiss_index.read_index(index_file(directory, pool), config),
            )
            for pool, rows in corpus.pools(decoy_pool).items()
        }
        return SearchableCorpus(corpus=corpus, pools=pools)


@dataclass(frozen=True)
class SharedCorpus:
    """How every stage gets the one copy of the corpus and indexes of its process.

    Pickled into the DoFns of both the neighbourhood and the decoy stage; the
    ``Shared`` handle makes the first caller in a worker process load the
    files and every later caller (any thread, either stage) reuse them.
    """

    shared: Shared
    decoy_pool: str
    index: faiss_index.IndexConfig

    def acquire(self, directory: str) -> SearchableCorpus:
        return self.shared.acquire(
            lambda: load_searchable(directory, self.decoy_pool, self.index),
            tag=f"{directory}|{self.decoy_pool}|{self.index}",
        )


def search(
    corpus: Corpus, pool: Pool, targets: np.ndarray, neighbours: int, wider: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """(candidates, sim_pv), both (len(targets), neighbours), best first.

    Candidates are corpus rows of other images than the target's; -1 (with
    simPV 0) fills the rows' ends only when the pool is too small. ``wider``: an IVF
    index scans that many times the clusters it was built to scan (``--ivf_scan`` is
    set for the first search's depth).
    """
    sims, local = nearest_in_pool(pool, targets, neighbours, wider)
    return other_images(corpus, pool, targets, sims, local, neighbours)


def nearest_in_pool(
    pool: Pool, targets: np.ndarray, neighbours: int, wider: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """faiss's part of :func:`search`, alone (what ``benchmarks.kernels`` times bare):
    (similarities, pool positions) of enough nearest captions that ``neighbours`` of other
    images remain after the target's own image's are dropped."""
    k = min(neighbours + pool.largest_image, len(pool.rows))
    queries = pool.index.reconstruct_batch(np.searchsorted(pool.rows, targets))
    params = None
    if wider > 1 and isinstance(pool.index, faiss.IndexIVF):
        nprobe = min(pool.index.nlist, pool.index.nprobe * wider)
        params = faiss.SearchParametersIVF(nprobe=nprobe)
    return pool.index.search(queries, k, params=params)


def other_images(
    corpus: Corpus,
    pool: Pool,
    targets: np.ndarray,
    sims: np.ndarray,
    local: np.ndarray,
    neighbours: int,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`search`'s result from faiss's: the ``neighbours`` nearest of other images."""
    rows = np.where(local >= 0, pool.rows[np.maximum(local, 0)], -1)
    other = (rows >= 0) & (corpus.image_of[rows] != corpus.image_of[targets][:, None])
    order = np.argsort(~other, axis=1, kind="stable")[:, :neighbours]
    keep = np.take_along_axis(other, order, axis=1)
    candidates = np.where(keep, np.take_along_axis(rows, order, axis=1), -1)
    sim_pv = np.where(keep, np.take_along_axis(sims, order, axis=1), 0.0).astype(np.float64)
    if candidates.shape[1] < neighbours:
        pad = neighbours - candidates.shape[1]
        candidates = np.pad(candidates, ((0, 0), (0, pad)), constant_values=-1)
        sim_pv = np.pad(sim_pv, ((0, 0), (0, pad)))
    return candidates, sim_pv


def pool_similarities(pool: Pool, targets: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """simPV of each target (B,) to its candidates (B, N, corpus rows, -1 padded: 0 there),
    from the vectors the pool's index holds: for finders that choose candidates otherwise."""
    local = np.searchsorted(pool.rows, np.maximum(candidates, 0)).ravel()
    vectors = pool.index.reconstruct_batch(local).reshape(*candidates.shape, -1)
    queries = pool.index.reconstruct_batch(np.searchsorted(pool.rows, targets))
    sims = np.einsum("bkd,bd->bk", vectors, queries)
    return np.where(candidates >= 0, sims, 0.0).astype(np.float64)


def shard_ranges(ref: CorpusRef, shard_size: int):
    for start in range(0, ref.size, shard_size):
        yield ref.directory, start, min(start + shard_size, ref.size)


Finder = Callable[[Corpus, Pool, np.ndarray], tuple[np.ndarray, np.ndarray]]


def top_neighbours(neighbours: int) -> Finder:
    """The finder of Algorithm 1: the top-``neighbours`` captions of other images by simPV."""
    return functools.partial(search, neighbours=neighbours)


class BuildIndexes(beam.PTransform):
    """CorpusRef -> the same CorpusRef, once one index per pool is written beside the corpus.

    The index build runs on one worker (:func:`build_indexes`).
    """

    def __init__(self, *, corpus: SharedCorpus):
        super().__init__()
        self._pool, self._index = corpus.decoy_pool, corpus.index

    def expand(self, corpus_ref):
        return corpus_ref | "Build" >> beam.Map(
            build_indexes, decoy_pool=self._pool, config=self._index
        )


class SearchNeighbourhoods(beam.PTransform):
    """Indexed CorpusRef -> Neighbourhood batches, in parallel over shards of targets.

    ``find`` runs on every worker, each process loading the corpus and index once. It maps
    (corpus, pool, targets) to (candidates, simPV): :func:`top_neighbours`, or a
    strategy's own (random draws use the index only for vectors).
    """

    def __init__(self, *, corpus: SharedCorpus, find: Finder, shard_size: int, batch_size: int):
        super().__init__()
        self._search = _SearchShard(corpus, find, batch_size)
        self._shard_size = shard_size

    def expand(self, indexed_ref):
        return (
            indexed_ref
            | "Shards" >> beam.FlatMap(shard_ranges, shard_size=self._shard_size)
            | "Distribute" >> beam.Reshuffle()
            | "Search" >> beam.ParDo(self._search)
        )


class FindNeighbourhoods(beam.PTransform):
    """CorpusRef -> Neighbourhood batches: :class:`BuildIndexes`, then
    :class:`SearchNeighbourhoods`."""

    def __init__(self, *, corpus: SharedCorpus, find: Finder, shard_size: int, batch_size: int):
        super().__init__()
        self._build = BuildIndexes(corpus=corpus)
        self._search = SearchNeighbourhoods(
            corpus=corpus, find=find, shard_size=shard_size, batch_size=batch_size
        )

    def expand(self, corpus_ref):
        return corpus_ref | "BuildIndex" >> self._build | "Search" >> self._search


class _SearchShard(beam.DoFn):
    def __init__(self, corpus: SharedCorpus, find: Finder, batch_size: int):
        self._corpus, self._find, self._batch_size = corpus, find, batch_size
        self._progress = None

    def process(self, shard: tuple[str, int, int]):
        directory, start, end = shard
        searchable = self._corpus.acquire(directory)
        if self._progress is None:
            self._progress = Progress("neighbourhoods", "targets", len(searchable.corpus))
        for pool, rows in searchable.by_pool(np.arange(start, end)):
            for first in range(0, len(rows), self._batch_size):
                targets = rows[first : first + self._batch_size]
                with timed("neighbourhoods", "search"):
                    candidates, sim_pv = self._find(searchable.corpus, pool, targets)
                self._progress.advance(len(targets))
                yield Neighbourhood(directory, targets, candidates, sim_pv)
