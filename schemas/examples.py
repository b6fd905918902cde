"""What the trainer feeds its models: one instance as vectors, and a stack of them.

An :class:`Example` is one instance after feature building: the image vector,
one vector per option (the option's PV vector, projected), the text-only
features of each option (``TEXT_FEATURES``), the option texts (for the models
that read words) and the label. A version's instances all have the same number
k of options (5 for MC-IC, 4 for Visual Madlibs, 2 for forced choice). A
:class:`Batch` stacks examples into arrays, the form every model scores::

    batch.images   (n, dim)        batch.options  (n, k, dim)
    batch.text     (n, k, 4)       batch.labels   (n,)
    batch.texts    (n, k) str
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

TEXT_FEATURES = ("length", "hub_bleu", "hub_pv", "novel")


class Example(NamedTuple):
    example_id: str
    split: str
    image_id: str  # the captioning metrics compare a caption generated from it with its captions
    label: int
    image: np.ndarray  # float32 (dim,)
    options: np.ndarray  # float32 (k, dim)
    text: np.ndarray  # float32 (k, len(TEXT_FEATURES))
    texts: tuple[str, ...]  # the k option texts, in the order of ``options``
    option_set: str  # the closed set it is one of (schemas.instance.option_set)


@dataclass(frozen=True)
class Batch:
    images: np.ndarray
    options: np.ndarray
    text: np.ndarray
    labels: np.ndarray
    texts: np.ndarray  # object (n, k): the option texts

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def num_options(self) -> int:
        return self.options.shape[1]

    @classmethod
    def stack(cls, examples: Sequence[Example]) -> "Batch":
        texts = np.empty((len(examples), len(examples[0].texts)), dtype=object)
        texts[:] = [e.texts for e in examples]
        return cls(
            images=np.stack([e.image for e in examples]),
            options=np.stack([e.options for e in examples]),
            text=np.stack([e.text for e in examples]),
            labels=np.asarray([e.label for e in examples], dtype=np.int64),
            texts=texts,
        )

    def take(self, rows: np.ndarray) -> "Batch":
        return Batch(
            self.images[rows],
            self.options[rows],
            self.text[rows],
            self.labels[rows],
            self.texts[rows],
        )

    def text_feature(self, name: str) -> np.ndarray:
        """One text feature of every option, (n, k)."""
        return self.text[:, :, TEXT_FEATURES.index(name)]
