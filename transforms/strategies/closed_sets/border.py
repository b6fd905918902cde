"""The border pass: sets for the captions the parts left out, across the parts' borders.

What a part's grouping and its own border sets leave out gets a border set among its
candidates wherever they lie (searched ``LEFTOVER_DEPTH`` times deeper first when fewer than
``BORDER_CANDIDATES``): the pairs among them are checked in parallel (``_LeftoverGraphs``),
then the sets are chosen in ``BORDER_ROUNDS`` rounds up the part tree. Round r groups the
leftovers of a region of 2 ** r parts, keyed by (split, node). The free membership numbers
of each caption a leftover asks for are granted to one region (``_Grant``, keyed by
the caption's part: the region that asks most; a leftover's own region keeps all but its
highest, which the region that asks most besides may give out), so the regions choose in
parallel and no caption exceeds its room. What a round leaves out goes on to the parent
region, and the room it used back to each caption's part. No group holds more than eight
parts' leftovers, whatever the corpus size.
"""

from collections.abc import Iterator
from typing import NamedTuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from schemas.layout import BORDER_DIRECTORY
from schemas.records import SKIPPED, Selection, Skip
from transforms.corpus.neighbours import SharedCorpus
from transforms.corpus.store import Corpus
from transforms.progress import Progress, timed, timed_items
from transforms.seeds import keyed_int
from transforms.spill import GroupThroughFiles, RemoveAfter, ThroughFiles
from transforms.strategies.closed_sets.cliques import COVERED, LEFT_OUT, border_sets
from transforms.strategies.closed_sets.grants import (
    CAPACITY,
    Grant,
    Requests,
    Room,
    bits,
    every_number,
    granted,
    looked_up,
    merged_room,
    numbered,
    requests_of,
    shared,
)
from transforms.strategies.closed_sets.leftovers import (
    DEPTH_COUNTERS,
    LEFTOVERS,
    Keyed,
    LeftoverGraphs,
    Leftovers,
    Waiting,
    graph_weights,
    leftover_graphs,
    searched_deeper,
)
from transforms.strategies.closed_sets.pairs import Edges
from transforms.strategies.closed_sets.parts import PartKey, PartTree, parts_of
from transforms.strategies.closed_sets.selections import set_selections
from transforms.strategies.config import StrategyConfig
from transforms.strategies.validity import ValidityRules

# Rounds of the border pass: round r works in regions of 2 ** r parts (the last: at most 8
# parts' leftovers in one group, whatever the corpus size), or the whole split if smaller.
BORDER_ROUNDS = 3
KEPT_CHUNK = 4096  # leftovers whose weights kept() reorders at a time
# Skip reasons of a caption in no set, one per cliques.LEFT_OUT reason.
LEFT_OUT_REASONS = {code: f"decoys/closed_set_{why}" for code, why in LEFT_OUT.items()}


def skip(corpus: Corpus, row: int, reason: int, split: str) -> beam.pvalue.TaggedOutput:
    """A caption in no set, counted and reported under why (``LEFT_OUT_REASONS``)."""
    why = LEFT_OUT_REASONS[int(reason)]
    Metrics.counter(*why.split("/")).inc()  # "decoys", "closed_set_<why>"
    caption = corpus.caption(int(row))
    return beam.pvalue.TaggedOutput(SKIPPED, Skip(why, caption.caption_id, split))


@beam.typehints.with_output_types(Keyed)
class _LeftoverGraphs(beam.DoFn):
    """Leftovers -> their graphs, those short of candidates searched deeper first."""

    def __init__(self, corpus: SharedCorpus, rules: ValidityRules, searched: int):
        self._corpus, self._rules, self._searched = corpus, rules, searched
        self._short = [Metrics.counter("closed_sets", name) for name in DEPTH_COUNTERS]
        self._scratch = self._progress = None

    def process(
        self,
        keyed: tuple[PartKey, Edges],
        trees: dict[str, PartTree],
        total: int,
        waiting: np.ndarray,
    ):
        (split, _, directory), edges = keyed
        if self._progress is None:  # minutes at 3.3M captions, after the parts' last line
            self._progress = Progress("closed_sets", "leftovers", total)
        searchable = self._corpus.acquire(directory)
        if self._scratch is None:
            self._scratch = searchable.corpus.ngrams.scratch()
        corpus, pool = searchable.corpus, searchable.pools[split]
        with timed("closed_sets", "leftover_graphs"):
            edges, short = searched_deeper(
                corpus, pool, edges, self._rules, self._scratch, self._searched, waiting
            )
            graphs = leftover_graphs(corpus, pool, edges, self._rules, self._scratch)
            nodes = graphs.nodes
            parts = np.full(nodes.shape, -1, np.int64)
            parts[nodes >= 0] = parts_of(searchable, trees[split], split, nodes[nodes >= 0])
        for counter, rows in zip(self._short, short, strict=True):
            counter.inc(rows)
        self._progress.advance(len(edges.targets))
        yield keyed[0], Leftovers(graphs, parts)


