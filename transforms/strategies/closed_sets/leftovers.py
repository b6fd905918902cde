"""Leftovers: the captions a part's grouping leaves out, and the graphs their border sets
are chosen on.

A border set is chosen among a leftover's own ``BORDER_CANDIDATES`` nearest allowed
candidates, every pair among them checked against the validity rules directly, rather than
only the kNN edges: that finds the sets the kNN graph misses where most near captions are
paraphrases the rules turn away (synthetic corpora, large splits). The pairs travel as bits
(:class:`LeftoverGraphs`) and their cosines are recomputed where the sets are chosen.
"""

from typing import NamedTuple

import numpy as np

from transforms.corpus.neighbours import Pool, search
from transforms.corpus.store import Corpus
from transforms.strategies.closed_sets.pairs import Edges, first_allowed
from transforms.strategies.closed_sets.parts import PartKey
from transforms.strategies.closed_sets.selections import cosines_among
from transforms.strategies.validity import ValidityRules, mutual_allowed, pairs_allowed

# The output tag of the captions a part or a border round leaves out, and the folder their
# edges cross the runner through on their way to the border pass.
LEFTOVERS = "leftovers"
# Leftovers short of BORDER_CANDIDATES allowed candidates are searched this many times
# deeper again.
LEFTOVER_DEPTH = 4
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


class Leftovers(NamedTuple):
    """Leftovers' graphs on their way through the border rounds, with the part of each node
    (the leftover and its candidates): where its room for sets is kept."""

    graphs: LeftoverGraphs
    parts: np.ndarray  # int64 (B, K + 1): the leaf part of [target, *candidates], -1 padded


Keyed = tuple[PartKey, Leftovers]  # (split, node of the part tree, directory)


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

    Their ``searched`` nearest were checked already (``pairs._AllowedPairs``), and with fewer
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
