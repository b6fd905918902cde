"""Seeded random streams that depend on a record, not on how a runner orders records."""

import hashlib

import numpy as np


def keyed_rng(seed: int, key: str) -> np.random.Generator:
    """A random stream that depends only on (seed, key).

    One stream per record (not one per run) keeps results independent of how
    the runner batches or orders records.
    """
    digest = hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=8).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))
