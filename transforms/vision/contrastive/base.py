"""What every contrastive vision-language model (CLIP, SigLIP, ...) gives zero-shot scoring.

A model maps images and texts into one space as unit vectors, so an option's score
against its image is a cosine (a dot product) and the argmax over an instance's options
is the model's answer. Each library (open_clip, transformers) is one module behind this
interface, with its own preprocessing and tokenizer; ``registry.LIBRARIES`` names them.
Heavy packages are imported when a model is loaded, never at import time, so the core
generate path does not need them.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from PIL import Image


@dataclass(frozen=True)
class ModelSpec:
    """Which weights: by name (``model``, ``pretrained``: the library's own loader, which
    downloads on a user's machine) or a local ``checkpoint`` (a folder or file)."""

    library: str
    model: str = ""
    pretrained: str = ""
    checkpoint: str = ""
    batch_size: int = 64  # texts or images per forward pass


class ContrastiveModel(ABC):
    """Loaded once per worker process (``pipelines.evaluate``'s shared handle)."""

    library: ClassVar[str]  # the --library name

    @classmethod
    @abstractmethod
    def load(cls, spec: ModelSpec) -> "ContrastiveModel":
        """The model in inference mode on the CPU; an InputError for weights it cannot find."""

    @abstractmethod
    def encode_images(self, images: list[Image.Image]) -> np.ndarray:
        """(len(images), d) unit vectors."""

    @abstractmethod
    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """(len(texts), d) unit vectors, in the images' space."""


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero).

    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def in_batches(items: list, size: int):
    """Consecutive slices of at most ``size`` items.

    >>> list(in_batches([1, 2, 3], 2))
    [[1, 2], [3]]
    """
    for start in range(0, len(items), size):
        yield items[start : start + size]
