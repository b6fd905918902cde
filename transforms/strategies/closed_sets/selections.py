"""A closed set's instances: one Selection per member, the other four its decoys.

The grouping within a part and the border sets across parts both end here, so a set's
instances are built the same way wherever it formed.
"""

from collections.abc import Iterator

import numpy as np

from schemas.records import Selection
from transforms.corpus.neighbours import Pool
from transforms.corpus.store import Corpus
from transforms.corpus.surface import sim_surf_batch
from transforms.progress import timed_items
from transforms.strategies.choose import decoys_at
from transforms.strategies.scoring import best_first, score


def cosines_among(pool: Pool, rows: np.ndarray) -> np.ndarray:
    """(n, n) PV cosines among ``rows`` (captions of ``pool``), from the index's vectors."""
    vectors = pool.index.reconstruct_batch(np.searchsorted(pool.rows, rows))
    return (vectors @ vectors.T).astype(np.float64)


def set_selections(
    corpus: Corpus, pool: Pool, sets: np.ndarray, counts: np.ndarray, lam: float, limit: float
) -> Iterator[Selection]:
    """One Selection per member of each set (corpus rows); ``counts``: which membership of
    its caption each is (example ids of the second and later end in ``.<count>``). Timed in
    ``closed_sets/selections_ms``, wherever the sets formed."""
    return timed_items(
        "closed_sets", "selections", _selections(corpus, pool, sets, counts, lam, limit)
    )


def _selections(
    corpus: Corpus, pool: Pool, sets: np.ndarray, counts: np.ndarray, lam: float, limit: float
) -> Iterator[Selection]:
    scratch = corpus.ngrams.scratch()
    for members, member_counts in zip(sets, counts, strict=True):
        cosines = cosines_among(pool, members)
        for k, target_row in enumerate(members):
            others = np.delete(np.arange(len(members)), k)
            candidates = members[others]
            sim_pv = cosines[k, others]
            sim_surf = sim_surf_batch(corpus.ngrams, members[k : k + 1], candidates[None], scratch)[
                0
            ]
            scores = score(sim_pv, sim_surf, lam, limit)
            target = corpus.caption(int(target_row))
            if member_counts[k] > 1:
                target = target._replace(example_id=f"{target.example_id}.{member_counts[k]}")
            ordered = best_first(scores, candidates, np.arange(len(candidates)))
            similarities = (candidates, sim_pv, sim_surf, scores)
            yield Selection(target, decoys_at(corpus, *similarities, ordered))
