"""``--decoys closed_sets``: decoys no text-only model can tell from the target, by construction.

The captions of each split are grouped into *sets* of five captions of five
different images, mutually close in PV space, every pair valid both ways
round (``validity.pairs_allowed``). Each member of a set is the target of its
own instance and the other four are its decoys. The five instances of a set
show the same five option texts, so any function of the option texts (hub,
longest option, a learned text-only model, ...) picks the same text in all
five and is right on exactly one: text-only accuracy is exactly chance, on
every split, whatever the model. Sets form within a split, so the novelty
leak of a whole-corpus pool cannot arise.

Stages, none of which holds a whole split's neighbour graph:

1. ``SearchNeighbourhoods``: the ``K * --set_search_depth`` nearest captions of the same
   split (parallel over shards of targets).
2. ``AllowedPairs``: which pairs may share a set, each caption's K nearest such, and the
   *part* of the split it lies in (``parts.py``: regions of PV space of at most
   ``--set_shard_size`` captions; parallel).
3. ``FormSets``: the grouping itself (``grouping.form_sets``: clique packing for
   closeness, repair and overlay sets for coverage) over each part's own kNN edges, one
   part per worker at a time, keyed by (split, part); then a *border set* for each caption
   it left out, among that caption's own candidates in the part, every pair among them
   checked against the rules directly (``grouping.border_sets``).
4. ``BorderSets``: what is still left out gets a border set among its candidates wherever
   they lie (searched ``LEFTOVER_DEPTH`` times deeper first when fewer than K): the pairs
   among them are checked in parallel (``LeftoverGraphs``), then one pass per split over
   these leftovers alone chooses the sets.

Checking the pairs among a caption's candidates directly, rather than only the kNN edges,
finds the sets the kNN graph misses where most near captions are paraphrases the rules
turn away (synthetic corpora, large splits).

A caption in no set is skipped and counted under why (``decoys/closed_set_<why>``):
``no_valid_neighbours`` (fewer than four candidates pass the validity rules with it),
``no_5_clique`` (no four of them are mutually valid), ``neighbours_taken`` (every such set
needs a caption already in as many sets as allowed). With ``--set_memberships`` m a caption
sits in at most m sets, and its further instances' example ids end in ``.2``, ``.3``, ...;
a caption a part holds joins at most one set across borders, under ``.m``.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from schemas.options import Group, below, option
from schemas.records import SKIPPED, Selection, Skip
from transforms.corpus.neighbours import (
    BuildIndexes,
    Neighbourhood,
    Pool,
    SearchableCorpus,
    SearchNeighbourhoods,
    SharedCorpus,
    search,
    top_neighbours,
)
from transforms.corpus.split import SPLITS
from transforms.corpus.store import Corpus, CorpusRef
from transforms.corpus.surface import sim_surf_batch
from transforms.progress import timed
from transforms.seeds import keyed_int
from transforms.strategies.base import (
    NEIGHBOURS_MAY_FIT,
    DecoyStrategy,
    StrategyConfig,
    StrategyOptions,
)
from transforms.strategies.choose import decoys_at
from transforms.strategies.grouping import COVERED, LEFT_OUT, border_sets, form_sets
from transforms.strategies.invariants import WrittenDataset, holds
from transforms.strategies.parts import PartTree, depth_for, part_of, plan_parts, sample_rows
from transforms.strategies.scoring import best_first, score
from transforms.strategies.validity import (
    RejectionCounters,
    ValidityRules,
    mutual_allowed,
    pairs_allowed,
)

LEFTOVERS = "leftovers"  # FormSets' output of the captions its part left out
# Leftovers short of K allowed candidates are searched this many times deeper again.
LEFTOVER_DEPTH = 4
# A border set is chosen among this many of a leftover's nearest allowed candidates: the
# pairs among them are checked directly, so the cost grows with its square (50 took 3/4
# of the 124k benchmark's busy time; measured in the README).
BORDER_CANDIDATES = 32
# Skip reasons of a caption in no set, one per grouping.LEFT_OUT reason.
LEFT_OUT_REASONS = {code: f"decoys/closed_set_{why}" for code, why in LEFT_OUT.items()}


@dataclass(frozen=True)
class ClosedSetsOptions(StrategyOptions):
    set_neighbours: int = option(
        50,
        "a caption's set is formed among its K nearest captions of its split",
        group=Group.DECOYS,
    )
    set_search_depth: int = option(
        4,
        "captions searched per caption, as a multiple of K; its K nearest that pass the "
        "validity rules both ways round are the ones its sets are formed among",
        group=Group.DECOYS,
    )
    set_memberships: int = option(
        3,
        "the most sets a caption may belong to (1: a partition; more: captions the partition "
        "leaves out get overlay sets among captions in fewer sets)",
        group=Group.DECOYS,
    )
    set_shard_size: int = option(
        50_000,
        "sets form in parts of a split of at most this many captions, cut along PV space, in "
        "parallel; the captions a part leaves out get sets across the parts' borders",
        group=Group.DECOYS,
    )

    def problems(self) -> list[str]:
        small = ["--set_neighbours must be at least 4 (a set has five members)"]
        return (small if self.set_neighbours < 4 else []) + below(
            self, 1, ("set_memberships", "set_search_depth", "set_shard_size")
        )


class Edges(NamedTuple):
    """A batch of targets, their candidates and which pairs may share a set."""

    targets: np.ndarray  # int64 (B,) corpus rows
    candidates: np.ndarray  # int64 (B, K) corpus rows, -1 padded
    sim_pv: np.ndarray  # float64 (B, K)
    allowed: np.ndarray  # bool (B, K)


class AtLimit(NamedTuple):
    """Captions of a part in as many sets as allowed: the border pass may not use them."""

    rows: np.ndarray  # int64 corpus rows


class LeftoverGraphs(NamedTuple):
    """Leftover captions, their allowed candidates and which pairs among them may share a
    set. The pairs travel as bits and the cosines are recomputed where the sets are chosen
    (:func:`graph_weights`): as float32 weights, a 124k-image run's train leftovers made one
    grouped element of 656 MB for the border pass (about 4.6 KB a leftover; now 0.4 KB)."""

    targets: np.ndarray  # int64 (B,) corpus rows
    candidates: np.ndarray  # int64 (B, K) allowed candidates first, -1 padded
    allowed: np.ndarray  # uint8 (B, K + 1, ceil((K + 1) / 8)): packed bits, [target, *candidates]


def first_allowed(
    candidates: np.ndarray, sim_pv: np.ndarray, allowed: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's ``k`` best allowed candidates, best first: (candidates, sim_pv, allowed),
    padded with -1 (not allowed) where a row has fewer.

    >>> rows = first_allowed(np.array([[7, 8, 9]]), np.array([[0.9, 0.8, 0.7]]),
    ...                      np.array([[False, True, True]]), 2)
    >>> [row.tolist() for row in rows]
    [[[8, 9]], [[0.8, 0.7]], [[True, True]]]
    """
    order = np.argsort(~allowed, axis=1, kind="stable")[:, :k]
    keep = np.take_along_axis(allowed, order, axis=1)
    return (
        np.where(keep, np.take_along_axis(candidates, order, axis=1), -1),
        np.where(keep, np.take_along_axis(sim_pv, order, axis=1), 0.0),
        keep,
    )


