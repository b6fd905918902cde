"""What the trainer feeds its models: one instance as vectors, and a stack of them.

An :class:`Example` is one instance after feature building: the image vector,
one vector per option (the option's PV vector, projected), the text-only
features of each option (``TEXT_FEATURES``) and the label. A :class:`Batch`
stacks examples into arrays, the form every model scores::

    batch.images   (n, dim)        batch.options  (n, 5, dim)
    batch.text     (n, 5, 4)       batch.labels   (n,)
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

TEXT_FEATURES = ("length", "hub_bleu", "hub_pv", "novel")


class Example(NamedTuple):
    example_id: str
    split: str
    label: int
    image: np.ndarray  # float32 (dim,)
    options: np.ndarray  # float32 (5, dim)
    text: np.ndarray  # float32 (5, len(TEXT_FEATURES))


@dataclass(frozen=True)
class Batch:
    images: np.ndarray
    options: np.ndarray
    text: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    @classmethod
    def stack(cls, examples: Sequence[Example]) -> "Batch":
        return cls(
            images=np.stack([e.image for e in examples]),
            options=np.stack([e.options for e in examples]),
            text=np.stack([e.text for e in examples]),
            labels=np.asarray([e.label for e in examples], dtype=np.int64),
        )

    def text_feature(self, name: str) -> np.ndarray:
        """One text feature of every option, (n, 5)."""
        return self.text[:, :, TEXT_FEATURES.index(name)]
