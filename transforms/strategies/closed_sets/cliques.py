"""Cliques in a kNN graph: the searches closed sets' grouping and border sets share.

A set is a 5-clique of allowed pairs, weighted by its 10 pairwise cosines. Both searches
find the heaviest 4-clique of a caption's dense neighbourhood (:func:`heaviest`): through a
caption of a part's symmetric kNN graph (:func:`best_clique`, for ``grouping.form_sets``),
and among a leftover's own candidates, every pair among them checked against the rules
(:func:`border_sets`, for the captions the grouping leaves out, within a part and across
the parts' borders).
"""

from collections.abc import Callable

import numba
import numpy as np

SIZE = 5


@numba.njit(cache=True)
def adjacency(
    neighbours: np.ndarray, similarity: np.ndarray, allowed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetric allowed kNN graph as CSR, each row best first (ties by index)."""
    n, k = neighbours.shape
    start = np.zeros(n + 1, np.int64)
    for a in range(n):
        for j in range(k):
            b = neighbours[a, j]
            if b >= 0 and allowed[a, j]:
                start[a + 1] += 1
                start[b + 1] += 1
    start = np.cumsum(start)
    fill = start[:-1].copy()
    raw_idx = np.empty(start[-1], np.int64)
    raw_sim = np.empty(start[-1], np.float32)
    for a in range(n):
        for j in range(k):
            b = neighbours[a, j]
            if b >= 0 and allowed[a, j]:
                raw_idx[fill[a]], raw_sim[fill[a]] = b, similarity[a, j]
                raw_idx[fill[b]], raw_sim[fill[b]] = a, similarity[a, j]
                fill[a] += 1
                fill[b] += 1
    indptr = np.zeros(n + 1, np.int64)
    idx = np.empty(start[-1], np.int64)
    sim = np.empty(start[-1], np.float32)
    out = 0
    for a in range(n):
        row_idx = raw_idx[start[a] : start[a + 1]]
        row_sim = raw_sim[start[a] : start[a + 1]]
        by_index = np.argsort(row_idx, kind="mergesort")
        first = out
        for j in range(len(by_index)):  # a pair listed both ways appears twice: keep one
            b = row_idx[by_index[j]]
            if j == 0 or b != row_idx[by_index[j - 1]]:
                idx[out], sim[out] = b, row_sim[by_index[j]]
                out += 1
        by_sim = np.argsort(-sim[first:out], kind="mergesort")
        idx[first:out] = idx[first:out][by_sim]
        sim[first:out] = sim[first:out][by_sim]
        indptr[a + 1] = out
    return indptr, idx[:out], sim[:out]


@numba.njit(cache=True)
def heaviest(w_seed, w, budget, found) -> float:
    """Heaviest 4-clique of a dense neighbourhood into ``found`` (its 4 indices); -inf if none.

    ``w_seed[i]``: weight of candidate i with the seed; ``w[i, j]``: cosine of i and j, NaN
    where the pair is not an edge. Best-first by weight with the seed; once a clique is
    found, stops after ``budget`` innermost steps.
    """
    m = len(w_seed)
    best = -np.inf
    steps = 0
    for i in range(m):
        for j in range(i + 1, m):
            if np.isnan(w[i, j]):
                continue
            w_ij = w_seed[i] + w_seed[j] + w[i, j]
            for k in range(j + 1, m):
                if np.isnan(w[i, k]) or np.isnan(w[j, k]):
                    continue
                w_ijk = w_ij + w_seed[k] + w[i, k] + w[j, k]
                for t in range(k + 1, m):
                    steps += 1
                    if np.isnan(w[i, t]) or np.isnan(w[j, t]) or np.isnan(w[k, t]):
                        continue
                    total = w_ijk + w_seed[t] + w[i, t] + w[j, t] + w[k, t]
                    if total > best:
                        best = total
                        found[0], found[1], found[2], found[3] = i, j, k, t
                if steps > budget and best > -np.inf:
                    return best
    return best


@numba.njit(cache=True)
def best_clique(seed, indptr, idx, sim, usable, bonus, budget, loc, row) -> float:
    """Heaviest 5-clique through ``seed`` among ``usable`` neighbours into ``row``; -inf if none.

    Weight = sum of the 10 cosines + ``bonus`` of the 4 other members (:func:`heaviest`).
    """
    lo, hi = indptr[seed], indptr[seed + 1]
    cand = np.empty(hi - lo, np.int64)
    w_seed = np.empty(hi - lo, np.float64)
    m = 0
    for j in range(lo, hi):
        if usable[idx[j]]:
            cand[m] = idx[j]
            w_seed[m] = sim[j] + bonus[idx[j]]
            m += 1
    if m < SIZE - 1:
        return -np.inf
    for i in range(m):
        loc[cand[i]] = i
    w = np.full((m, m), np.nan, np.float32)
    for i in range(m):
        for jj in range(indptr[cand[i]], indptr[cand[i] + 1]):
            if loc[idx[jj]] >= 0:
                w[i, loc[idx[jj]]] = sim[jj]
    for i in range(m):
        loc[cand[i]] = -1
    found = np.empty(SIZE - 1, np.int64)
    best = heaviest(w_seed[:m], w, budget, found)
    if best > -np.inf:
        row[0] = seed
        for q in range(SIZE - 1):
            row[q + 1] = cand[found[q]]
    return best


COVERED, NO_VALID_NEIGHBOURS, NO_CLIQUE, NEIGHBOURS_TAKEN = range(4)
LEFT_OUT = {
    NO_VALID_NEIGHBOURS: "no_valid_neighbours",
    NO_CLIQUE: "no_5_clique",
    NEIGHBOURS_TAKEN: "neighbours_taken",
}


@numba.njit(cache=True)
def _border(nodes, weights, order, uncovered, capacity, coverage_bonus, budget):
    """Border pass: a clique for each leftover among its own candidates, in ``order``.

    A caption joins while it has ``capacity`` (sets it may still join); uncovered members
    earn ``coverage_bonus``.
    """
    count = len(order)
    sets = np.empty((count, SIZE), np.int64)  # each set covers its leftover
    reasons = np.zeros(count, np.int64)
    found = np.empty(SIZE - 1, np.int64)
    m_sets = 0
    for j in order:
        me = nodes[j, 0]
        if not uncovered[me]:
            continue
        m = 0
        while m + 1 < nodes.shape[1] and nodes[j, m + 1] >= 0:
            m += 1
        if m < SIZE - 1:
            reasons[j] = NO_VALID_NEIGHBOURS
            continue
        pick = np.empty(m, np.int64)
        usable = 0
        for i in range(m):
            if capacity[nodes[j, i + 1]] > 0:
                pick[usable] = i + 1
                usable += 1
        best = -np.inf
        if usable >= SIZE - 1 and capacity[me] > 0:
            w_seed = np.empty(usable, np.float64)
            w = np.empty((usable, usable), np.float32)
            for a in range(usable):
                x = nodes[j, pick[a]]
                w_seed[a] = weights[j, 0, pick[a]] + (coverage_bonus if uncovered[x] else 0.0)
                for b in range(usable):
                    w[a, b] = weights[j, pick[a], pick[b]]
            best = heaviest(w_seed, w, budget, found)
        if best == -np.inf:
            every = np.empty(m, np.float64)
            for a in range(m):
                every[a] = weights[j, 0, a + 1]
            exists = heaviest(every, weights[j, 1 : m + 1, 1 : m + 1], budget, found)
            reasons[j] = NO_CLIQUE if exists == -np.inf else NEIGHBOURS_TAKEN
            continue
        sets[m_sets, 0] = me
        for q in range(SIZE - 1):
            sets[m_sets, q + 1] = nodes[j, pick[found[q]]]
        for q in range(SIZE):
            capacity[sets[m_sets, q]] -= 1
            uncovered[sets[m_sets, q]] = False
        m_sets += 1
    return sets[:m_sets], reasons


def border_sets(
    leftovers: np.ndarray,
    candidates: np.ndarray,
    weights: np.ndarray,
    capacity_of: Callable[[np.ndarray], np.ndarray],
    *,
    seed: int,
    coverage_bonus: float = 0.5,
    budget: int = 5_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Sets for captions left out, each among its own candidates (wherever they lie).

    leftovers: int64 (L,) caption rows; candidates: int64 (L, M) each one's allowed
    candidates, best first, -1 padded; weights: float32 (L, M + 1, M + 1), the cosines among
    the leftover (index 0) and its candidates, NaN where a pair may not share a set.
    capacity_of: rows -> how many more sets each may join (never more than
    ``--set_memberships`` in all).

    Returns (sets int64 (s, 5) of caption rows, reason per leftover: COVERED or why not).
    Most constrained leftovers go first (fewest candidates), ties by a seeded permutation.
    """
    nodes = np.concatenate([leftovers[:, None], candidates], axis=1)
    ids, compact = np.unique(nodes, return_inverse=True)
    compact = compact.reshape(nodes.shape)
    if ids[0] == -1:  # the padding
        compact -= 1
    valid_ids = ids[ids >= 0]
    uncovered = np.zeros(len(valid_ids), np.bool_)
    uncovered[compact[:, 0]] = True
    tie = np.random.default_rng(seed).permutation(len(leftovers))
    order = np.lexsort((tie, (candidates >= 0).sum(axis=1))).astype(np.int64)
    sets, reasons = _border(
        compact.astype(np.int64),
        np.asarray(weights, np.float32),
        order,
        uncovered,
        np.asarray(capacity_of(valid_ids), np.int64).copy(),
        coverage_bonus,
        budget,
    )
    covered = ~uncovered[compact[:, 0]]
    reasons = np.where(covered, COVERED, reasons)
    return valid_ids[sets], reasons
