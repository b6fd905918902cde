"""Leftovers: the captions a part's grouping leaves out, and the graphs their border sets
are chosen on.

A border set is chosen among a leftover's own ``BORDER_CANDIDATES`` nearest allowed
candidates, every pair among them checked against the validity rules directly, rather than
only the kNN edges: that finds the sets the kNN graph misses where most near captions are
paraphrases the rules turn away (synthetic corpora, large splits). The pairs travel as bits
(:class:`LeftoverGraphs`) and their cosines are recomputed where the sets are chosen.
"""

from collections.abc import Iterable
from typing import NamedTuple

import apache_beam as beam
import numpy as np

from transforms.corpus.neighbours import Pool, search
from transforms.corpus.store import Corpus
from transforms.strategies.closed_sets.cliques import SIZE
from transforms.strategies.closed_sets.pairs import Edges, allowed_only, first_allowed
from transforms.strategies.closed_sets.parts import PartKey
from transforms.strategies.closed_sets.selections import cosines_among
from transforms.strategies.validity import ValidityRules, allowed_group, mutual_allowed

# The output tag of the captions a part or a border round leaves out, and the folder their
# edges cross the runner through on their way to the border pass.
LEFTOVERS = "leftovers"
# Leftovers short of BORDER_CANDIDATES allowed candidates, or of four among them that may
# share a set, are searched these many times deeper again, in turn; the deeper searches
# scan proportionally more of an IVF index, to reach past the target's own scene.
LEFTOVER_DEPTHS = (4, 16)
# The border pass's counters (``closed_sets/<name>``) of the leftovers searched at each of
# LEFTOVER_DEPTHS and still short after the deepest: what a leftover costs depends on them
# (at 3.3M synthetic captions, most leftovers needed both; docs/benchmarks.md).
DEPTH_COUNTERS = (
    *(f"leftovers_searched_{depth}x" for depth in LEFTOVER_DEPTHS),
    f"leftovers_short_after_{LEFTOVER_DEPTHS[-1]}x",
)
# A border set is chosen among this many of a leftover's nearest allowed candidates: the
# pairs among them are checked directly, so the cost grows with its square (50 took 3/4
# of the 124k benchmark's busy time; measured in the README).
BORDER_CANDIDATES = 32


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


class Deeper(NamedTuple):
    """:func:`searched_deeper`'s edges, and how many of its rows were short before each of
    ``LEFTOVER_DEPTHS`` and after the deepest (``DEPTH_COUNTERS``' order)."""

    edges: Edges
    short: tuple[int, ...]


class Leftovers(NamedTuple):
    """Leftovers' graphs on their way through the border rounds, with the part of each node
    (the leftover and its candidates): where its room for sets is kept."""

    graphs: LeftoverGraphs
    parts: np.ndarray  # int64 (B, K + 1): the leaf part of [target, *candidates], -1 padded


Keyed = tuple[PartKey, Leftovers]  # (split, node of the part tree, directory)


def leftover_graphs(
    corpus: Corpus, pool: Pool, edges: Edges, rules: ValidityRules, scratch: np.ndarray
) -> LeftoverGraphs:
    """Which of each leftover's first ``BORDER_CANDIDATES`` candidates, in the order
    :func:`border_candidates` or :func:`searched_deeper` chose them, may share a set with
    each other: the validity rules both ways round on every pair, as ``pairs_allowed``."""
    candidates = edges.candidates[:, :BORDER_CANDIDATES]
    nodes = np.concatenate([edges.targets[:, None], candidates], axis=1)
    sim_pv = graph_cosines(pool, nodes) if rules.own_caption_rule else None
    allowed = mutual_allowed(corpus, nodes, rules, scratch, sim_pv)
    return LeftoverGraphs(edges.targets, candidates, np.packbits(allowed, axis=-1))


