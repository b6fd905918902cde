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
   ``--set_shard_size`` captions; parallel). The edges go to their part in files
   (``EDGES_DIRECTORY``, ``transforms/spill.py``), and only where they are crosses the
   shuffle.
3. ``FormSets``: the grouping itself (``grouping.form_sets``: clique packing for
   closeness, repair and overlay sets for coverage) over each part's own kNN edges, one
   part per worker at a time, keyed by (split, part); then a *border set* for each caption
   it left out, among that caption's own candidates in the part, every pair among them
   checked against the rules directly (``grouping.border_sets``).
4. ``BorderSets``: what is still left out gets a border set among its candidates across
   the parts' borders (searched ``LEFTOVER_DEPTH`` times deeper first when fewer than
   ``BORDER_CANDIDATES``): the pairs among them are checked in parallel
   (``LeftoverGraphs``), then the sets are chosen in ``BORDER_ROUNDS`` rounds up the
   part tree. Round r groups the leftovers of a region of 2 ** r parts, keyed by
   (split, node). The free membership numbers of each caption a leftover asks for are
   granted to one region (``Grant``, keyed by the caption's part: the region that asks
   most; a leftover's own region keeps all but its highest, which the region that asks
   most besides may give out), so the regions choose in parallel and no caption exceeds
   its room. What a round leaves out goes on to the parent region, and the room it used
   back to each caption's part. No group holds more than eight parts' leftovers,
   whatever the corpus size.

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
from transforms.progress import Progress, timed
from transforms.seeds import keyed_int
from transforms.spill import (
    Piece,
    RemoveAfter,
    SpillToFiles,
    ThroughFiles,
    folder_under,
    read_spilled,
)
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
# What grows with the corpus crosses the runner through files under the corpus directory
# (transforms/spill.py): Beam's local runner held every edge of a 3.3M-caption run in its
# own process (7.5 GB), then the parts' selections and leftovers (3.6 GB, 8.2 GB as they
# were handed on).
EDGES_DIRECTORY = "edges"
SPILLED = (EDGES_DIRECTORY, LEFTOVERS, "selections")
CAPACITY = "capacity"  # room for border sets that is not the default, keyed by part
# Leftovers short of BORDER_CANDIDATES allowed candidates are searched this many times
# deeper again.
LEFTOVER_DEPTH = 4
# A border set is chosen among this many of a leftover's nearest allowed candidates: the
# pairs among them are checked directly, so the cost grows with its square (50 took 3/4
# of the 124k benchmark's busy time; measured in the README).
BORDER_CANDIDATES = 32
# Rounds of the border pass: round r works in regions of 2 ** r parts (the last: at most 8
# parts' leftovers in one group, whatever the corpus size), or the whole split if smaller.
BORDER_ROUNDS = 3
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


class Room(NamedTuple):
    """Membership numbers a caption may still take in border sets, as bits (bit n - 1:
    number n), where that is not the default: captions a part filled, and those earlier
    border rounds used. Bits, not a count, so that two regions can share a caption's room."""

    rows: np.ndarray  # int64 corpus rows, sorted
    free: np.ndarray  # int64 bit masks


class Grant(NamedTuple):
    """Captions one region may use this round: ``share`` of each one's free numbers."""

    rows: np.ndarray  # int64 corpus rows, sorted
    share: np.ndarray  # int64 bit masks: the numbers this region may give out
    free: np.ndarray  # int64 bit masks: all the caption's free numbers, however shared


