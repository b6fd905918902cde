"""Score (SPEC "Similarities", Eq. 1): what Algorithm 1 ranks candidates by.

Every strategy records it for each decoy as provenance; only ``mcic`` chooses by it.
"""

import numpy as np


def score(sim_pv: np.ndarray, sim_surf: np.ndarray, lam: float, limit: float) -> np.ndarray:
    """Eq. 1: 0 where simSURF >= L (too close to be fair), else the blend.

    >>> score(np.array([0.9, 0.9]), np.array([0.2, 0.5]), lam=0.3, limit=0.5).round(2).tolist()
    [0.41, 0.0]
    """
    return np.where(sim_surf >= limit, 0.0, lam * sim_pv + (1.0 - lam) * sim_surf)


def best_first(scores: np.ndarray, candidates: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """``kept`` ordered by Score, descending; ties to the lower caption id (row).

    >>> best_first(np.array([0.5, 0.7, 0.5]), np.array([9, 4, 2]), np.array([0, 1, 2])).tolist()
    [1, 2, 0]
    """
    return kept[np.lexsort((candidates[kept], -scores[kept]))]
