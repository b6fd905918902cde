"""PV-DBOW paragraph vectors (gensim ``Doc2Vec``, ``dm=0``): simPV's embedding."""

import logging
import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from apache_beam.io.filesystems import FileSystems
from gensim.models.doc2vec import Doc2Vec, TaggedDocument

from transforms.files import read_file


@dataclass(frozen=True)
class PVConfig:
    dim: int
    epochs: int
    min_count: int
    hs: int
    negative: int
    seed: int
    workers: int


def train_paragraph_vectors(documents: Sequence[Sequence[str]], config: PVConfig) -> Doc2Vec:
    """One tagged document per caption; document ``i`` is caption row ``i``.

    With ``workers=1`` the model is identical from run to run for a seed;
    gensim's multi-threaded training is faster but not reproducible.
    """
    started = time.monotonic()
    model = Doc2Vec(
        [TaggedDocument(list(words), [row]) for row, words in enumerate(documents)],
        dm=0,
        vector_size=config.dim,
        epochs=config.epochs,
        min_count=config.min_count,
        hs=config.hs,
        negative=config.negative,
        seed=config.seed,
        workers=config.workers,
    )
    logging.info(
        "trained PV-DBOW dim=%d epochs=%d on %d captions in %.1fs",
        config.dim,
        config.epochs,
        len(documents),
        time.monotonic() - started,
    )
    return model


def unit_vectors(model: Doc2Vec) -> np.ndarray:
    """Row-normalised float32 document vectors: inner product = cosine = simPV."""
    vectors = np.asarray(model.dv.vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.finfo(np.float32).tiny)


def save_model(model: Doc2Vec, path: str) -> None:
    """Through Beam's filesystems, so ``gs://`` works; gensim pickles into the handle."""
    with FileSystems.create(path) as handle:
        model.save(handle)


def load_model(path: str) -> Doc2Vec:
    """Reads a model written by :func:`save_model` (or gensim's own ``save``)."""
    return pickle.loads(read_file(path))
