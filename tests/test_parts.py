"""Parts of a split along PV space (transforms/strategies/closed_sets/parts.py)."""

import numpy as np

from transforms.strategies.closed_sets.parts import depth_for, part_of, plan_parts, sample_rows


def clustered(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, 24))
    vectors = centres[rng.integers(40, size=n)] + 0.6 * rng.normal(size=(n, 24))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_parts_stay_within_the_shard_size_and_keep_neighbours_together():
    vectors, shard_size = clustered(20_000), 3_000
    depth = depth_for(len(vectors), shard_size)
    tree = plan_parts(vectors[sample_rows(len(vectors), depth, seed=0)], depth, seed=0)
    part = part_of(tree, vectors)
    sizes = np.bincount(part, minlength=tree.parts)
    assert tree.parts == 16 and sizes.max() <= shard_size and sizes.min() > 0
    nearest = np.argsort(-(vectors[:500] @ vectors.T), axis=1)[:, 1:11]
    same = (part[nearest] == part[:500, None]).mean()
    assert same > 2 / tree.parts  # far more than a random cut's 1/16 of the neighbours


def test_a_small_split_is_one_part_and_planning_is_deterministic():
    vectors = clustered(2_000)
    assert depth_for(len(vectors), 5_000) == 0
    tree = plan_parts(vectors[sample_rows(len(vectors), 0, seed=0)], 0, seed=0)
    assert tree.parts == 1 and part_of(tree, vectors).tolist() == [0] * 2_000
    first = plan_parts(vectors, 3, seed=4)
    again = plan_parts(vectors.copy(), 3, seed=4)
    np.testing.assert_array_equal(part_of(first, vectors), part_of(again, vectors))
