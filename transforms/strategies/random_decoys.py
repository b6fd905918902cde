"""``--decoys random``: decoys drawn uniformly from other images' captions in the pool.

Visual Madlibs' "easy" task. Each target draws ``DRAWN`` distinct captions of
other images (seeded by (seed, its caption id)) and keeps the first four that
pass the validity rules: rejection sampling, so the decoys stay uniform over
the valid captions. They are scored only for their provenance.
"""

import functools

import numpy as np

from transforms.corpus.neighbours import Finder, Pool, pool_similarities
from transforms.corpus.store import Corpus
from transforms.seeds import keyed_rng
from transforms.strategies.choose import ChoosingStrategy

YU2015 = """@inproceedings{yu2015madlibs,
  title = {Visual Madlibs: Fill in the Blank Description Generation and Question Answering},
  author = {Yu, Licheng and Park, Eunbyung and Berg, Alexander C. and Berg, Tamara L.},
  booktitle = {ICCV},
  year = {2015}
}"""

DRAWN = 16  # candidates per target: four valid ones among them on any real corpus


def draw(
    corpus: Corpus, pool: Pool, targets: np.ndarray, count: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(candidates, sim_pv) like ``neighbours.search``, but ``count`` captions of other images
    drawn uniformly from the pool, in drawing order.

    Each target's draw depends only on (seed, its caption id).
    """
    candidates = np.full((len(targets), count), -1, dtype=np.int64)
    for b, target in enumerate(targets):
        rng = keyed_rng(seed, f"random decoys of {corpus.captions['caption_id'][target]}")
        drawn = draw_others(corpus, pool, int(target), count, rng)
        candidates[b, : len(drawn)] = drawn
    return candidates, pool_similarities(pool, targets, candidates)


def draw_others(
    corpus: Corpus, pool: Pool, target: int, count: int, rng: np.random.Generator, rounds: int = 50
) -> list[int]:
    """Up to ``count`` distinct pool rows of other images, uniformly.

    Drawing with replacement and rejecting is uniform over the eligible rows
    and costs O(count) per target, not O(pool).
    """
    chosen: list[int] = []
    for _ in range(rounds):
        for row in pool.rows[rng.integers(len(pool.rows), size=2 * count)].tolist():
            if corpus.image_of[row] != corpus.image_of[target] and row not in chosen:
                chosen.append(row)
                if len(chosen) == count:
                    return chosen
    return chosen


def in_drawn_order(scores: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Every drawn candidate, in the order drawn.

    >>> in_drawn_order(np.array([0.1, 0.9, 0.0]), np.array([7, 3, -1])).tolist()
    [0, 1]
    """
    return np.flatnonzero(candidates >= 0)


class RandomDecoys(ChoosingStrategy):
    name = "random"
    summary = (
        "drawn uniformly from other images' captions in the pool (Visual Madlibs' easy task); "
        "text-only at chance, but easy for image models"
    )
    pools = ("all", "split")
    limitations = (
        "Random decoys are mostly about other things than the image, so image models find the "
        "target easily; with the whole-corpus pool, dev and test decoys are mostly training "
        "captions and the target never is (the audit's novelty guess measures that leak)."
    )
    filterable = True
    references = (YU2015,)

    prefer = staticmethod(in_drawn_order)

    def finder(self) -> Finder:
        return functools.partial(draw, count=DRAWN, seed=self.config.seed)