def border_candidates(
    corpus: Corpus, edges: Edges, rules: ValidityRules, scratch: np.ndarray,
    waiting: np.ndarray, width: int,
) -> tuple[Edges, np.ndarray]:  # fmt: skip
    """Each leftover's ``width`` allowed candidates a border set is chosen among: the
    other leftovers (``waiting``: bool per corpus row) first, then the rest, nearest
    first, after a group of four that may share a set (:func:`grouped`), where one is
    among them. Returns the edges and whether each row's group is whole."""
    return grouped(corpus, waiting_first(allowed_only(edges), waiting), rules, scratch,
                   need=0, width=width)  # fmt: skip


def waiting_first(edges: Edges, waiting: np.ndarray) -> Edges:
    """Each row's candidates that are leftovers too (``waiting``) first, each part in its
    order: a set of leftovers covers five captions at once, and they all have room, where
    the nearest captions of a crowded scene are the same few for all its leftovers, soon
    in as many sets as they may be.

    >>> edges = Edges(np.array([0]), np.array([[4, 5, -1, 6]]), np.array([[.9, .8, 0, .7]]),
    ...               np.array([[True, True, False, True]]))
    >>> waiting_first(edges, np.array([0, 0, 0, 0, 0, 1, 1], bool)).candidates.tolist()
    [[5, 6, 4, -1]]
    """
    rows = edges.candidates
    known = (rows >= 0) & (rows < len(waiting))
    first = np.zeros(rows.shape, bool)
    first[known] = waiting[rows[known]]
    order = np.argsort(~first, axis=1, kind="stable")
    return Edges(
        edges.targets, *(np.take_along_axis(column, order, axis=1) for column in edges[1:])
    )


