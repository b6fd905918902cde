"""PV-DBOW paragraph vectors (gensim ``Doc2Vec``, ``dm=0``): simPV's embedding.

gensim (with scipy, half a second) is imported by the functions that train, infer and load:
the options and the strategies name this module, and --help should not wait for it.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from apache_beam.io.filesystems import FileSystems

from transforms.errors import InputError
from transforms.files import read_file
from transforms.seeds import keyed_int

if TYPE_CHECKING:
    from gensim.models.doc2vec import Doc2Vec

# The attribute a model carries with the digest of the captions it was trained on.
CORPUS_DIGEST = "dmc_corpus_sha256"
# The attribute a model trained on a sample of a corpus carries: which sample (see TrainSample).
TRAIN_SAMPLE = "dmc_train_sample"


@dataclass(frozen=True)
class PVConfig:
    dim: int
    epochs: int
    min_count: int
    hs: int
    negative: int
    seed: int
    workers: int
    train_sample: int = 0  # corpora with more captions train on a seeded sample of this many


def train_sample_rows(caption_ids: Sequence[str], size: int, seed: int) -> np.ndarray | None:
    """The rows PV trains on when a corpus has more than ``size`` captions (``size`` > 0):
    the ``size`` captions with the smallest keys of (seed, caption id), ascending; None when
    every caption is trained on.

    A caption's key does not depend on the others, so the sample does not depend on the
    order captions arrive in, and a caption added to the corpus moves into the sample only
    if its key sorts in front of the largest sampled one.

    >>> train_sample_rows([str(i) for i in range(10)], 4, seed=0).tolist()
    [2, 4, 5, 7]
    >>> train_sample_rows(["1", "2"], 2, seed=0) is None
    True
    """
    if size <= 0 or len(caption_ids) <= size:
        return None
    keys = np.fromiter(
        (keyed_int(seed, f"pv train sample {caption_id}") for caption_id in caption_ids),
        dtype=np.uint64,
        count=len(caption_ids),
    )
    return np.sort(np.argsort(keys, kind="stable")[:size]).astype(np.int64)


def train_paragraph_vectors(documents: Sequence[Sequence[str]], config: PVConfig) -> Doc2Vec:
    """One tagged document per caption; document ``i`` is caption row ``i``.

    With ``workers=1`` the model is identical from run to run for a seed;
    gensim's multi-threaded training is faster but not reproducible.
    """
    from gensim.models.doc2vec import Doc2Vec, TaggedDocument

    check_vocabulary(documents, config.min_count)
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


def check_vocabulary(documents: Sequence[Sequence[str]], min_count: int) -> None:
    """gensim fails deep inside training when --pv_min_count leaves no word; say so first."""
    counts = Counter(word for words in documents for word in words)
    most = max(counts.values(), default=0)
    if most < min_count:
        raise InputError(
            f"--pv_min_count {min_count} leaves no word to train on: the most frequent word "
            f"occurs {most} times; lower --pv_min_count"
        )


def corpus_digest(caption_ids: Sequence[str], documents: Sequence[Sequence[str]]) -> str:
    """The sha256 of the captions, in order: what a model's document vectors stand for.

    >>> corpus_digest(["1"], [["a", "dog"]]) == corpus_digest(["1"], [["a", "dog"]])
    True
    >>> corpus_digest(["1", "2"], [["a"], ["b"]]) == corpus_digest(["2", "1"], [["b"], ["a"]])
    False
    """
    digest = hashlib.sha256()
    for caption_id, words in zip(caption_ids, documents, strict=True):
        digest.update(f"{caption_id}\t{' '.join(words)}\n".encode())
    return digest.hexdigest()


def check_model_corpus(model: Doc2Vec, digest: str, path: str) -> None:
    """A reused model must have been trained on exactly these captions in this order."""
    stamped = getattr(model, CORPUS_DIGEST, None)
    if stamped is None:
        raise InputError(
            f"{path}: the model carries no checksum of the captions it was trained on, so "
            "it cannot be matched to this corpus; use one written by pipelines.generate or "
            "pipelines.optimize"
        )
    if stamped != digest:
        raise InputError(
            f"{path}: the model was trained on other captions (or in another order) than "
            "this corpus; train one on it (drop --pv_model)"
        )


def unit_vectors(model: Doc2Vec) -> np.ndarray:
    """Row-normalised float32 document vectors: inner product = cosine = simPV."""
    return unit_rows(np.asarray(model.dv.vectors, dtype=np.float32))


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, np.finfo(np.float32).tiny)


def infer_unit_vector(model: Doc2Vec, words: Sequence[str], rng: np.random.Generator) -> np.ndarray:
    """The unit vector a PV-DBOW model (``dm=0``, what this project trains) gives a text it was
    not trained on, normalised as ``unit_vectors``'.

    gensim's ``infer_vector`` starts from a vector seeded by Python's per-process salted
    ``hash`` of the text and samples negatives from the model's shared RNG, so the same
    text gets another vector in another process. This is its PV-DBOW loop (the same start
    scale, epochs and learning-rate schedule) with both drawn from ``rng`` instead. The
    model's RNG is replaced, so callers sharing a model between threads must lock.
    """
    from gensim.models.doc2vec_inner import train_document_dbow

    size = model.dv.vector_size
    vector = ((rng.random(size) - 0.5) / size).astype(np.float32).reshape(1, size)
    model.random = np.random.RandomState(rng.integers(2**32, dtype=np.uint64))
    work = np.zeros(model.layer1_size, dtype=np.float32)
    alpha, step = model.alpha, (model.alpha - model.min_alpha) / max(model.epochs - 1, 1)
    for _ in range(model.epochs):
        train_document_dbow(
            model,
            list(words),
            [0],
            alpha,
            work,
            learn_words=False,
            learn_hidden=False,
            doctag_vectors=vector,
            doctags_lockf=np.ones(1, dtype=np.float32),
        )
        alpha -= step
    return unit_rows(vector[0])


def save_model(model: Doc2Vec, path: str) -> None:
    """Through Beam's filesystems, so ``gs://`` works; gensim pickles into the handle."""
    with FileSystems.create(path) as handle:
        model.save(handle)


PICKLE_START = b"\x80"  # the PROTO opcode that begins every pickle since protocol 2


def load_model(path: str) -> Doc2Vec:
    """Reads a model written by :func:`save_model` or gensim's ``save``.

    Reading is not accepting: a model is used only once :func:`check_model_corpus`
    found the checksum of exactly these captions stamped on it, which only models
    written by pipelines.generate and pipelines.optimize carry. A file that is no
    pickled Doc2Vec (another file given as ``--pv_model``, a truncated copy) is an
    InputError naming it, not a traceback from inside a pipeline run.
    """
    from gensim.models.doc2vec import Doc2Vec

    data = read_file(path)
    try:
        model = pickle.loads(data) if data.startswith(PICKLE_START) else None
    except (pickle.UnpicklingError, EOFError):  # a damaged or truncated pickle
        model = None
    if not isinstance(model, Doc2Vec):
        raise InputError(
            f"{path}: not a paragraph-vector model (a gensim Doc2Vec file, as written by "
            "pipelines.generate and pipelines.optimize)"
        )
    return model
