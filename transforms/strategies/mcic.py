"""``--decoys mcic``: Algorithm 1 of Ding et al. 2016, as the paper defines it.

Candidates: the target's top-N captions of other images by simPV. Decoys: the
four with the highest Score among those with Score > 0 (ties: lower caption
id), after the validity rules, the one documented deviation from the paper.
Nothing stops a text-only model here: the decoys are the target's nearest
neighbours, so the target sits at the centre of its option set.
"""

import numpy as np

from transforms.corpus.neighbours import Finder, top_neighbours
from transforms.strategies.base import NEIGHBOURS_MAY_FIT
from transforms.strategies.choose import ChoosingStrategy
from transforms.strategies.scoring import best_first

TOO_FEW_POSITIVE = "decoys/fewer_than_4_candidates_with_positive_score"


def by_score(scores: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Candidates with Score > 0, best first (ties: lower caption row).

    >>> by_score(np.array([0.5, 0.0, 0.7, 0.5]), np.array([9, 1, 2, 3])).tolist()
    [2, 3, 0]
    """
    return best_first(scores, candidates, np.flatnonzero((scores > 0) & (candidates >= 0)))


class Mcic(ChoosingStrategy):
    name = "mcic"
    summary = (
        "Algorithm 1 (Ding et al. 2016): the 4 best-Score candidates among the top-N by simPV; "
        "reproduces MCIC-COCO, text-only models beat chance"
    )
    pools = ("all", "split")
    limitations = NEIGHBOURS_MAY_FIT + (
        "MC-IC's decoys are the target's nearest paragraph-vector neighbours, so the target "
        "sits at the centre of its options: text-only models beat chance by a wide margin "
        "(see the audit), and image models are only informative by their margin over them."
    )
    filterable = True
    references = ("ding2016",)
    invariants = ("positive_score", "algorithm_1")

    prefer = staticmethod(by_score)
    too_few = TOO_FEW_POSITIVE

    def finder(self) -> Finder:
        return top_neighbours(self.config.neighbours)