def grouped(
    corpus: Corpus, edges: Edges, rules: ValidityRules, scratch: np.ndarray, *, need: int,
    width: int,
) -> tuple[Edges, np.ndarray]:  # fmt: skip
    """``edges`` walked until ``need`` candidates are allowed and four of them may share a
    set with each other (``validity.allowed_group``; the ``allowed`` ones are known, the
    others checked), keeping ``width`` allowed candidates, that group first. Returns the
    edges and whether each row's group is whole."""
    walked, members = allowed_group(
        corpus, edges.targets, edges.candidates, edges.sim_pv, edges.allowed, rules, scratch,
        need=need, group=SIZE - 1,
    )  # fmt: skip
    allowed = walked | edges.allowed  # known ones past where the walk stopped too
    columns = first_allowed(edges.candidates, edges.sim_pv, allowed, width, first=members)
    return Edges(edges.targets, *columns), (members >= 0).all(axis=1)


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
    where a pair may not share a set (``cliques.border_sets``' weights)."""
    nodes = graphs.nodes
    cosines = graph_cosines(pool, nodes)
    barred = np.unpackbits(graphs.allowed, axis=-1, count=nodes.shape[1]).view(bool)
    np.logical_not(barred, out=barred)
    cosines[barred] = np.nan  # in place: a border group's weights are a few hundred MB
    return cosines


def searched_deeper(
    corpus: Corpus,
    pool: Pool,
    edges: Edges,
    rules: ValidityRules,
    scratch: np.ndarray,
    searched: int,
    waiting: np.ndarray,
) -> Deeper:
    """``edges`` with the rows short of ``BORDER_CANDIDATES`` allowed candidates, or of four
    among them that may share a set, searched again deeper (``LEFTOVER_DEPTHS``, each a
    multiple of ``searched``) until they are not: the captions whose nearest are all
    paraphrases the rules turn away, or all captions of one other scene.

    The rows start as :func:`border_candidates` chose them, in the order
    :func:`leftover_graphs` reads, and each search's candidates are walked waiting ones
    first (:func:`waiting_first`). A
    row's allowed candidates go first and are not checked again. A row is short only
    if its walk reached the end of its list, so every candidate of it was checked; the
    next search's first as many are about those (its wider scan finds a few nearer), so
    only the new depth costs pair checks. The first ``searched`` of a row with fewer than
    K allowed were all checked too (``pairs._AllowedPairs``); a row with K allowed has
    its unchecked ones checked.
    """
    width = edges.candidates.shape[1]
    need = min(BORDER_CANDIDATES, width)
    edges, whole = border_candidates(corpus, edges, rules, scratch, waiting, width)
    checked = np.where(edges.allowed.sum(axis=1) < width, searched, 0)
    counts = []
    for depth in LEFTOVER_DEPTHS:
        short = short_rows(edges, whole, need)
        counts.append(len(short))
        if not len(short):
            break
        before = allowed_only(Edges(*(column[short] for column in edges)))
        targets = before.targets
        deeper, deeper_pv = search(
            corpus, pool, targets, depth * searched, wider=depth // LEFTOVER_DEPTHS[0]
        )
        fresh = np.arange(deeper.shape[1]) >= checked[short, None]
        fresh &= ~in_rows(deeper, before.candidates)
        new = waiting_first(Edges(targets, np.where(fresh, deeper, -1), deeper_pv,
                                  np.zeros(deeper.shape, bool)), waiting)  # fmt: skip
        walked = Edges(targets, *(np.concatenate(pair, axis=1)
                                  for pair in zip(before[1:], new[1:], strict=True)))  # fmt: skip
        found, found_whole = grouped(corpus, walked, rules, scratch, need=need, width=width)
        columns = [column.copy() for column in edges[1:]]
        for column, rows in zip(columns, found[1:], strict=True):
            column[short] = rows
        edges = Edges(edges.targets, *columns)
        whole[short] = found_whole
        checked[short] = depth * searched
    counts += [0] * (len(LEFTOVER_DEPTHS) - len(counts))
    return Deeper(edges, (*counts, len(short_rows(edges, whole, need))))


def short_rows(edges: Edges, whole: np.ndarray, need: int) -> np.ndarray:
    """The rows short of ``need`` allowed candidates or of a whole group (``whole``: bool
    per row), which :func:`searched_deeper` searches again.

    >>> edges = Edges(np.array([1, 2]), np.zeros((2, 2)), np.zeros((2, 2)),
    ...               np.array([[True, True], [True, False]]))
    >>> short_rows(edges, np.array([True, True]), 2).tolist()
    [1]
    """
    return np.flatnonzero((edges.allowed.sum(axis=1) < need) | ~whole)


class Waiting(beam.CombineFn):
    """Leftover batches' target rows -> bool per corpus row (up to the largest leftover):
    the captions waiting for a set, for :func:`waiting_first`. One byte a caption: 0.6 MB
    at 124k images, 3.2 MB at 3.3M captions, on every worker."""

    def create_accumulator(self) -> np.ndarray:
        return np.zeros(0, bool)

    def add_input(self, waiting: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if len(rows) and rows.max() >= len(waiting):
            waiting = np.pad(waiting, (0, int(rows.max()) + 1 - len(waiting)))
        waiting[rows] = True
        return waiting

    def merge_accumulators(self, accumulators: Iterable[np.ndarray]) -> np.ndarray:
        accumulators = list(accumulators)
        merged = np.zeros(max(len(a) for a in accumulators), bool)
        for waiting in accumulators:
            merged[: len(waiting)] |= waiting
        return merged

    def extract_output(self, waiting: np.ndarray) -> np.ndarray:
        return waiting


def in_rows(values: np.ndarray, sets: np.ndarray) -> np.ndarray:
    """Whether each of ``values[b]`` is among ``sets[b]``, row by row.

    >>> in_rows(np.array([[1, 2], [1, 2]]), np.array([[2, -1], [3, 1]])).tolist()
    [[False, True], [True, False]]
    """
    rows = np.arange(len(values))[:, None]
    width = 1 + int(max(values.max(initial=0), sets.max(initial=0)))
    return np.isin(rows * width + values, rows * width + sets)