def plan_trees(
    ref: CorpusRef, *, corpus: SharedCorpus, shard_size: int, seed: int
) -> dict[str, PartTree]:
    """Each split's parts, planned from a seeded sample of its vectors (a few KB)."""
    pools = corpus.acquire(ref.directory).pools
    trees = {}
    for split in SPLITS:
        pool = pools[split]
        depth = depth_for(len(pool.rows), shard_size)
        sample = pool.index.reconstruct_batch(sample_rows(len(pool.rows), depth, seed))
        trees[split] = plan_parts(sample, depth, seed)
        Metrics.counter("closed_sets", f"parts_{split}").inc(trees[split].parts)
    return trees


def parts_of(searchable: SearchableCorpus, tree: PartTree, split: str, rows: np.ndarray):
    """The part of each of ``rows`` (captions of ``split``)."""
    if tree.depth == 0:
        return np.zeros(len(rows), np.int64)
    pool = searchable.pools[split]
    return part_of(tree, pool.index.reconstruct_batch(np.searchsorted(pool.rows, rows)))


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
                yield (split, int(p), batch.directory), edges


def merged(edges: Iterable[Edges]) -> Edges:
    """The batches of one key as one, in target order (independent of how they arrived)."""
    edges = list(edges)
    targets = np.concatenate([e.targets for e in edges])
    order = np.argsort(targets)
    return Edges(
        targets[order],
        np.concatenate([e.candidates for e in edges])[order],
        np.concatenate([e.sim_pv for e in edges])[order],
        np.concatenate([e.allowed for e in edges])[order],
    )


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


