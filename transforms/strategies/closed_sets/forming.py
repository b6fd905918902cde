"""Forming closed sets in parts: each part of a split grouped on one worker at a time.

A part's edges (``pairs.AllowedPairs``) reach it through files, keyed by (split, part).
Within the part: the grouping over its kNN edges (``grouping.form_sets``: clique packing
for closeness, repair and overlay sets for coverage), then a *border set* for each caption
it left out, among that caption's own candidates in the part, every pair among them checked
against the rules directly (``cliques.border_sets``). What is still left out goes on to the
border pass (``border.BorderPass``), and so does the room of the captions the part filled.
"""

from typing import NamedTuple

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from schemas.layout import EDGES_DIRECTORY
from schemas.records import Selection
from transforms.corpus.neighbours import SharedCorpus
from transforms.progress import Progress, timed
from transforms.seeds import keyed_int
from transforms.spill import GroupThroughFiles
from transforms.strategies.closed_sets.cliques import COVERED, border_sets
from transforms.strategies.closed_sets.grants import CAPACITY, Room
from transforms.strategies.closed_sets.grouping import form_sets
from transforms.strategies.closed_sets.leftovers import (
    BORDER_CANDIDATES,
    LEFTOVERS,
    border_candidates,
    graph_weights,
    leftover_graphs,
)
from transforms.strategies.closed_sets.pairs import Edges, merged
from transforms.strategies.closed_sets.parts import PartKey, PartTree
from transforms.strategies.closed_sets.selections import set_selections
from transforms.strategies.config import StrategyConfig
from transforms.strategies.validity import ValidityRules

# The folder the edges reach their part through (removed once every part is grouped).


def part_graph(edges: Edges) -> tuple[np.ndarray, ...]:
    """(neighbours, similarity, allowed) over local indices 0..len(targets)-1 of a part:
    candidates outside the part are dropped (-1, not allowed).

    >>> graph = part_graph(Edges(np.array([3, 5]), np.array([[5, 9], [3, -1]]),
    ...                          np.array([[0.5, 0.25], [0.5, 0.0]]),
    ...                          np.array([[True, True], [True, False]])))
    >>> [g.tolist() for g in graph]
    [[[1, -1], [0, -1]], [[0.5, 0.0], [0.5, 0.0]], [[True, False], [True, False]]]
    """
    rows = edges.targets
    found = np.searchsorted(rows, np.maximum(edges.candidates, 0)).clip(max=len(rows) - 1)
    inside = (edges.candidates >= 0) & (rows[found] == edges.candidates)
    local = np.where(inside, found, -1)
    similarity = np.where(inside, edges.sim_pv, 0.0).astype(np.float32)
    return local.astype(np.int64), similarity, edges.allowed & inside


def memberships(sets: np.ndarray, size: int) -> np.ndarray:
    """For each set member, which of its caption's memberships this is (1, 2, ...).

    >>> memberships(np.array([[0, 1], [1, 2], [1, 0]]), 3).tolist()
    [[1, 1], [2, 1], [3, 2]]
    """
    seen = np.zeros(size, dtype=np.int64)
    count = np.zeros(sets.shape, dtype=np.int64)
    for s, members in enumerate(sets):
        for j, member in enumerate(members):
            seen[member] += 1
            count[s, j] = seen[member]
    return count


