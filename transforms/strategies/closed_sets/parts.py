"""Parts of a split along PV space: what lets closed sets form on many workers at once.

A set's five captions are mutual PV neighbours, so cutting a split into regions of PV
space loses few sets: most of a caption's nearest captions lie in its own region. The
regions are the leaves of a balanced 2-means tree, planned from a seeded sample of the
split's vectors: each node splits its sample by 2-means and cuts at the median of the
projections onto the line through the two centroids, so both halves hold about as many
captions. ``depth`` levels give ``2 ** depth`` parts of about ``size / 2 ** depth``
captions each; the depth is the least that brings that to at most ``FILL`` of the
shard size, so sampling noise leaves every part below the shard size.

The tree is a few kilobytes, planned once and handed to every worker; assigning a
caption to its part costs ``depth`` dot products. The parts, and the nodes above them,
key every grouped stage of closed sets (``PartKey``).
"""

import math
from dataclasses import dataclass

import numpy as np
from apache_beam.metrics import Metrics

from transforms.corpus.neighbours import SearchableCorpus, SharedCorpus
from transforms.corpus.split import SPLITS
from transforms.corpus.store import CorpusRef

FILL = 0.8  # parts are planned at this share of the shard size: the sample's noise stays below it
SAMPLE_PER_PART = 4096  # sampled vectors per part: the median's error is ~1/sqrt of it
KMEANS_ITERATIONS = 10
# What every grouped stage of closed sets is keyed by: (split, node of the part tree, corpus
# directory). The node is a part (a leaf) until the border rounds climb the tree.
PartKey = tuple[str, int, str]


@dataclass(frozen=True)
class PartTree:
    """A complete binary tree: node k's children are 2k+1 (below) and 2k+2 (at or above)."""

    directions: np.ndarray  # float64 (2 ** depth - 1, dim), unit length
    thresholds: np.ndarray  # float64 (2 ** depth - 1,)

    @property
    def depth(self) -> int:
        return int(math.log2(len(self.thresholds) + 1))

    @property
    def parts(self) -> int:
        return 2**self.depth


def depth_for(size: int, shard_size: int) -> int:
    """The fewest halvings that bring ``size`` captions to at most FILL of ``shard_size``.

    >>> depth_for(15_000, 20_000), depth_for(500_000, 20_000), depth_for(500_000, 1_000_000)
    (0, 5, 0)
    """
    if size <= shard_size:
        return 0
    return max(0, math.ceil(math.log2(size / (FILL * shard_size))))


def two_means_direction(vectors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The unit vector from one 2-means centroid to the other (Lloyd's, started from a seeded
    vector and the one farthest from it).

    >>> points = np.array([[0.0, 1.0], [0.1, 1.0], [0.0, -1.0], [0.1, -1.0]])
    >>> np.abs(two_means_direction(points, np.random.default_rng(0))).round(3).tolist()
    [0.0, 1.0]
    """
    first = rng.integers(len(vectors))
    second = np.argmax(((vectors - vectors[first]) ** 2).sum(axis=1))
    centroids = vectors[[first, second]].astype(np.float64)
    for _ in range(KMEANS_ITERATIONS):
        nearer_second = (vectors @ (centroids[1] - centroids[0])) > 0.5 * (
            centroids[1] @ centroids[1] - centroids[0] @ centroids[0]
        )
        if nearer_second.all() or not nearer_second.any():
            break
        centroids = np.stack([vectors[~nearer_second].mean(0), vectors[nearer_second].mean(0)])
    direction = centroids[1] - centroids[0]
    norm = np.linalg.norm(direction)
    if norm == 0:  # identical vectors: any direction cuts them in halves by the median
        direction, norm = np.eye(vectors.shape[1])[0], 1.0
    return direction / norm


def plan_parts(sample: np.ndarray, depth: int, seed: int) -> PartTree:
    """The tree over a sample of a split's vectors (float, rows); deterministic for a seed.

    >>> plan_parts(np.zeros((0, 4)), 0, seed=0).parts
    1
    """
    nodes = 2**depth - 1
    directions = np.zeros((nodes, sample.shape[1]), dtype=np.float64)
    thresholds = np.zeros(nodes, dtype=np.float64)
    members = {0: np.asarray(sample, dtype=np.float64)}
    for node in range(nodes):
        vectors = members.pop(node)
        rng = np.random.default_rng([seed, node])
        directions[node] = two_means_direction(vectors, rng)
        projections = vectors @ directions[node]
        thresholds[node] = np.median(projections)
        members[2 * node + 1] = vectors[projections < thresholds[node]]
        members[2 * node + 2] = vectors[projections >= thresholds[node]]
    return PartTree(directions, thresholds)


def part_of(tree: PartTree, vectors: np.ndarray) -> np.ndarray:
    """Each vector's part, 0 .. tree.parts - 1 (int64).

    >>> tree = PartTree(np.array([[1.0, 0.0]]), np.array([0.0]))
    >>> part_of(tree, np.array([[-0.5, 1.0], [0.5, 1.0]])).tolist()
    [0, 1]
    """
    node = np.zeros(len(vectors), dtype=np.int64)
    vectors = np.asarray(vectors, dtype=np.float64)
    for _ in range(tree.depth):
        above = np.einsum("bd,bd->b", vectors, tree.directions[node]) >= tree.thresholds[node]
        node = 2 * node + 1 + above
    return node - (tree.parts - 1)


def sample_rows(size: int, depth: int, seed: int) -> np.ndarray:
    """Which of a split's ``size`` rows (positions) plan its tree: sorted, seeded."""
    count = min(size, SAMPLE_PER_PART * 2**depth) if depth else 0
    return np.sort(np.random.default_rng([seed, size]).choice(size, count, replace=False))


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


def parts_of(
    searchable: SearchableCorpus, tree: PartTree, split: str, rows: np.ndarray
) -> np.ndarray:
    """The part of each of ``rows`` (captions of ``split``)."""
    if tree.depth == 0:
        return np.zeros(len(rows), np.int64)
    pool = searchable.pools[split]
    return part_of(tree, pool.index.reconstruct_batch(np.searchsorted(pool.rows, rows)))