def set_selections(
    corpus: Corpus, pool: Pool, sets: np.ndarray, counts: np.ndarray, lam: float, limit: float
):
    """One Selection per member of each set (corpus rows); ``counts``: which membership of
    its caption each is (example ids of the second and later end in ``.<count>``)."""
    scratch = corpus.ngrams.scratch()
    for members, member_counts in zip(sets, counts, strict=True):
        cosines = cosines_among(pool, members)
        for k, target_row in enumerate(members):
            others = np.delete(np.arange(len(members)), k)
            candidates = members[others]
            sim_pv = cosines[k, others]
            sim_surf = sim_surf_batch(corpus.ngrams, members[k : k + 1], candidates[None], scratch)[
                0
            ]
            scores = score(sim_pv, sim_surf, lam, limit)
            target = corpus.caption(int(target_row))
            if member_counts[k] > 1:
                target = target._replace(example_id=f"{target.example_id}.{member_counts[k]}")
            ordered = best_first(scores, candidates, np.arange(len(candidates)))
            similarities = (candidates, sim_pv, sim_surf, scores)
            yield Selection(target, decoys_at(corpus, *similarities, ordered))


class _FormSets(beam.DoFn):
    """One part's edges -> its sets' selections.

    Within the part: the grouping over its kNN edges, then border sets for the captions it
    left out among their candidates in the part. What is still left out goes on to
    ``LEFTOVERS`` with all its candidates, across the part's border too (the border pass
    sets or skips it: only there is it known whether another part's leftover takes it), and
    so do the captions the part filled (``AtLimit``).
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
        self._scratch = None

    def process(self, keyed: tuple[tuple[str, int, str], Iterable[Edges]]):
        (split, part, directory), batches = keyed
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
            within = Edges(rows[left], np.where(inside[left], edges.candidates[left], -1),
                           edges.sim_pv[left], inside[left])  # fmt: skip
            with timed("closed_sets", "leftover_graphs"):
                graphs = leftover_graphs(corpus, pool, within, self._rules, self._scratch)
            count = np.bincount(sets.ravel(), minlength=len(rows))
            with timed("closed_sets", "form"):
                extra, reasons = border_sets(
                    graphs.targets, graphs.candidates, graph_weights(pool, graphs),
                    lambda ids: self._max - count[np.searchsorted(rows, ids)], seed=seed,
                )  # fmt: skip
            sets = np.concatenate([sets, np.searchsorted(rows, extra)])
        self._sets.inc(len(sets))
        yield from set_selections(
            corpus, pool, rows[sets], memberships(sets, len(rows)), self._lam, self._rules.limit
        )
        full = np.flatnonzero(np.bincount(sets.ravel(), minlength=len(rows)) >= self._max)
        if self._max > 1 and len(full):  # with 1, the border pass uses leftovers only
            yield beam.pvalue.TaggedOutput(LEFTOVERS, ((split, directory), AtLimit(rows[full])))
        onward = left[reasons != COVERED]  # the border pass decides for every one of them
        if len(onward):
            out = Edges(rows[onward], edges.candidates[onward], edges.sim_pv[onward],
                        edges.allowed[onward])  # fmt: skip
            yield beam.pvalue.TaggedOutput(LEFTOVERS, ((split, directory), out))


def skip(corpus: Corpus, row: int, reason: int, split: str) -> beam.pvalue.TaggedOutput:
    """A caption in no set, counted and reported under why (``LEFT_OUT_REASONS``)."""
    why = LEFT_OUT_REASONS[int(reason)]
    Metrics.counter(*why.split("/")).inc()  # "decoys", "closed_set_<why>"
    caption = corpus.caption(int(row))
    return beam.pvalue.TaggedOutput(SKIPPED, Skip(why, caption.caption_id, split))


def leftover_graphs(
    corpus: Corpus, pool: Pool, edges: Edges, rules: ValidityRules, scratch: np.ndarray
) -> LeftoverGraphs:
    """Which of each leftover's ``BORDER_CANDIDATES`` nearest allowed candidates may share a
    set with each other, and their cosines: the validity rules both ways round on every
    pair, as ``pairs_allowed``."""
    order = np.argsort(~edges.allowed, axis=1, kind="stable")[:, :BORDER_CANDIDATES]
    keep = np.take_along_axis(edges.allowed, order, axis=1)
    candidates = np.where(keep, np.take_along_axis(edges.candidates, order, axis=1), -1)
    nodes = np.concatenate([edges.targets[:, None], candidates], axis=1)
    allowed = np.zeros((*nodes.shape, nodes.shape[1]), dtype=bool)
    for b, row in enumerate(nodes):
        row = row[row >= 0]
        allowed[b, : len(row), : len(row)] = mutual_allowed(
            corpus, row, cosines_among(pool, row), rules, scratch
        )
    return LeftoverGraphs(edges.targets, candidates, np.packbits(allowed, axis=-1))


def cosines_among(pool: Pool, rows: np.ndarray) -> np.ndarray:
    """(n, n) PV cosines among ``rows`` (captions of ``pool``), from the index's vectors."""
    vectors = pool.index.reconstruct_batch(np.searchsorted(pool.rows, rows))
    return (vectors @ vectors.T).astype(np.float64)