class LeftoverGraphs(NamedTuple):
    """Leftover captions, their allowed candidates and which pairs among them may share a
    set. The pairs travel as bits and the cosines are recomputed where the sets are chosen
    (:func:`graph_weights`): as float32 weights, a 124k-image run's train leftovers made one
    grouped element of 656 MB for the border pass (about 4.6 KB a leftover; now 0.4 KB)."""

    targets: np.ndarray  # int64 (B,) corpus rows
    candidates: np.ndarray  # int64 (B, K) allowed candidates first, -1 padded
    allowed: np.ndarray  # uint8 (B, K + 1, ceil((K + 1) / 8)): packed bits, [target, *candidates]

    @property
    def nodes(self) -> np.ndarray:
        """int64 (B, K + 1): each row's [target, *candidates], -1 padded."""
        return np.concatenate([self.targets[:, None], self.candidates], axis=1)


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
                yield (split, int(p), batch.directory), compact(edges)


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

    def process(
        self, keyed: tuple[tuple[str, int, str], Iterable[Piece]], trees: dict[str, PartTree]
    ):
        (split, part, directory), pieces = keyed
        if self._progress is None:  # a part takes seconds to minutes: say how many are done
            total = sum(tree.parts for tree in trees.values())
            self._progress = Progress("closed_sets", "parts", total, interval=0.0)
        searchable = self._corpus.acquire(directory)
        corpus, pool = searchable.corpus, searchable.pools[split]
        if self._scratch is None:
            self._scratch = corpus.ngrams.scratch()
        edges = merged(read_spilled(pieces))
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
    sim_pv = graph_cosines(pool, nodes) if rules.own_caption_rule else None
    allowed = mutual_allowed(corpus, nodes, rules, scratch, sim_pv)
    return LeftoverGraphs(edges.targets, candidates, np.packbits(allowed, axis=-1))


def cosines_among(pool: Pool, rows: np.ndarray) -> np.ndarray:
    """(n, n) PV cosines among ``rows`` (captions of ``pool``), from the index's vectors."""
    vectors = pool.index.reconstruct_batch(np.searchsorted(pool.rows, rows))
    return (vectors @ vectors.T).astype(np.float64)


def graph_cosines(pool: Pool, nodes: np.ndarray) -> np.ndarray:
    """float32 (B, n, n): the cosines among each row's captions (``nodes``, -1 padded at the
    end), 0 beyond them."""
    cosines = np.zeros((*nodes.shape, nodes.shape[1]), dtype=np.float32)
    for b, row in enumerate(nodes):
        row = row[row >= 0]
        cosines[b, : len(row), : len(row)] = cosines_among(pool, row)
    return cosines


def graph_weights(pool: Pool, graphs: LeftoverGraphs) -> np.ndarray:
    """float32 (B, K + 1, K + 1): the cosines among each leftover and its candidates, NaN
    where a pair may not share a set (``grouping.border_sets``' weights)."""
    nodes = graphs.nodes
    allowed = np.unpackbits(graphs.allowed, axis=-1, count=nodes.shape[1]).astype(bool)
    return np.where(allowed, graph_cosines(pool, nodes), np.float32(np.nan))


def searched_deeper(
    corpus: Corpus,
    pool: Pool,
    edges: Edges,
    rules: ValidityRules,
    scratch: np.ndarray,
    searched: int,
) -> Edges:
    """``edges`` with the rows that have fewer than ``BORDER_CANDIDATES`` allowed candidates
    (all a border set is chosen among) searched again, ``LEFTOVER_DEPTH`` times as deep:
    the captions whose nearest are all paraphrases the rules turn away.

    Their ``searched`` nearest were checked already (``_AllowedPairs``), and with fewer
    than K allowed, all those allowed are in ``edges``: they go first and are checked
    again, the others are not; the deeper search's first ``searched`` are those same
    captions. So only the new depth costs pair checks, and only until enough are allowed.
    """
    need = min(BORDER_CANDIDATES, edges.candidates.shape[1])
    short = np.flatnonzero(edges.allowed.sum(axis=1) < need)
    if not len(short):
        return edges
    targets, known = edges.targets[short], edges.allowed[short]
    deeper, deeper_pv = search(corpus, pool, targets, LEFTOVER_DEPTH * searched)
    candidates = np.concatenate(
        [np.where(known, edges.candidates[short], -1), deeper[:, searched:]], axis=1
    )
    sim_pv = np.concatenate(
        [np.where(known, edges.sim_pv[short], 0.0), deeper_pv[:, searched:]], axis=1
    )
    allowed, _ = pairs_allowed(corpus, targets, candidates, sim_pv, rules, scratch, need=need)
    columns = [column.copy() for column in edges[1:]]
    found = first_allowed(candidates, sim_pv, allowed, edges.candidates.shape[1])
    for column, rows in zip(columns, found, strict=True):
        column[short] = rows
    return Edges(edges.targets, *columns)


class Leftovers(NamedTuple):
    """Leftovers' graphs on their way through the border rounds, with the part of each node
    (the leftover and its candidates): where its room for sets is kept."""

    graphs: LeftoverGraphs
    parts: np.ndarray  # int64 (B, K + 1): the leaf part of [target, *candidates], -1 padded


