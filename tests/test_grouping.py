"""Closed sets (transforms/strategies/grouping.py) on small planted instances."""

import itertools

import numpy as np
import pytest

from transforms.strategies.grouping import form_sets


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