def graph_weights(pool: Pool, graphs: LeftoverGraphs) -> np.ndarray:
    """float32 (B, K + 1, K + 1): the cosines among each leftover and its candidates, NaN
    where a pair may not share a set (``grouping.border_sets``' weights)."""
    nodes = np.concatenate([graphs.targets[:, None], graphs.candidates], axis=1)
    allowed = np.unpackbits(graphs.allowed, axis=-1, count=nodes.shape[1]).astype(bool)
    weights = np.full(allowed.shape, np.nan, dtype=np.float32)
    for b, row in enumerate(nodes):
        row = row[row >= 0]
        here = allowed[b, : len(row), : len(row)]
        weights[b, : len(row), : len(row)] = np.where(here, cosines_among(pool, row), np.nan)
    return weights


def searched_deeper(
    corpus: Corpus,
    pool: Pool,
    edges: Edges,
    rules: ValidityRules,
    scratch: np.ndarray,
    neighbours: int,
) -> Edges:
    """``edges`` with the rows that have fewer than K allowed candidates searched again,
    ``neighbours`` deep: the captions whose nearest are all paraphrases the rules turn away.
    """
    k = edges.candidates.shape[1]
    short = np.flatnonzero(edges.allowed.sum(axis=1) < k)
    if not len(short):
        return edges
    candidates, sim_pv = search(corpus, pool, edges.targets[short], neighbours)
    allowed, _ = pairs_allowed(
        corpus, edges.targets[short], candidates, sim_pv, rules, scratch, need=k
    )
    columns = [column.copy() for column in edges[1:]]
    for column, found in zip(columns, first_allowed(candidates, sim_pv, allowed, k), strict=True):
        column[short] = found
    return Edges(edges.targets, *columns)


