"""The untrained text-only rules: how much of a dataset is solvable without the image.

They are the rows of the text-only audit that need no fitting (``TEXT_RULES``),
reported by the trainer and by :mod:`transforms.trainer.dataset_audit`. Each
rule scores the k options of an instance from their text alone and answers
with the best; accuracy is then read against chance (1/k: 20% for MC-IC's
five options). MC-IC picks the four decoys as nearest neighbours of the
target, so the target tends to sit at the centre of its option set: the "hub"
(the option most similar to the other four) gives it away on the published MCIC-COCO 32-34%
of the time (SPEC). The novelty guess measures the leak of the whole-corpus
decoy pool: dev/test targets never appear in training, most decoys do.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from schemas.examples import Batch


def hub_scores(similarity: np.ndarray) -> np.ndarray:
    """Each option's mean similarity to the other options (with two options: to the other).

    ``similarity[j, k]`` is option j's similarity to option k; the diagonal is ignored.

    >>> hub_scores(np.array([[1.0, 0.5, 0.1], [0.5, 1.0, 0.3], [0.1, 0.3, 1.0]])).round(2).tolist()
    [0.3, 0.4, 0.2]
    """
    count = similarity.shape[0]
    return (similarity.sum(axis=1) - np.diagonal(similarity)) / (count - 1)


@dataclass(frozen=True)
class TextRule:
    """An untrained text-only guess: the option with the largest value of one text feature."""

    name: str
    feature: str  # one of schemas.examples.TEXT_FEATURES
    meaning: str  # what the row measures, for a reader of the audit (the card says it)
    uses_image: ClassVar[bool] = False
    selection: ClassVar[dict] = {}

    def scores(self, batch: Batch) -> np.ndarray:
        return batch.text_feature(self.feature)


TEXT_RULES = (
    TextRule(
        "Hub by BLEU",
        "hub_bleu",
        "picks the option whose words overlap the other options' most (nearest-neighbour "
        "decoys surround their target)",
    ),
    TextRule("Hub by PV cosine", "hub_pv", "the same hub, by paragraph-vector cosine"),
    TextRule("Longest option", "length", "picks the longest option"),
    TextRule(
        "Novelty guess",
        "novel",
        "picks an option whose text never occurs in train (held-out targets do not; decoys "
        "drawn from the whole corpus may)",
    ),
)
