"""Closed sets' grouping and border sets (transforms/strategies/closed_sets/grouping.py,
cliques.py, border.py) on small planted instances."""

import itertools

import numpy as np
import pytest

from transforms.strategies.closed_sets import border
from transforms.strategies.closed_sets.cliques import (
    COVERED,
    NEIGHBOURS_TAKEN,
    NO_CLIQUE,
    NO_VALID_NEIGHBOURS,
    border_sets,
)
from transforms.strategies.closed_sets.grouping import form_sets


def planted(groups: int, k: int, noise: float, seed: int = 0):
    """``groups`` tight groups of 5 captions (5 images each) around random directions."""
    rng = np.random.default_rng(seed)
    n = 5 * groups
    centres = rng.normal(size=(groups, 32))
    vectors = np.repeat(centres, 5, axis=0) + noise * rng.normal(size=(n, 32))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    order = rng.permutation(n)  # planted groups are not consecutive rows
    vectors = vectors[order]
    group = np.repeat(np.arange(groups), 5)[order]
    cosine = vectors @ vectors.T
    np.fill_diagonal(cosine, -np.inf)
    neighbours = np.argsort(-cosine, axis=1, kind="stable")[:, :k].astype(np.int64)
    similarity = np.take_along_axis(cosine, neighbours, axis=1).astype(np.float32)
    return neighbours, similarity, np.ones_like(neighbours, dtype=bool), group


def edges(neighbours: np.ndarray, allowed: np.ndarray) -> set[tuple[int, int]]:
    rows, cols = np.nonzero(allowed & (neighbours >= 0))
    pairs = zip(rows.tolist(), neighbours[rows, cols].tolist(), strict=True)
    return {pair for a, b in pairs for pair in ((a, b), (b, a))}


@pytest.mark.parametrize("max_memberships", [1, 2])
def test_sets_are_allowed_cliques(max_memberships):
    neighbours, similarity, _, _ = planted(60, k=16, noise=0.5)
    rows = np.arange(300)[:, None]  # a symmetric rule forbidding a fifth of the pairs
    pair_key = np.minimum(rows, neighbours) * 300 + np.maximum(rows, neighbours)
    allowed = np.random.default_rng(1).random(300 * 300)[pair_key] > 0.2
    sets = form_sets(neighbours, similarity, allowed, seed=0, max_memberships=max_memberships)
    graph = edges(neighbours, allowed)
    assert sets.dtype == np.int64 and sets.shape[1] == 5 and len(sets) >= 25
    for row in sets.tolist():
        assert len(set(row)) == 5
        assert all(pair in graph for pair in itertools.combinations(row, 2))
    counts = np.bincount(sets.ravel(), minlength=300)
    assert counts.max() <= max_memberships


def test_deterministic_for_a_seed():
    neighbours, similarity, allowed, _ = planted(80, k=10, noise=1.2)
    first = form_sets(neighbours, similarity, allowed, seed=7, max_memberships=2)
    again = form_sets(neighbours, similarity, allowed, seed=7, max_memberships=2)
    np.testing.assert_array_equal(first, again)


def test_planted_groups_are_recovered_and_cover_everything():
    neighbours, similarity, allowed, group = planted(100, k=8, noise=0.3)
    sets = form_sets(neighbours, similarity, allowed, seed=0, max_memberships=1)
    assert len(sets) == 100  # a partition covering every caption
    assert np.array_equal(np.sort(sets.ravel()), np.arange(500))
    assert all(len(set(group[row].tolist())) == 1 for row in sets)


def test_noisy_groups_stay_pure_and_overlay_covers_the_rest():
    neighbours, similarity, allowed, group = planted(100, k=15, noise=0.7)
    partition = form_sets(neighbours, similarity, allowed, seed=0, max_memberships=1)
    assert len(partition) >= 90
    assert all(len(set(group[row].tolist())) == 1 for row in partition)
    sets = form_sets(neighbours, similarity, allowed, seed=0, max_memberships=2)
    assert np.array_equal(sets[: len(partition)], partition)  # overlay only adds sets
    assert len(np.unique(sets)) >= 490


def leftover_weights(rows: np.ndarray, candidates: np.ndarray, cosine: np.ndarray, allowed):
    """The border pass's input from a full cosine matrix and a pair rule, as LeftoverGraphs."""
    nodes = np.concatenate([rows[:, None], candidates], axis=1)
    weights = np.full((*nodes.shape, nodes.shape[1]), np.nan, dtype=np.float32)
    for b, row in enumerate(nodes):
        row = row[row >= 0]
        mask = allowed[np.ix_(row, row)]
        weights[b, : len(row), : len(row)] = np.where(mask, cosine[np.ix_(row, row)], np.nan)
    return weights