@beam.typehints.with_output_types(
    Selection, **{LEFTOVERS: tuple[PartKey, Edges], CAPACITY: tuple[PartKey, Room]}
)
class _FormSets(beam.DoFn):
    """One part's edges -> its sets' selections.

    Within the part: the grouping over its kNN edges, then border sets for the captions it
    left out among their candidates in the part. What is still left out goes on to
    ``LEFTOVERS`` with all its candidates, across the part's border too (the border pass
    sets or skips it: only there is it known whether another part's leftover takes it), and
    so do the captions the part filled (a ``Room`` with no number free).
    """

    def __init__(
        self,
        corpus: SharedCorpus,
        rules: ValidityRules,
        lam: float,
        seed: int,
        shard_size: int,
        max_memberships: int,
    ):
        self._corpus, self._rules, self._lam, self._seed = corpus, rules, lam, seed
        self._shard_size, self._max = shard_size, max_memberships
        self._sets = Metrics.counter("closed_sets", "sets")
        # what a worker holds at once, for tests and the benchmark: no part may exceed the size
        self._oversized = Metrics.counter("closed_sets", "captions_in_parts_over_shard_size")
        self._scratch = self._progress = None

    def process(self, keyed: tuple[PartKey, list[Edges]], trees: dict[str, PartTree]):
        (split, part, directory), batches = keyed
        if self._progress is None:  # a part takes seconds to minutes: say how many are done
            total = sum(tree.parts for tree in trees.values())
            self._progress = Progress("closed_sets", "parts", total, interval=0.0)
        searchable = self._corpus.acquire(directory)
        corpus, pool = searchable.corpus, searchable.pools[split]
        if self._scratch is None:
            self._scratch = corpus.ngrams.scratch()
        edges = merged(batches)
        rows = edges.targets
        if len(rows) > self._shard_size:
            self._oversized.inc(len(rows))
        seed = keyed_int(self._seed, f"{split}/{part}")
        local, similarity, inside = part_graph(edges)
        with timed("closed_sets", "form"):
            sets = form_sets(local, similarity, inside, seed=seed, max_memberships=self._max)
        left = np.setdiff1d(np.arange(len(rows)), sets.ravel())
        reasons = np.zeros(0, np.int64)
        if len(left):  # the part's own border sets: its counts are exact here
            within = Edges(rows[left], edges.candidates[left], edges.sim_pv[left], inside[left])
            waiting = np.zeros(len(corpus), bool)
            waiting[rows[left]] = True
            with timed("closed_sets", "leftover_graphs"):
                within, _ = border_candidates(
                    corpus, within, self._rules, self._scratch, waiting, BORDER_CANDIDATES
                )
                graphs = leftover_graphs(corpus, pool, within, self._rules, self._scratch)
            count = np.bincount(sets.ravel(), minlength=len(rows))
            with timed("closed_sets", "form"):
                extra, reasons = border_sets(
                    graphs.targets, graphs.candidates, graph_weights(pool, graphs),
                    lambda ids: self._max - count[np.searchsorted(rows, ids)], seed=seed,
                )  # fmt: skip
            sets = np.concatenate([sets, np.searchsorted(rows, extra)])
        self._sets.inc(len(sets))
        self._progress.advance(1)
        yield from set_selections(
            corpus, pool, rows[sets], memberships(sets, len(rows)), self._lam, self._rules.limit
        )
        full = np.flatnonzero(np.bincount(sets.ravel(), minlength=len(rows)) >= self._max)
        if self._max > 1 and len(full):  # with 1, the border pass uses leftovers only
            filled = Room(rows[full], np.zeros(len(full), np.int64))
            yield beam.pvalue.TaggedOutput(CAPACITY, ((split, part, directory), filled))
        onward = left[reasons != COVERED]  # the border pass decides for every one of them
        if len(onward):
            out = Edges(rows[onward], edges.candidates[onward], edges.sim_pv[onward],
                        edges.allowed[onward])  # fmt: skip
            yield beam.pvalue.TaggedOutput(LEFTOVERS, ((split, part, directory), out))


class Formed(NamedTuple):
    """What the parts give: their sets' selections, the captions they left out (keyed by
    part, with all their candidates) and the room of the captions they filled."""

    selections: beam.PCollection
    leftovers: beam.PCollection
    capacity: beam.PCollection


class FormSets(beam.PTransform):
    """((split, part, directory), Edges) -> ``Formed``: the edges grouped by part through
    files under ``folder`` (``GroupThroughFiles``), each part's sets formed (``_FormSets``).
    ``trees``: the side input of ``plan_trees``."""

    def __init__(
        self,
        corpus: SharedCorpus,
        config: StrategyConfig,
        shard_size: int,
        max_memberships: int,
        *,
        folder: beam.PCollection,
        trees: beam.PCollection,
    ):
        super().__init__()
        self._corpus, self._config = corpus, config
        self._shard_size, self._max = shard_size, max_memberships
        self._folder, self._trees = folder, trees

    def expand(self, edges):
        config = self._config
        formed = (
            edges
            | "ByPart"
            >> GroupThroughFiles(folder=self._folder, name=EDGES_DIRECTORY, fence=config.fence)
            | "FormSets"
            >> beam.ParDo(
                _FormSets(
                    self._corpus,
                    config.rules,
                    config.score_lambda,
                    config.seed,
                    self._shard_size,
                    self._max,
                ),
                trees=beam.pvalue.AsSingleton(self._trees),
            ).with_outputs(LEFTOVERS, CAPACITY, main="selections")
        )
        return Formed(formed.selections, formed[LEFTOVERS], formed[CAPACITY])