class _LeftoverGraphs(beam.DoFn):
    """Leftovers -> their graphs, those short of candidates searched deeper first."""

    def __init__(self, corpus: SharedCorpus, rules: ValidityRules, neighbours: int):
        self._corpus, self._rules, self._neighbours = corpus, rules, neighbours
        self._scratch = None

    def process(self, keyed: tuple[tuple[str, str], Edges | AtLimit]):
        (split, directory), edges = keyed
        if isinstance(edges, AtLimit):
            yield keyed
            return
        searchable = self._corpus.acquire(directory)
        if self._scratch is None:
            self._scratch = searchable.corpus.ngrams.scratch()
        corpus, pool = searchable.corpus, searchable.pools[split]
        with timed("closed_sets", "leftover_graphs"):
            edges = searched_deeper(
                corpus, pool, edges, self._rules, self._scratch, self._neighbours
            )
            graphs = leftover_graphs(corpus, pool, edges, self._rules, self._scratch)
        yield (split, directory), graphs


def batches_of(keyed: tuple[tuple[str, str], Edges | AtLimit], size: int):
    """A part's leftovers in batches of at most ``size``, so their graphs spread over workers."""
    key, edges = keyed
    if isinstance(edges, AtLimit):
        yield keyed
        return
    for start in range(0, len(edges.targets), size):
        yield key, Edges(*(column[start : start + size] for column in edges))


class _BorderSets(beam.DoFn):
    """A split's leftovers -> border sets' selections, and a Skip for each caption in none."""

    def __init__(
        self, corpus: SharedCorpus, lam: float, limit: float, seed: int, max_memberships: int
    ):
        self._corpus, self._lam, self._limit, self._seed = corpus, lam, limit, seed
        self._max = max_memberships
        self._sets = Metrics.counter("closed_sets", "border_sets")
        self._leftovers = Metrics.counter("closed_sets", "border_leftovers")

    def process(self, keyed: tuple[tuple[str, str], Iterable[LeftoverGraphs | AtLimit]]):
        (split, directory), elements = keyed
        elements = list(elements)  # one pass over the grouped values, whatever the runner
        searchable = self._corpus.acquire(directory)
        corpus = searchable.corpus
        batches = [e for e in elements if isinstance(e, LeftoverGraphs)]
        full = [e.rows for e in elements if isinstance(e, AtLimit)]
        if not batches:
            return
        targets = np.concatenate([b.targets for b in batches])
        order = np.argsort(targets)
        width = max(b.candidates.shape[1] for b in batches)
        candidates = np.concatenate([pad_columns(b.candidates, width) for b in batches])[order]
        pool = searchable.pools[split]
        weights = [pad_square(graph_weights(pool, b), width + 1) for b in batches]
        weights = np.concatenate(weights)[order]
        self._leftovers.inc(len(targets))
        full = np.concatenate(full) if full else np.zeros(0, np.int64)
        leftovers = targets[order]

        def capacity_of(ids: np.ndarray) -> np.ndarray:
            """Leftovers are in no set yet; a caption some part holds may join one border set
            unless it is full (so never more than --set_memberships in all)."""
            others = np.where(np.isin(ids, full), 0, 1 if self._max > 1 else 0)
            return np.where(np.isin(ids, leftovers), self._max, others)

        with timed("closed_sets", "border"):
            sets, reasons = border_sets(
                leftovers, candidates, weights, capacity_of,
                seed=keyed_int(self._seed, f"{split}/border"),
            )  # fmt: skip
        self._sets.inc(len(sets))
        first = np.isin(sets, leftovers)  # a leftover's memberships count from 1; others take
        _, compact = np.unique(sets, return_inverse=True)  # the last, --set_memberships
        running = memberships(compact.reshape(sets.shape), compact.max(initial=-1) + 1)
        counts = np.where(first, running, self._max)
        yield from set_selections(corpus, pool, sets, counts, self._lam, self._limit)
        for row, reason in zip(leftovers, reasons, strict=True):
            if reason != COVERED:
                yield skip(corpus, row, reason, split)


def pad_columns(array: np.ndarray, width: int) -> np.ndarray:
    return np.pad(array, ((0, 0), (0, width - array.shape[1])), constant_values=-1)


