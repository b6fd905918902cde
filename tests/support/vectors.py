"""Vectors with structure to search, for the index tests and its benchmark's."""

import numpy as np


def clustered(count: int = 4000, dim: int = 16, clusters: int = 40, seed: int = 0) -> np.ndarray:
    """Unit vectors around ``clusters`` centres: what a faiss index must find neighbours in."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    vectors = centres[rng.integers(clusters, size=count)] + 0.3 * rng.normal(size=(count, dim))
    vectors = vectors.astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
