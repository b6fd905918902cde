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
    uses_image: ClassVar[bool] = False
    selection: ClassVar[dict] = {}

    def scores(self, batch: Batch) -> np.ndarray:
        return batch.text_feature(self.feature)


TEXT_RULES = (
    TextRule("Hub by BLEU", "hub_bleu"),
    TextRule("Hub by PV cosine", "hub_pv"),
    TextRule("Longest option", "length"),
    TextRule("Novelty guess", "novel"),
)
