"""Closed sets: groups of 5 captions, each the others' decoys, mutually close in PV space.

A text-only model sees the same 5 options in the 5 instances of a set, so it is right on exactly
one of them. Every pair of a set must be an allowed edge of the kNN graph, so a set is a 5-clique
and the problem is maximum-weight 5-clique packing (weight = the 10 pairwise cosines), not
free k-means: the clique constraint, not the objective, is what limits coverage. PV kNN graphs
are hubby: many captions' only cliques run through the same few hubs, so even an optimal
partition leaves a fifth or more of the captions out. Hence four stages:

1. Pack: repeatedly take the heaviest clique still available (each caption's best clique
   through itself, found by an exhaustive, budgeted search of its neighbourhood; a lazy heap
   recomputes a caption's clique only when a member was taken). Heaviest-first is the
   classic greedy for weighted packing: tight groups are never broken up for loose ones.
2. Repair (coverage, same partition): an uncovered caption may build a clique that borrows at
   most one member from each existing set, if a free caption can take the borrowed one's place;
   coverage grows by 5 per success, and no set gets worse than a clique.
3. Local search (closeness): best-improvement exchanges for each set, of one member against a
   caption of another set or an uncovered one, evaluated from the members' contributions
   (sum of cosines to the rest of the set); repeated until a round finds no gain.
4. Overlay (coverage, optional): every caption still uncovered gets its heaviest clique among
   captions with fewer than ``max_memberships`` sets; uncovered members earn ``coverage_bonus``
   each, so one extra set covers several outliers and extra instances stay few. Outliers come
   last and most constrained first: they cannot spoil the partition, only add to it.

Similarities come from the kNN lists (every pair of a set is an edge), so the vectors are not
read. Ties are broken by a seeded permutation, so the result is deterministic for a seed.
"""

import heapq
from collections.abc import Callable

import numba
import numpy as np

SIZE = 5
FULL_MASK = (1 << SIZE) - 1


