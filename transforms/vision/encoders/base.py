"""What every image encoder is: a model with its own preprocessing, loaded once.

An encoder family (torchvision backbones, open_clip image towers, Hugging Face vision
models; registry.py) loads its model from an :class:`EncoderSpec`: weights by name
(``--model``, ``--pretrained``: the library's own loader, which downloads them on a user's
machine) or from a checkpoint (``--checkpoint``, local or gs://). The loaded
:class:`ImageEncoder` turns a picture into pixels (``preprocess``, the model's transforms
or image processor) and a stack of pixels into vectors (``encode``), the same vectors for
the same pixels on every run: eval mode, no gradients, deterministic algorithms.
"""

import os
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from apache_beam.io.filesystems import FileSystems

from transforms.errors import InputError
from transforms.files import bucket_of, list_files, read_file, write_file
from transforms.vision.extra import vision_module


@dataclass(frozen=True)
class EncoderSpec:
    library: str  # the family's registry name: the library that loads it
    model: str  # the library's model name or id; "" for the family's default
    pretrained: str  # weights by name; "" for none
    checkpoint: str  # a checkpoint file or folder; "" for none


class ImageEncoder(ABC):
    """One family of encoders. A subclass names itself, its default model and how to load."""

    name: ClassVar[str]
    default_model: ClassVar[str]
    summary: ClassVar[str]  # for --help and the manual: what the vector is

    def __init__(self, model: Any):
        self.model = model.eval()
        self._lock = threading.Lock()  # one batch at a time through the shared model

    @classmethod
    @abstractmethod
    def load(cls, spec: EncoderSpec) -> "ImageEncoder":
        """The encoder ``spec`` asks for; an InputError naming the model or checkpoint if it
        cannot be loaded."""

    @classmethod
    def problems(cls, spec: EncoderSpec) -> list[str]:
        """What is wrong with ``spec`` for this family, found before any work."""
        return []

    @abstractmethod
    def preprocess(self, picture) -> np.ndarray:
        """An RGB PIL picture -> float32 (channels, height, width), as the model was trained."""

    @abstractmethod
    def features(self, pixels):
        """A float tensor (n, channels, height, width) -> the (n, ...) features tensor."""

    def encode(self, pixels: np.ndarray) -> np.ndarray:
        """float32 (n, channels, height, width) -> float32 (n, dim)."""
        torch = vision_module("torch", f"--library {self.name}")
        with self._lock, torch.inference_mode():
            was_deterministic = torch.are_deterministic_algorithms_enabled()
            torch.use_deterministic_algorithms(True)
            try:
                vectors = self.features(torch.from_numpy(np.ascontiguousarray(pixels)))
            finally:
                torch.use_deterministic_algorithms(was_deterministic)
        return vectors.reshape(len(pixels), -1).float().numpy()


class TransformEncoder(ImageEncoder):
    """A family whose models come with a picture transform (torchvision's, open_clip's) and
    whose random weights would measure nothing, so named weights or a checkpoint are needed."""

    def __init__(self, model: Any, transform: Callable):
        super().__init__(model)
        self._transform = transform

    @classmethod
    def problems(cls, spec: EncoderSpec) -> list[str]:
        if spec.pretrained or spec.checkpoint:
            return []
        return [f"--library {cls.name} needs --pretrained or --checkpoint: random weights"]

    def preprocess(self, picture) -> np.ndarray:
        return self._transform(picture).numpy()


def seeded(needed_by: str) -> Any:
    """torch, seeded: any randomness a model's construction has is the same on every run."""
    torch = vision_module("torch", needed_by)
    torch.manual_seed(0)
    return torch


def local_checkpoint(path: str) -> str:
    """The checkpoint at ``path`` as a local path the libraries can read: a local file or
    folder as it is; one on gs:// copied to a temporary folder first (a folder: its files).

    >>> local_checkpoint("no/such/model.pt")
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: --checkpoint no/such/model.pt: no such file or folder
    """
    if not bucket_of(path):
        if not os.path.exists(path):
            raise InputError(f"--checkpoint {path}: no such file or folder")
        return path
    folder = tempfile.mkdtemp(prefix="dmc-checkpoint-")
    files = list_files(FileSystems.join(path.rstrip("/"), "*"))
    for source in files or [path]:
        if not files and not FileSystems.exists(source):
            raise InputError(f"--checkpoint {path}: no such file or folder")
        write_file(os.path.join(folder, os.path.basename(source)), read_file(source))
    return folder if files else os.path.join(folder, os.path.basename(path))


def first_line(error: BaseException) -> str:
    """An exception's message in one line, for errors naming the model or checkpoint."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
