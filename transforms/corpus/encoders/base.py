"""What every sentence encoder is: a pretrained model turning caption texts into unit
vectors, and the identity that names it in a dataset version.

The identity is read from the model's folder without loading it (the driver names the
version with it before any worker loads the model): the digest of its weight files, so
another model, or the same one retrained, makes another version; and the languages its
model card declares, so a caption language the model was not trained on can be refused.
"""

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from transforms.errors import InputError

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx")
# a model card's YAML front matter opens and closes with this line
FRONT_MATTER = "---"
MULTILINGUAL = "multilingual"


@dataclass(frozen=True)
class EncoderIdentity:
    family: str  # registry key, e.g. "sentence_transformers"
    model: str  # what the user passed (a name, a folder or a hub id)
    sha256: str  # of the weight files (weights_digest): another model, another version
    bytes: int  # the weight files' size, which the sha256 covers
    languages: tuple[str, ...]  # ISO codes the model card declares; () when it declares none

    def covers(self, language: str) -> bool:
        """Whether the model was trained on captions in ``language``; a card declaring no
        language is not refused (unknown), and "multilingual" covers every language.

        >>> EncoderIdentity("f", "m", "", 0, ("en",)).covers("de")
        False
        >>> EncoderIdentity("f", "m", "", 0, ()).covers("de")
        True
        """
        return not self.languages or language in self.languages or MULTILINGUAL in self.languages


class SentenceEncoder(ABC):
    """A loaded encoder; one per process (registry.load_encoder memoises it). A family is
    constructed from the model's local folder and its identity."""

    identity: EncoderIdentity

    @abstractmethod
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim), unit rows; row i is texts[i]'s vector."""

    @property
    @abstractmethod
    def dim(self) -> int:
        """The vectors' size."""


def weights_digest(folder: Path) -> tuple[str, int]:
    """(sha256, size) of a model folder's weight files: the digest in sorted relative-path
    order, each file's relative path then its bytes, is what tells two models apart,
    whatever their names. Configuration and tokenizer files are left out: they change with
    library versions that save the same weights."""
    weights = sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.name.endswith(WEIGHT_SUFFIXES)
    )
    if not weights:  # nothing would tell this model from another
        suffixes = ", ".join(f"*{suffix}" for suffix in WEIGHT_SUFFIXES)
        raise InputError(f"{folder}: no weight files ({suffixes}); not a model folder")
    digest, size = hashlib.sha256(), 0
    for relative in weights:
        digest.update(relative.encode())
        with open(folder / relative, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
                size += len(block)
    return digest.hexdigest(), size


def card_languages(folder: Path) -> tuple[str, ...]:
    """The ``language:`` of the model card's YAML front matter (README.md), a string or a
    list; () when there is no card, no front matter or no language.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "README.md").write_text("---\\nlanguage:\\n- en\\n- de\\n---\\n# card\\n")
    >>> card_languages(folder)
    ('en', 'de')
    """
    card = folder / "README.md"
    lines = card.read_text(encoding="utf-8").splitlines() if card.is_file() else []
    if not lines or lines[0].strip() != FRONT_MATTER:
        return ()
    closing = next((k for k, line in enumerate(lines[1:], 1) if line.strip() == FRONT_MATTER), None)
    front = yaml.safe_load("\n".join(lines[1:closing])) if closing else None
    declared = front.get("language") if isinstance(front, dict) else None
    if isinstance(declared, str):
        declared = [declared]
    return tuple(str(code) for code in declared or ())