@numba.njit(cache=True)
def _adjacency(
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
def _heaviest(w_seed, w, budget, found) -> float:
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
def _best_clique(seed, indptr, idx, sim, usable, bonus, budget, loc, row) -> float:
    """Heaviest 5-clique through ``seed`` among ``usable`` neighbours into ``row``; -inf if none.

    Weight = sum of the 10 cosines + ``bonus`` of the 4 other members (:func:`_heaviest`).
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
    best = _heaviest(w_seed[:m], w, budget, found)
    if best > -np.inf:
        row[0] = seed
        for q in range(SIZE - 1):
            row[q + 1] = cand[found[q]]
    return best


@numba.njit(cache=True)
def _pack(indptr, idx, sim, tie, budget) -> np.ndarray:
    """Stage 1: heaviest available clique first, lazily recomputed."""
    n = len(tie)
    free = np.ones(n, np.bool_)
    no_bonus = np.zeros(n, np.float32)
    loc = np.full(n, -1, np.int64)
    best_rows = np.empty((n, SIZE), np.int64)
    sets = np.empty((n // SIZE, SIZE), np.int64)
    m = 0
    row = np.empty(SIZE, np.int64)
    heap = [(0.0, 0, 0) for _ in range(0)]
    for v in range(n):
        weight = _best_clique(v, indptr, idx, sim, free, no_bonus, budget, loc, row)
        if weight > -np.inf:
            best_rows[v] = row
            heap.append((-weight, tie[v], v))
    heapq.heapify(heap)
    while heap:
        _, rank, v = heapq.heappop(heap)
        if not free[v]:
            continue
        intact = True
        for q in range(SIZE):
            intact &= free[best_rows[v, q]]
        if not intact:
            weight = _best_clique(v, indptr, idx, sim, free, no_bonus, budget, loc, row)
            if weight > -np.inf:
                best_rows[v] = row
                heapq.heappush(heap, (-weight, rank, v))
            continue
        for q in range(SIZE):
            sets[m, q] = best_rows[v, q]
            free[best_rows[v, q]] = False
        m += 1
    return sets[:m]


@numba.njit(cache=True)
def _refill(members, out, avoid, indptr, idx, sim, free, count, weight) -> int:
    """The free caption (not ``avoid``) that best replaces ``out`` in ``members``; -1 if none."""
    for t in range(SIZE):
        if members[t] != out:
            for jj in range(indptr[members[t]], indptr[members[t] + 1]):
                count[idx[jj]] += 1
                weight[idx[jj]] += sim[jj]
    best, best_weight = -1, -np.inf
    for t in range(SIZE):
        if members[t] != out:
            for jj in range(indptr[members[t]], indptr[members[t] + 1]):
                y = idx[jj]
                if count[y] == SIZE - 1 and free[y] and y != avoid and weight[y] > best_weight:
                    best, best_weight = y, weight[y]
                count[y] = 0
                weight[y] = 0.0
    return best


@numba.njit(cache=True)
def _repair(packed, indptr, idx, sim, tie, budget, passes) -> np.ndarray:
    """Stage 2: new cliques around uncovered captions, borrowing refillable members."""
    n = len(tie)
    sets = np.empty((n // SIZE, SIZE), np.int64)
    m = len(packed)
    sets[:m] = packed
    set_of = np.full(n, -1, np.int64)
    for s in range(m):
        for t in range(SIZE):
            set_of[sets[s, t]] = s
    free = set_of < 0
    count = np.zeros(n, np.int64)
    weight = np.zeros(n, np.float64)
    no_bonus = np.zeros(n, np.float32)
    loc = np.full(n, -1, np.int64)
    usable = np.zeros(n, np.bool_)
    replacement = np.full(n, -1, np.int64)
    row = np.empty(SIZE, np.int64)
    order = np.argsort(tie)
    for _ in range(passes):
        gained = 0
        for u in order:
            if not free[u]:
                continue
            for jj in range(indptr[u], indptr[u + 1]):
                x = idx[jj]
                if free[x]:
                    usable[x], replacement[x] = True, -1
                else:
                    y = _refill(sets[set_of[x]], x, u, indptr, idx, sim, free, count, weight)
                    usable[x], replacement[x] = y >= 0, y
            found = False
            for _attempt in range(SIZE + 1):  # drop one conflicting borrow per attempt
                if _best_clique(u, indptr, idx, sim, usable, no_bonus, budget, loc, row) == -np.inf:
                    break
                conflict = -1
                for a in range(1, SIZE):
                    if free[row[a]]:
                        continue
                    for b in range(1, SIZE):
                        other = row[b]
                        if b != a and (
                            other == replacement[row[a]]
                            or (
                                not free[other]
                                and (
                                    set_of[other] == set_of[row[a]]
                                    or replacement[other] == replacement[row[a]]
                                )
                            )
                        ):
                            conflict = row[a]
                if conflict < 0:
                    found = True
                    break
                usable[conflict] = False
            if found:
                for a in range(SIZE):
                    x = row[a]
                    if not free[x]:
                        s, y = set_of[x], replacement[x]
                        for t in range(SIZE):
                            if sets[s, t] == x:
                                sets[s, t] = y
                        set_of[y], free[y] = s, False
                    sets[m, a] = x
                    set_of[x], free[x] = m, False
                m += 1
                gained += 1
            for jj in range(indptr[u], indptr[u + 1]):
                usable[idx[jj]] = False
        if gained == 0:
            break
    return sets[:m]


@numba.njit(cache=True)
def _contributions(indptr, idx, sim, members, contrib) -> None:
    """contrib[x] = sum of cosines of x to the other members of its set."""
    for i in range(SIZE):
        contrib[members[i]] = 0.0
    for i in range(SIZE):
        for jj in range(indptr[members[i]], indptr[members[i] + 1]):
            for t in range(SIZE):
                if members[t] == idx[jj]:
                    contrib[members[i]] += sim[jj]


@numba.njit(cache=True)
def _local_search(sets, indptr, idx, sim, rounds, tol) -> None:
    """Stage 3, in place: best exchange per set (with another set or an uncovered caption)."""
    n = len(indptr) - 1
    set_of = np.full(n, -1, np.int64)
    contrib = np.zeros(n, np.float64)
    for s in range(len(sets)):
        set_of[sets[s]] = s
        _contributions(indptr, idx, sim, sets[s], contrib)
    mask = np.zeros(n, np.int64)
    acc = np.zeros(n, np.float64)
    sim_to = np.zeros((n, SIZE), np.float32)
    touched = np.empty(SIZE * np.max(np.diff(indptr)) + 1, np.int64)
    dense = np.full(n, np.nan, np.float32)
    for _ in range(rounds):
        moved = False
        for s in range(len(sets)):
            n_touched = 0
            for i in range(SIZE):  # candidates adjacent to >= 4 members of s
                for jj in range(indptr[sets[s, i]], indptr[sets[s, i] + 1]):
                    b = idx[jj]
                    if set_of[b] == s:
                        continue
                    if mask[b] == 0:
                        touched[n_touched] = b
                        n_touched += 1
                    mask[b] |= 1 << i
                    acc[b] += sim[jj]
                    sim_to[b, i] = sim[jj]
            best_gain, best_b, best_i = tol, -1, -1
            for q in range(n_touched):
                b = touched[q]
                other = set_of[b]
                for i in range(SIZE):
                    need = FULL_MASK ^ (1 << i)
                    if mask[b] & need != need:
                        continue
                    a = sets[s, i]
                    gain = acc[b] - (sim_to[b, i] if mask[b] & (1 << i) else 0.0) - contrib[a]
                    if other >= 0:  # a takes b's place in the other set
                        for jj in range(indptr[a], indptr[a + 1]):
                            dense[idx[jj]] = sim[jj]
                        for t in range(SIZE):
                            if sets[other, t] != b:
                                gain += dense[sets[other, t]]  # nan if not adjacent
                        gain -= contrib[b]
                        for jj in range(indptr[a], indptr[a + 1]):
                            dense[idx[jj]] = np.nan
                    if gain > best_gain:
                        best_gain, best_b, best_i = gain, b, i
            for q in range(n_touched):
                mask[touched[q]] = 0
                acc[touched[q]] = 0.0
            if best_b < 0:
                continue
            moved = True
            a, other = sets[s, best_i], set_of[best_b]
            sets[s, best_i], set_of[best_b], set_of[a] = best_b, s, other
            _contributions(indptr, idx, sim, sets[s], contrib)
            if other >= 0:
                for t in range(SIZE):
                    if sets[other, t] == best_b:
                        sets[other, t] = a
                _contributions(indptr, idx, sim, sets[other], contrib)
        if not moved:
            break


@numba.njit(cache=True)
def _overlay(sets, indptr, idx, sim, tie, budget, max_memberships, coverage_bonus) -> np.ndarray:
    """Stage 4: a clique for each still uncovered caption, fewest options first."""
    n = len(tie)
    count = np.zeros(n, np.int64)
    for s in range(len(sets)):
        for t in range(SIZE):
            count[sets[s, t]] += 1
    usable = count < max_memberships
    bonus = np.where(count == 0, coverage_bonus, 0.0).astype(np.float32)
    loc = np.full(n, -1, np.int64)
    extra = np.empty((n, SIZE), np.int64)
    m = 0
    row = np.empty(SIZE, np.int64)
    for u in np.argsort(np.diff(indptr) * n + tie):
        if count[u] > 0:
            continue
        if _best_clique(u, indptr, idx, sim, usable, bonus, budget, loc, row) == -np.inf:
            continue
        for t in range(SIZE):
            count[row[t]] += 1
            usable[row[t]] = count[row[t]] < max_memberships
            bonus[row[t]] = 0.0
        extra[m] = row
        m += 1
    return extra[:m]


def form_sets(
    neighbours: np.ndarray,
    similarity: np.ndarray,
    allowed: np.ndarray,
    *,
    seed: int,
    max_memberships: int,
    coverage_bonus: float = 0.5,
    budget: int = 5_000,
    rounds: int = 20,
) -> np.ndarray:
    """Closed sets of 5 captions; see the module docstring.

    neighbours: int64 (n, K), each caption's K nearest captions of its split by PV cosine
    (best first, -1 padded, never itself nor a caption of its image); similarity: float32 (n, K),
    their cosines; allowed: bool (n, K), whether the pair may share a set (symmetric, False for
    same-image pairs). Every pair of a set is an edge, so its cosine is given.

    max_memberships: 1 returns a partition; more adds overlay sets for the captions the
    partition leaves out, each caption in at most that many sets (one instance per membership).
    coverage_bonus: weight, in cosine units, of covering one more caption in an overlay set.
    budget: innermost steps per clique search; rounds: local search rounds at most.

    Returns int64 (m, 5): each row 5 distinct captions, pairwise allowed kNN edges.
    """
    n = len(neighbours)
    tie = np.random.default_rng(seed).permutation(n).astype(np.int64)
    indptr, idx, sim = _adjacency(
        np.asarray(neighbours, np.int64),
        np.asarray(similarity, np.float32),
        np.asarray(allowed, np.bool_),
    )
    sets = _repair(_pack(indptr, idx, sim, tie, budget), indptr, idx, sim, tie, budget, 5)
    _local_search(sets, indptr, idx, sim, rounds, 1e-4)
    if max_memberships < 2:
        return sets
    extra = _overlay(sets, indptr, idx, sim, tie, budget, max_memberships, coverage_bonus)
    return np.concatenate([sets, extra])


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
            best = _heaviest(w_seed, w, budget, found)
        if best == -np.inf:
            every = np.empty(m, np.float64)
            for a in range(m):
                every[a] = weights[j, 0, a + 1]
            exists = _heaviest(every, weights[j, 1 : m + 1, 1 : m + 1], budget, found)
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