def pad_square(array: np.ndarray, size: int) -> np.ndarray:
    extra = size - array.shape[1]
    return np.pad(array, ((0, 0), (0, extra), (0, extra)), constant_values=np.nan)


def closed_option_sets(dataset: WrittenDataset) -> None:
    """Instances come in sets: five instances share one option set, each member the target
    once, of five images; so any function of the option texts alone is right on exactly one
    instance of each set."""
    for rows in dataset.rows.values():
        by_set: dict[frozenset, list[dict]] = {}
        for row in rows:
            by_set.setdefault(frozenset(row["option_caption_ids"]), []).append(row)
        for members in by_set.values():
            ids = [row["example_id"] for row in members]
            holds(len(members) == 5, ids)
            targets = {row["target_caption_id"] for row in members}
            holds(targets == set(members[0]["option_caption_ids"]), ids)
            holds(len({row["image_id"] for row in members}) == 5, ids)
            holds(len({frozenset(row["options"]) for row in members}) == 1, ids)


class ClosedSets(DecoyStrategy):
    name = "closed_sets"
    summary = (
        "sets of 5 mutually close captions of 5 images within a split; each member is the target "
        "of one instance, the other 4 its decoys"
    )
    pools = ("split",)
    guarantee = (
        "exact: the 5 instances of a set share their option texts, so any text-only function "
        "is right on exactly 1 of 5"
    )
    limitations = NEIGHBOURS_MAY_FIT + (
        "Each caption is the target of up to `--set_memberships` instances, and the five "
        "instances of a set show the same five options: split-level accuracies count each set "
        "five times. Captions in no valid set are skipped and counted by why "
        "(`decoys/closed_set_no_valid_neighbours`, `decoys/closed_set_no_5_clique`, "
        "`decoys/closed_set_neighbours_taken`)."
    )
    invariants = (closed_option_sets,)
    Options = ClosedSetsOptions

    @classmethod
    def searched(cls, config: StrategyConfig) -> int:
        return config.options.set_neighbours * config.options.set_search_depth

    def expand(self, corpus_ref):
        config, own = self.config, self.config.options
        indexed = corpus_ref | "BuildIndex" >> BuildIndexes(corpus=self.corpus)
        trees = indexed | "PlanParts" >> beam.Map(
            plan_trees, corpus=self.corpus, shard_size=own.set_shard_size, seed=config.seed
        )
        formed = (
            indexed
            | "SearchNeighbourhoods"
            >> SearchNeighbourhoods(
                corpus=self.corpus,
                find=top_neighbours(self.searched(config)),
                shard_size=config.shard_size,
                batch_size=config.batch_size,
            )
            | "AllowedPairs"
            >> beam.ParDo(
                _AllowedPairs(self.corpus, config.rules, own.set_neighbours),
                trees=beam.pvalue.AsSingleton(trees),
            )
            | "ByPart" >> beam.GroupByKey()
            | "FormSets"
            >> beam.ParDo(
                _FormSets(
                    self.corpus,
                    config.rules,
                    config.score_lambda,
                    config.seed,
                    own.set_shard_size,
                    own.set_memberships,
                )
            ).with_outputs(LEFTOVERS, main="selections")
        )
        border = (
            formed[LEFTOVERS]
            | "Batches" >> beam.FlatMap(batches_of, size=config.batch_size)
            | "Distribute" >> beam.Reshuffle()
            | "LeftoverGraphs"
            >> beam.ParDo(
                _LeftoverGraphs(self.corpus, config.rules, LEFTOVER_DEPTH * self.searched(config))
            )
            | "BySplit" >> beam.GroupByKey()
            | "BorderSets"
            >> beam.ParDo(
                _BorderSets(
                    self.corpus,
                    config.score_lambda,
                    config.rules.limit,
                    config.seed,
                    own.set_memberships,
                )
            ).with_outputs(SKIPPED, main="selections")
        )
        selections = (formed.selections, border.selections) | "Selections" >> beam.Flatten()
        return {"selections": selections, SKIPPED: border[SKIPPED]}