@pytest.mark.parametrize("overlap", [False, True])
def test_border_sets_are_allowed_cliques_and_take_each_caption_once(overlap):
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(200, 16))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = (vectors @ vectors.T).astype(np.float32)
    allowed = rng.random((200, 200)) > 0.3
    allowed &= allowed.T
    np.fill_diagonal(allowed, False)
    leftovers = np.arange(0, 200, 4)  # a quarter of the captions were left out
    masked = np.where(allowed[leftovers], cosine[leftovers], -np.inf)
    candidates = np.argsort(-masked, axis=1, kind="stable")[:, :12]
    weights = leftover_weights(leftovers, candidates, cosine, allowed)
    capacity = (
        (lambda ids: np.ones_like(ids))
        if overlap
        else (lambda ids: np.isin(ids, leftovers).astype(np.int64))
    )
    sets, reasons = border_sets(leftovers, candidates, weights, capacity, seed=0)
    assert len(sets) and sets.shape[1] == 5
    for row in sets.tolist():
        assert all(allowed[a, b] for a, b in itertools.combinations(row, 2))
    counts = np.bincount(sets.ravel(), minlength=200)
    assert counts.max() == 1  # every caption joins at most its capacity's sets
    if not overlap:  # only captions no set holds yet: the leftovers
        assert np.isin(sets, leftovers).all()
    covered = np.isin(leftovers, sets)
    assert ((reasons == COVERED) == covered).all()
    again = border_sets(leftovers, candidates, weights, capacity, seed=0)
    np.testing.assert_array_equal(sets, again[0])
    if overlap:  # captions with no capacity left never join one; leftovers may join two
        full = np.unique(sets[~np.isin(sets, leftovers)])[::2]

        def limited_capacity(ids):
            return np.where(np.isin(ids, full), 0, np.where(np.isin(ids, leftovers), 2, 1))

        limited, _ = border_sets(leftovers, candidates, weights, limited_capacity, seed=0)
        assert len(full) and not np.isin(limited, full).any()
        counts = np.bincount(limited.ravel(), minlength=200)
        assert counts[leftovers].max() <= 2 and np.delete(counts, leftovers).max() <= 1


def test_border_reasons_say_why_a_leftover_is_in_no_set():
    cosine = np.full((12, 12), 0.5, dtype=np.float32)
    allowed = np.ones((12, 12), dtype=bool)
    np.fill_diagonal(allowed, False)
    allowed[1, 2:5] = allowed[2:5, 1] = False  # leftover 1's candidates 2-5 hold no 4-clique
    allowed[1, 5] = allowed[5, 1] = True
    allowed[2, 3] = allowed[3, 2] = False
    leftovers = np.array([0, 1, 6])
    candidates = np.array(
        [
            [7, 8, 9, 10],  # 0: a clique with 7-10
            [2, 3, 4, 5],  # 1: 2 and 3 may not share a set
            [7, 8, 9, -1],  # 6: three candidates only
        ]
    )
    weights = leftover_weights(leftovers, candidates, cosine, allowed)
    once = np.ones_like
    sets, reasons = border_sets(leftovers, candidates, weights, once, seed=0)
    assert sets.tolist() == [[0, 7, 8, 9, 10]]
    assert reasons.tolist() == [COVERED, NO_CLIQUE, NO_VALID_NEIGHBOURS]
    candidates[1] = [7, 8, 9, 10]  # a clique, but whichever goes first takes its captions
    weights = leftover_weights(leftovers, candidates, cosine, allowed)
    sets, reasons = border_sets(leftovers, candidates, weights, once, seed=0)
    assert len(sets) == 1 and sorted(reasons[:2].tolist()) == [COVERED, NEIGHBOURS_TAKEN]


def test_kept_reorders_in_chunks_as_row_by_row(monkeypatch):
    """Only the candidates inside the region, first and in their order; each row's weights
    follow its candidates, NaN beyond them, whatever the chunk size."""
    rng = np.random.default_rng(4)
    candidates = rng.integers(-1, 50, size=(23, 6))
    inside = rng.random((23, 6)) < 0.6
    weights = rng.random((23, 7, 7)).astype(np.float32)
    expected_candidates, expected_weights = [], []
    for row, mask, w in zip(candidates, inside & (candidates >= 0), weights, strict=True):
        nodes = [0, *(np.flatnonzero(mask) + 1)]
        expected_candidates.append([*row[mask], *[-1] * (6 - mask.sum())])
        padded = np.full((7, 7), np.nan, np.float32)
        padded[: len(nodes), : len(nodes)] = w[np.ix_(nodes, nodes)]
        expected_weights.append(padded)
    monkeypatch.setattr(border, "KEPT_CHUNK", 5)
    got_candidates, got_weights = border.kept(candidates, weights.copy(), inside)
    assert got_candidates.tolist() == expected_candidates
    np.testing.assert_array_equal(got_weights, np.array(expected_weights))
