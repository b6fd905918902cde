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
read. Ties are broken by a seeded permutation, so the result is deterministic for a seed. The
clique searches themselves are ``cliques.py``'s, shared with the border sets.
"""

import heapq

import numba
import numpy as np

from transforms.strategies.closed_sets.cliques import SIZE, adjacency, best_clique

FULL_MASK = (1 << SIZE) - 1


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
        weight = best_clique(v, indptr, idx, sim, free, no_bonus, budget, loc, row)
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
            weight = best_clique(v, indptr, idx, sim, free, no_bonus, budget, loc, row)
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
                if best_clique(u, indptr, idx, sim, usable, no_bonus, budget, loc, row) == -np.inf:
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
        if best_clique(u, indptr, idx, sim, usable, bonus, budget, loc, row) == -np.inf:
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
    indptr, idx, sim = adjacency(
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