class Requests(NamedTuple):
    """A region's leftovers ask for captions of one part: each its own, and its candidates."""

    rows: np.ndarray  # int64 corpus rows
    region: int  # the node of the part tree whose group asks
    own: np.ndarray  # bool: the row is the asking leftover itself


class _LeftoverGraphs(beam.DoFn):
    """Leftovers -> their graphs, those short of candidates searched deeper first."""

    def __init__(self, corpus: SharedCorpus, rules: ValidityRules, searched: int):
        self._corpus, self._rules, self._searched = corpus, rules, searched
        self._scratch = self._progress = None

    def process(
        self, keyed: tuple[tuple[str, int, str], Edges], trees: dict[str, PartTree], total: int
    ):
        (split, _, directory), edges = keyed
        if self._progress is None:  # minutes at 3.3M captions, after the parts' last line
            self._progress = Progress("closed_sets", "leftovers", total)
        searchable = self._corpus.acquire(directory)
        if self._scratch is None:
            self._scratch = searchable.corpus.ngrams.scratch()
        corpus, pool = searchable.corpus, searchable.pools[split]
        with timed("closed_sets", "leftover_graphs"):
            edges = searched_deeper(corpus, pool, edges, self._rules, self._scratch, self._searched)
            graphs = leftover_graphs(corpus, pool, edges, self._rules, self._scratch)
            nodes = graphs.nodes
            parts = np.full(nodes.shape, -1, np.int64)
            parts[nodes >= 0] = parts_of(searchable, trees[split], split, nodes[nodes >= 0])
        self._progress.advance(len(edges.targets))
        yield keyed[0], Leftovers(graphs, parts)


def batches_of(keyed: tuple[tuple[str, int, str], Edges], size: int):
    """A part's leftovers in batches of at most ``size``, so their graphs spread over workers."""
    key, edges = keyed
    for start in range(0, len(edges.targets), size):
        yield key, Edges(*(column[start : start + size] for column in edges))


Keyed = tuple[tuple[str, int, str], Leftovers]  # (split, node of the part tree, directory)


def parent(keyed: Keyed) -> Keyed:
    """Keyed by a node of the part tree (leaves: the parts) -> keyed by its parent, whose
    region is the union of its two children's (the root is its own parent).

    >>> parent((("train", 5, "d"), None)), parent((("train", 0, "d"), None))
    ((('train', 2, 'd'), None), (('train', 0, 'd'), None))
    """
    (split, node, directory), value = keyed
    return (split, node >> 1, directory), value


def requests_of(keyed: Keyed):
    """A region's leftovers -> what they ask of each part: themselves and their candidates."""
    (split, region, directory), leftovers = keyed
    nodes = leftovers.graphs.nodes
    own = np.zeros(nodes.shape, bool)
    own[:, 0] = True
    present = nodes >= 0
    rows, parts, own = nodes[present], leftovers.parts[present], own[present]
    for part in np.unique(parts):
        mine = parts == part
        yield (split, int(part), directory), Requests(rows[mine], region, own[mine])


def granted(rows: np.ndarray, regions: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, ...]:
    """Which regions each requested row goes to: first a leftover's own region, else the
    region that asked for it most (ties: the lowest node); second the next in that order,
    -1 if none. Returns (rows, first, second), rows sorted.

    >>> [a.tolist() for a in granted(np.array([4, 4, 4, 6, 6]), np.array([1, 2, 2, 3, 1]),
    ...                               np.array([True, False, False, False, False]))]
    [[4, 6], [1, 1], [2, 3]]
    """
    pairs, inverse, counts = np.unique(
        np.stack([rows, regions]), axis=1, return_inverse=True, return_counts=True
    )
    mine = np.zeros(pairs.shape[1], bool)
    np.logical_or.at(mine, inverse.ravel(), own)
    order = np.lexsort((pairs[1], -counts, ~mine, pairs[0]))
    row, region = pairs[0, order], pairs[1, order]
    first = np.ones(len(order), bool)
    first[1:] = row[1:] != row[:-1]
    starts = np.flatnonzero(first)
    has_second = np.append(starts[1:], len(order)) - starts > 1
    second = np.where(has_second, region[np.minimum(starts + 1, len(order) - 1)], -1)
    return row[starts], region[starts], second