def batches_of(keyed: tuple[PartKey, Edges], size: int) -> Iterator[tuple[PartKey, Edges]]:
    """A part's leftovers in batches of at most ``size``, so their graphs spread over workers."""
    key, edges = keyed
    for start in range(0, len(edges.targets), size):
        yield key, Edges(*(column[start : start + size] for column in edges))


def parent(keyed: Keyed) -> Keyed:
    """Keyed by a node of the part tree (leaves: the parts) -> keyed by its parent, whose
    region is the union of its two children's (the root is its own parent).

    >>> parent((("train", 5, "d"), None)), parent((("train", 0, "d"), None))
    ((('train', 2, 'd'), None), (('train', 0, 'd'), None))
    """
    (split, node, directory), value = keyed
    return (split, node >> 1, directory), value


def kept(
    candidates: np.ndarray, weights: np.ndarray, inside: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(candidates, weights) with only the ``inside`` candidates: those first, best first,
    -1 padded; NaN weights for the rest. ``weights`` is reordered in place, ``KEPT_CHUNK``
    leftovers at a time: a border group's are a few hundred MB.

    >>> candidates, weights = kept(np.array([[7, 8, 9]]), np.zeros((1, 4, 4)),
    ...                            np.array([[False, True, True]]))
    >>> candidates.tolist(), np.isnan(weights[0]).sum(axis=1).tolist()
    ([[8, 9, -1]], [1, 1, 1, 4])
    """
    inside = inside & (candidates >= 0)
    order = np.argsort(~inside, axis=1, kind="stable")
    keep = np.take_along_axis(inside, order, axis=1)
    candidates = np.where(keep, np.take_along_axis(candidates, order, axis=1), -1)
    nodes = np.concatenate([np.zeros((len(order), 1), np.int64), order + 1], axis=1)
    present = np.concatenate([np.ones((len(order), 1), bool), keep], axis=1)
    for start in range(0, len(order), KEPT_CHUNK):
        rows = slice(start, start + KEPT_CHUNK)
        batch = np.arange(len(nodes[rows]))[:, None, None]
        chunk = weights[rows][batch, nodes[rows, :, None], nodes[rows, None, :]]
        chunk[~(present[rows, :, None] & present[rows, None, :])] = np.nan
        weights[rows] = chunk
    return candidates, weights


@beam.typehints.with_output_types(tuple[PartKey, Grant], **{CAPACITY: tuple[PartKey, Room]})
class _Grant(beam.DoFn):
    """One part's requests -> each requested caption's free numbers, granted to at most two
    regions (a leftover's own region keeps all but the highest, which the region that asks
    most may use): no two groups can give out the same number, so they choose in parallel.
    Not in the last round (``share`` False): a leftover another region covered there would
    be skipped by its own (measured: sharing there too, settled by part afterwards, covered
    0.2 points more of a 64-part train split). The part's records go on to the next round."""

    def __init__(self, max_memberships: int, *, share: bool):
        self._max, self._share = max_memberships, share

    def process(self, keyed: tuple[PartKey, list[Requests | Room]]):
        return timed_items("closed_sets", "grants", self._granted(keyed))

    def _granted(self, keyed: tuple[PartKey, list[Requests | Room]]):
        (split, part, directory), elements = keyed
        records = merged_room([e for e in elements if isinstance(e, Room)])
        yield beam.pvalue.TaggedOutput(CAPACITY, ((split, part, directory), records))
        requests = [e for e in elements if isinstance(e, Requests)]
        if not requests:
            return
        rows, first, second = granted(
            np.concatenate([r.rows for r in requests]),
            np.concatenate([np.full(len(r.rows), r.region) for r in requests]),
            np.concatenate([r.own for r in requests]),
        )
        own = np.isin(rows, np.concatenate([r.rows[r.own] for r in requests]))
        held = (1 << (self._max - 1)) if self._max > 1 else 0  # one set, numbered max
        default = np.where(own, every_number(self._max), held)
        free = looked_up(records.rows, records.free, rows, default)
        shares = shared(free, own & (second >= 0) & self._share)
        for region in np.unique(np.concatenate([first, second[second >= 0]])):
            for to, share in zip((first, second), shares, strict=True):
                mine = to == region
                if mine.any():
                    grant = Grant(rows[mine], share[mine], free[mine])
                    yield (split, int(region), directory), grant


@beam.typehints.with_output_types(
    Selection, **{SKIPPED: Skip, LEFTOVERS: Keyed, CAPACITY: tuple[PartKey, Room]}
)
class _BorderSets(beam.DoFn):
    """One round of the border pass in a region of a split: the leftovers there -> border
    sets' selections among the candidates granted to the region (``_Grant``).

    Regions are nodes of the part tree, ``shift`` levels above the parts, so no group holds
    more than ``2 ** shift`` parts' leftovers. What a round leaves out goes on to the
    parent region, and the room the round used to each caption's part; the last round (or
    the one over the whole split) skips it, counted under why.
    """

    def __init__(
        self,
        corpus: SharedCorpus,
        lam: float,
        limit: float,
        seed: int,
        max_memberships: int,
        *,
        shift: int,
        last: bool,
    ):
        self._corpus, self._lam, self._limit, self._seed = corpus, lam, limit, seed
        self._max, self._shift, self._last = max_memberships, shift, last
        self._sets = Metrics.counter("closed_sets", "border_sets")
        self._groups = Metrics.counter("closed_sets", "border_groups")
        self._entered = Metrics.counter("closed_sets", "border_leftovers")
        self._elsewhere = Metrics.counter("closed_sets", "border_skipped_with_candidates_elsewhere")
        self._covered_elsewhere = Metrics.counter("closed_sets", "border_covered_elsewhere")

    def process(
        self,
        keyed: tuple[PartKey, list[Leftovers | Grant]],
        trees: dict[str, PartTree],
    ):
        (split, node, directory), elements = keyed
        batches = [e for e in elements if isinstance(e, Leftovers)]
        if not batches:
            return
        grants = [e for e in elements if isinstance(e, Grant)]
        order = np.argsort(np.concatenate([g.rows for g in grants]))
        grant = Grant(*(np.concatenate([g[i] for g in grants])[order] for i in range(3)))
        searchable = self._corpus.acquire(directory)
        corpus, pool = searchable.corpus, searchable.pools[split]
        here = merged_leftovers(batches)
        # a leftover that another region gave one of its numbers is in a set: covered
        targets = here.graphs.targets
        free = looked_up(grant.rows, grant.free, targets, np.zeros_like(targets))
        uncovered = free == every_number(self._max)
        self._covered_elsewhere.inc(int((~uncovered).sum()))
        here = rows_of(here, uncovered)
        leftovers = here.graphs.targets
        if not len(leftovers):
            return
        root = self._shift >= trees[split].depth  # the region is the whole split
        self._groups.inc()
        if self._shift == 1:
            self._entered.inc(len(leftovers))
        with timed("closed_sets", "border"):
            weights = graph_weights(pool, here.graphs)
            inside = np.isin(here.graphs.candidates, grant.rows)
            candidates, weights = kept(here.graphs.candidates, weights, inside)
            where = "border" if root else f"border/{self._shift}/{node}"
            sets, reasons = border_sets(
                leftovers, candidates, weights,
                lambda rows: bits(
                    looked_up(grant.rows, grant.share, rows, np.zeros_like(rows)), self._max
                ),
                seed=keyed_int(self._seed, f"{split}/{where}"),
            )  # fmt: skip
            counts, room = numbered(sets, grant)
        self._sets.inc(len(sets))
        yield from set_selections(corpus, pool, sets, counts, self._lam, self._limit)
        left = reasons != COVERED
        if self._last or root:
            elsewhere = (here.graphs.candidates >= 0) & ~inside
            self._elsewhere.inc(int((left & elsewhere.any(axis=1)).sum()))
            for row, reason in zip(leftovers[left], reasons[left], strict=True):
                yield skip(corpus, row, reason, split)
            return
        for part, mine in by_part(here, room.rows):
            update = Room(room.rows[mine], room.free[mine])
            yield beam.pvalue.TaggedOutput(CAPACITY, ((split, part, directory), update))
        if left.any():
            onward = (split, node, directory)
            yield beam.pvalue.TaggedOutput(LEFTOVERS, (onward, rows_of(here, left)))


def by_part(leftovers: Leftovers, rows: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(part, mask of ``rows`` in it) for each part ``rows`` (leftovers or candidates) lie in."""
    nodes, first = np.unique(leftovers.graphs.nodes.ravel(), return_index=True)
    parts = leftovers.parts.ravel()[first][np.searchsorted(nodes, rows)]
    for part in np.unique(parts):
        yield int(part), parts == part


def rows_of(leftovers: Leftovers, which: np.ndarray) -> Leftovers:
    return Leftovers(LeftoverGraphs(*(c[which] for c in leftovers.graphs)), leftovers.parts[which])


def merged_leftovers(batches: list[Leftovers]) -> Leftovers:
    """A region's leftovers as one, in target order (independent of how they arrived)."""
    targets = np.concatenate([b.graphs.targets for b in batches])
    order = np.argsort(targets)
    graphs = LeftoverGraphs(
        *(np.concatenate([b.graphs[i] for b in batches])[order] for i in range(3))
    )
    return Leftovers(graphs, np.concatenate([b.parts for b in batches])[order])


class Bordered(NamedTuple):
    """What the border pass gives: each round's selections, kept apart (``ThroughFiles``
    merges them by their pieces, where a Flatten would hold them all in the runner), and
    the captions it skipped."""

    selections: tuple[beam.PCollection, ...]
    skipped: beam.PCollection


class BorderPass(beam.PTransform):
    """(leftovers, capacity) of the parts (``forming.FormSets``) -> ``Bordered``: the
    leftovers' graphs, then ``BORDER_ROUNDS`` rounds of requests, grants and border sets up
    the part tree (module docstring). The leftovers reach their graphs through files under
    ``folder``, and each round's groups theirs under ``rounds_folder``, which goes after the
    last round; ``trees``: the side input of ``plan_trees``."""

    def __init__(
        self,
        corpus: SharedCorpus,
        config: StrategyConfig,
        max_memberships: int,
        *,
        searched: int,
        folder: beam.PCollection,
        rounds_folder: beam.PCollection,
        trees: beam.PCollection,
    ):
        super().__init__()
        self._corpus, self._config, self._max = corpus, config, max_memberships
        self._searched, self._folder, self._trees = searched, folder, trees
        self._rounds_folder = rounds_folder

    def expand(self, formed):
        leftovers, capacity = formed
        config = self._config
        total = (
            leftovers
            | "LeftoverSizes" >> beam.Map(lambda keyed: len(keyed[1].targets))
            | "LeftoverTotal" >> beam.CombineGlobally(sum)
        )
        waiting = (
            leftovers
            | "LeftoverRows" >> beam.Map(lambda keyed: keyed[1].targets)
            | "Waiting" >> beam.CombineGlobally(Waiting())
        )
        leftovers = (
            leftovers
            | "Batches" >> beam.FlatMap(batches_of, size=config.batch_size)
            | "Distribute" >> ThroughFiles(folder=self._folder, name=LEFTOVERS, fence=config.fence)
            | "LeftoverGraphs"
            >> beam.ParDo(
                _LeftoverGraphs(self._corpus, config.rules, self._searched),
                trees=beam.pvalue.AsSingleton(self._trees),
                total=beam.pvalue.AsSingleton(total),
                waiting=beam.pvalue.AsSingleton(waiting),
            )
        )
        selections, skipped, capacity = [], [], (capacity,)
        for shift in range(1, BORDER_ROUNDS + 1):
            rounds, grants = self._round(shift, leftovers, capacity)
            selections.append(rounds.selections)
            skipped.append(rounds[SKIPPED])
            leftovers = rounds[LEFTOVERS]
            capacity = (grants[CAPACITY], rounds[CAPACITY])
        _ = selections[-1] | "RemoveRounds" >> RemoveAfter(self._rounds_folder)
        return Bordered(tuple(selections), skipped | "Skipped" >> beam.Flatten())

    def _round(
        self, shift: int, leftovers: beam.PCollection, capacity: tuple[beam.PCollection, ...]
    ) -> tuple[beam.pvalue.DoOutputsTuple, beam.pvalue.DoOutputsTuple]:
        """Round ``shift``: the regions' requests, the parts' grants, the regions' sets; each
        grouping through files (a Flatten, let alone a GroupByKey, of the leftovers' graphs
        would be held whole in the local runner's process)."""
        config = self._config
        regional = leftovers | f"ToRegions{shift}" >> beam.Map(parent)
        grants = (
            (regional | f"Requests{shift}" >> beam.FlatMap(requests_of), *capacity)
            | f"ByPart{shift}" >> self._grouped(f"{shift}-parts")
            | f"Grant{shift}"
            >> beam.ParDo(_Grant(self._max, share=shift < BORDER_ROUNDS)).with_outputs(
                CAPACITY, main="grants"
            )
        )
        rounds = (
            (regional, grants.grants)
            | f"ByRegion{shift}" >> self._grouped(f"{shift}-regions")
            | f"BorderSets{shift}"
            >> beam.ParDo(
                _BorderSets(
                    self._corpus,
                    config.score_lambda,
                    config.rules.limit,
                    config.seed,
                    self._max,
                    shift=shift,
                    last=shift == BORDER_ROUNDS,
                ),
                trees=beam.pvalue.AsSingleton(self._trees),
            ).with_outputs(SKIPPED, LEFTOVERS, CAPACITY, main="selections")
        )
        return rounds, grants

    def _grouped(self, name: str) -> GroupThroughFiles:
        folder = self._rounds_folder | f"Folder {name}" >> beam.Map(FileSystems.join, name)
        return GroupThroughFiles(folder=folder, name=BORDER_DIRECTORY, fence=self._config.fence)
