"""Closed sets' allowed pairs: which of a caption's searched neighbours may share a set.

A set's every pair must pass the validity rules both ways round, so the grouping works on
each caption's K (``--set_neighbours``) nearest *allowed* captions, out of the
``K * --set_search_depth`` searched, keyed by the part of the split the caption lies in
(``parts.py``): that is where its sets form (``forming.py``).
"""

from collections.abc import Iterable
from typing import NamedTuple

import apache_beam as beam
import numpy as np

from transforms.corpus.neighbours import (
    Neighbourhood,
    SearchNeighbourhoods,
    SharedCorpus,
    top_neighbours,
)
from transforms.corpus.split import SPLITS
from transforms.progress import timed
from transforms.strategies.closed_sets.parts import PartKey, PartTree, parts_of
from transforms.strategies.config import StrategyConfig
from transforms.strategies.validity import RejectionCounters, ValidityRules, pairs_allowed


class Edges(NamedTuple):
    """A batch of targets, their candidates and which pairs may share a set."""

    targets: np.ndarray  # int64 (B,) corpus rows
    candidates: np.ndarray  # int64 (B, K) corpus rows, -1 padded
    sim_pv: np.ndarray  # float64 (B, K)
    allowed: np.ndarray  # bool (B, K)


def first_allowed(
    candidates: np.ndarray,
    sim_pv: np.ndarray,
    allowed: np.ndarray,
    k: int,
    first: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's ``k`` best allowed candidates, best first: (candidates, sim_pv, allowed),
    padded with -1 (not allowed) where a row has fewer. ``first``: (B, m) positions of
    allowed candidates to put before the others, in that order (-1: none).

    >>> rows = first_allowed(np.array([[7, 8, 9]]), np.array([[0.9, 0.8, 0.7]]),
    ...                      np.array([[False, True, True]]), 2)
    >>> [row.tolist() for row in rows]
    [[[8, 9]], [[0.8, 0.7]], [[True, True]]]
    >>> first_allowed(np.array([[7, 8, 9]]), np.array([[0.9, 0.8, 0.7]]),
    ...               np.array([[False, True, True]]), 2, first=np.array([[2, -1]]))[0]
    array([[9, 8]])
    """
    width = candidates.shape[1]
    rank = np.where(allowed, np.arange(width), width)
    if first is not None:  # ranks below every other: -m .. -1
        rows, slots = np.nonzero(first >= 0)
        rank[rows, first[rows, slots]] = slots - first.shape[1]
    order = np.argsort(rank, axis=1, kind="stable")[:, :k]
    keep = np.take_along_axis(allowed, order, axis=1)
    return (
        np.where(keep, np.take_along_axis(candidates, order, axis=1), -1),
        np.where(keep, np.take_along_axis(sim_pv, order, axis=1), 0.0),
        keep,
    )


def allowed_only(edges: Edges) -> Edges:
    """``edges`` with the candidates not known to be allowed blanked (-1): what a walk over
    them may take without checking again.

    >>> edges = Edges(np.array([0]), np.array([[4, 5]]), np.array([[.9, .8]]),
    ...               np.array([[False, True]]))
    >>> allowed_only(edges).candidates.tolist()
    [[-1, 5]]
    """
    return edges._replace(candidates=np.where(edges.allowed, edges.candidates, -1))


def compact(edges: Edges) -> Edges:
    """The edge files' form, half the bytes: rows as int32 and simPV as float32, faiss's
    own precision, so nothing is lost; :func:`merged` widens them back.

    >>> found = np.array([[0.1, 0.0]], dtype=np.float32).astype(np.float64)  # as faiss gives
    >>> edges = Edges(np.array([3]), np.array([[5, -1]]), found, np.array([[True, False]]))
    >>> [a.tolist() == b.tolist() for a, b in zip(merged([compact(edges)]), edges)]
    [True, True, True, True]
    """
    return Edges(
        edges.targets.astype(np.int32),
        edges.candidates.astype(np.int32),
        edges.sim_pv.astype(np.float32),
        edges.allowed,
    )


def merged(edges: Iterable[Edges]) -> Edges:
    """The batches of one key as one, in target order (independent of how they arrived),
    in int64 rows and float64 simPV again."""
    edges = list(edges)
    targets = np.concatenate([e.targets for e in edges]).astype(np.int64)
    order = np.argsort(targets)
    return Edges(
        targets[order],
        np.concatenate([e.candidates for e in edges])[order].astype(np.int64),
        np.concatenate([e.sim_pv for e in edges])[order].astype(np.float64),
        np.concatenate([e.allowed for e in edges])[order],
    )


@beam.typehints.with_output_types(tuple[PartKey, Edges])
class _AllowedPairs(beam.DoFn):
    """Searched candidates -> each target's K nearest allowed ones, keyed by (split, part).

    The nearest captions of a large split are often paraphrases of the target that
    the validity rules turn away (simSURF >= L); searching deeper than K keeps K
    usable neighbours for them, so the sets' coverage does not fall with corpus size.
    """

    def __init__(self, corpus: SharedCorpus, rules: ValidityRules, k: int):
        self._corpus, self._rules, self._k = corpus, rules, k
        self._scratch = self._rejections = None

    def setup(self):
        self._rejections = RejectionCounters()

    def process(self, batch: Neighbourhood, trees: dict[str, PartTree]):
        searchable = self._corpus.acquire(batch.directory)
        corpus = searchable.corpus
        if self._scratch is None:
            self._scratch = corpus.ngrams.scratch()  # one per DoFn instance: not thread-safe
        with timed("decoys", "allowed_pairs"):
            allowed, rejected = pairs_allowed(
                corpus,
                batch.targets,
                batch.candidates,
                batch.sim_pv,
                self._rules,
                self._scratch,
                need=self._k,
            )
        self._rejections.add(rejected)
        candidates, sim_pv, allowed = first_allowed(
            batch.candidates, batch.sim_pv, allowed, self._k
        )
        for code in np.unique(corpus.split_of[batch.targets]):
            split = SPLITS[code]
            mine = corpus.split_of[batch.targets] == code
            part = parts_of(searchable, trees[split], split, batch.targets[mine])
            for p in np.unique(part):
                here = np.flatnonzero(mine)[part == p]
                edges = Edges(batch.targets[here], candidates[here], sim_pv[here], allowed[here])
                yield (split, int(p), batch.directory), compact(edges)


class AllowedPairs(beam.PTransform):
    """Indexed CorpusRef -> ((split, part, directory), Edges): the ``searched`` nearest
    captions of each caption's split (parallel over shards of targets), then its ``k``
    nearest allowed ones, keyed by its part (``trees``: the side input of ``plan_trees``)."""

    def __init__(
        self,
        corpus: SharedCorpus,
        config: StrategyConfig,
        *,
        k: int,
        searched: int,
        trees: beam.PCollection,
    ):
        super().__init__()
        self._corpus, self._config, self._k = corpus, config, k
        self._searched, self._trees = searched, trees

    def expand(self, indexed):
        return (
            indexed
            | "SearchNeighbourhoods"
            >> SearchNeighbourhoods(
                corpus=self._corpus,
                find=top_neighbours(self._searched),
                shard_size=self._config.shard_size,
                batch_size=self._config.batch_size,
            )
            | "Allowed"
            >> beam.ParDo(
                _AllowedPairs(self._corpus, self._config.rules, self._k),
                trees=beam.pvalue.AsSingleton(self._trees),
            )
        )