def bits(masks: np.ndarray, width: int) -> np.ndarray:
    """How many numbers each mask holds.

    >>> bits(np.array([0, 5, 7]), 3).tolist()
    [0, 2, 3]
    """
    return sum((masks >> n) & 1 for n in range(width))


def shared(free: np.ndarray, split: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first's share, second's) of each free mask: where ``split``, the second region gets
    the highest free number and the first the rest; else the first gets them all.

    >>> [a.tolist() for a in shared(np.array([7, 4, 6]), np.array([True, True, False]))]
    [[3, 4, 6], [4, 0, 0]]
    """
    highest = np.where(free > 0, 1 << np.floor(np.log2(np.maximum(free, 1))).astype(np.int64), 0)
    split = split & (free != highest)  # a single free number is not shared
    return np.where(split, free & ~highest, free), np.where(split, highest, 0)


def every_number(max_memberships: int) -> int:
    """The mask of membership numbers 1 .. ``max_memberships``: a leftover's room while it
    is in no set.

    >>> every_number(3)
    7
    """
    return (1 << max_memberships) - 1


def merged_room(records: list[Room]) -> Room:
    """Records of room as one, sorted by row; a row with several keeps the numbers free in
    all of them (each round's record clears the numbers it gave out).

    >>> merged_room([Room(np.array([5, 2]), np.array([6, 7])), Room(np.array([5]), np.array([3]))])
    Room(rows=array([2, 5]), free=array([7, 2]))
    """
    if not records:
        return Room(np.zeros(0, np.int64), np.zeros(0, np.int64))
    rows, at = np.unique(np.concatenate([r.rows for r in records]), return_inverse=True)
    free = np.full(len(rows), -1, np.int64)
    np.bitwise_and.at(free, at, np.concatenate([r.free for r in records]))
    return Room(rows, free)


class _Grant(beam.DoFn):
    """One part's requests -> each requested caption's free numbers, granted to at most two
    regions (a leftover's own region keeps all but the highest, which the region that asks
    most may use): no two groups can give out the same number, so they choose in parallel.
    Not in the last round (``share`` False): a leftover another region covered there would
    be skipped by its own (measured: sharing there too, settled by part afterwards, covered
    0.2 points more of a 64-part train split). The part's records go on to the next round."""

    def __init__(self, max_memberships: int, *, share: bool):
        self._max, self._share = max_memberships, share

    def process(self, keyed: tuple[tuple[str, int, str], Iterable[Requests | Room]]):
        (split, part, directory), elements = keyed
        elements = list(elements)  # one pass over the grouped values, whatever the runner
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


def kept(
    candidates: np.ndarray, weights: np.ndarray, inside: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(candidates, weights) with only the ``inside`` candidates: those first, best first,
    -1 padded; NaN weights for the rest.

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
    batch = np.arange(len(order))[:, None, None]
    weights = weights[batch, nodes[:, :, None], nodes[:, None, :]]
    present = np.concatenate([np.ones((len(order), 1), bool), keep], axis=1)
    weights[~(present[:, :, None] & present[:, None, :])] = np.nan
    return candidates, weights


def looked_up(rows: np.ndarray, values: np.ndarray, ids: np.ndarray, default: np.ndarray):
    """``values`` of ``ids`` found in ``rows`` (sorted), ``default`` elsewhere.

    >>> looked_up(np.array([2, 5]), np.array([0, 1]), np.array([5, 3]), np.array([9, 9])).tolist()
    [1, 9]
    """
    if not len(rows):
        return default
    at = np.searchsorted(rows, ids).clip(max=len(rows) - 1)
    return np.where(rows[at] == ids, values[at], default)


def numbered(sets: np.ndarray, grant: Grant) -> tuple[np.ndarray, Room]:
    """Each set member's membership number (the lowest of its share not yet given out, set
    by set), and the room its caption has left: its free numbers less those given here.

    >>> grant = Grant(np.array([1, 2]), np.array([3, 4]), np.array([7, 4]))
    >>> counts, room = numbered(np.array([[1], [1]]), grant)
    >>> counts.tolist(), room
    ([[1], [2]], Room(rows=array([1]), free=array([4])))
    """
    at = np.searchsorted(grant.rows, sets)
    share = grant.share.copy()
    counts = np.zeros(sets.shape, np.int64)
    for index in np.ndindex(sets.shape):
        lowest = share[at[index]] & -share[at[index]]
        counts[index] = int(lowest).bit_length()
        share[at[index]] &= ~lowest
    used = np.unique(at)
    given = grant.share[used] & ~share[used]
    return counts, Room(grant.rows[used], grant.free[used] & ~given)


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
        keyed: tuple[tuple[str, int, str], Iterable[Leftovers | Grant]],
        trees: dict[str, PartTree],
    ):
        (split, node, directory), elements = keyed
        elements = list(elements)  # one pass over the grouped values, whatever the runner
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


def by_part(leftovers: Leftovers, rows: np.ndarray):
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
    answered_in_sets = True
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
        "five times. Each instance is to be answered on its own: a model answering a set's "
        "five instances jointly (each option is the target of exactly one of them) would "
        "gain. `dmc-evaluate` and `dmc-train` also report the set score, the share of sets "
        "whose five instances are all answered right (Winoground's group score), which is 0 "
        "for any text-only model. Captions in no valid set are skipped and counted by why "
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
        folders = {name: folder_under(indexed, name) for name in SPILLED}
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
            | "SpillEdges"
            >> SpillToFiles(
                folder=folders[EDGES_DIRECTORY], name=EDGES_DIRECTORY, fence=config.fence
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
                ),
                trees=beam.pvalue.AsSingleton(trees),
            ).with_outputs(LEFTOVERS, CAPACITY, main="selections")
        )
        _ = formed.selections | "RemoveEdges" >> RemoveAfter(folders[EDGES_DIRECTORY])
        total = (
            formed[LEFTOVERS]
            | "LeftoverSizes" >> beam.Map(lambda keyed: len(keyed[1].targets))
            | "LeftoverTotal" >> beam.CombineGlobally(sum)
        )
        leftovers = (
            formed[LEFTOVERS]
            | "Batches" >> beam.FlatMap(batches_of, size=config.batch_size)
            | "Distribute"
            >> ThroughFiles(folder=folders[LEFTOVERS], name=LEFTOVERS, fence=config.fence)
            | "LeftoverGraphs"
            >> beam.ParDo(
                _LeftoverGraphs(self.corpus, config.rules, self.searched(config)),
                trees=beam.pvalue.AsSingleton(trees),
                total=beam.pvalue.AsSingleton(total),
            )
        )
        capacity, selections, skipped = formed[CAPACITY], [formed.selections], []
        for shift in range(1, BORDER_ROUNDS + 1):
            regional = leftovers | f"ToRegions{shift}" >> beam.Map(parent)
            grants = (
                (regional | f"Requests{shift}" >> beam.FlatMap(requests_of), capacity)
                | f"Asked{shift}" >> beam.Flatten()
                | f"ByPart{shift}" >> beam.GroupByKey()
                | f"Grant{shift}"
                >> beam.ParDo(
                    _Grant(own.set_memberships, share=shift < BORDER_ROUNDS)
                ).with_outputs(CAPACITY, main="grants")
            )
            rounds = (
                (regional, grants.grants)
                | f"Granted{shift}" >> beam.Flatten()
                | f"ByRegion{shift}" >> beam.GroupByKey()
                | f"BorderSets{shift}"
                >> beam.ParDo(
                    _BorderSets(
                        self.corpus,
                        config.score_lambda,
                        config.rules.limit,
                        config.seed,
                        own.set_memberships,
                        shift=shift,
                        last=shift == BORDER_ROUNDS,
                    ),
                    trees=beam.pvalue.AsSingleton(trees),
                ).with_outputs(SKIPPED, LEFTOVERS, CAPACITY, main="selections")
            )
            selections.append(rounds.selections)
            skipped.append(rounds[SKIPPED])
            leftovers = rounds[LEFTOVERS]
            capacity = (grants[CAPACITY], rounds[CAPACITY]) | f"Room{shift}" >> beam.Flatten()
        return {
            "selections": tuple(selections)  # a tuple: Beam takes a list for one value
            | "Selections"
            >> ThroughFiles(folder=folders["selections"], name="selections", fence=config.fence),
            SKIPPED: skipped | "Skipped" >> beam.Flatten(),
        }
