"""PV vectors of the captions a sampled model was not trained on, inferred in parallel.

Above ``--pv_train_sample`` captions, PV trains on a seeded sample only
(:func:`transforms.corpus.paragraph_vectors.train_sample_rows`) and the other
captions' vectors are inferred here, by a DoFn running on every worker over
shards of those rows. Each worker process loads the saved model and the
captions to infer once (``apache_beam.utils.shared.Shared``, :class:`SharedModel`),
never as part of an element. A caption's vector depends only on the model, its
words and (seed, caption id), so it is the same on any worker, in any shard.
"""

import io
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared

from schemas.layout import CAPTIONS_FILE, INFERRED_DIRECTORY, TRAINED_ROWS_FILE, corpus_file
from transforms.corpus.paragraph_vectors import infer_unit_vector, load_model
from transforms.files import read_file, write_file
from transforms.progress import Progress, timed, timed_load
from transforms.seeds import keyed_rng

if TYPE_CHECKING:
    from gensim.models.doc2vec import Doc2Vec  # gensim loads once a model is trained or read

# Captions per inference shard: enough shards for every worker, each big enough to be worth
# a bundle (5,000 captions are ~10 s of one core at dim 256, 20 epochs).
SHARDS, SMALLEST_SHARD, LARGEST_SHARD = 16, 250, 5000
BATCH = 500  # captions between progress updates


class InferShard(NamedTuple):
    """Rows ``[start, end)`` of the rows to infer (the corpus rows not in the sample)."""

    directory: str  # the corpus directory
    model: str  # the saved model's path
    start: int
    end: int


class InferredShard(NamedTuple):
    start: int
    end: int
    path: str  # float32 (end - start, dim) unit vectors, .npy


def shard_path(directory: str, start: int) -> str:
    return FileSystems.join(directory, INFERRED_DIRECTORY, f"rows-{start:012d}.npy")


def row_ranges(count: int) -> Iterator[tuple[int, int]]:
    """``count`` rows as [start, end) ranges: :data:`SHARDS` of them, or ranges of the
    smallest or largest size. Every stage that shares rows out among workers cuts them so.

    >>> list(row_ranges(600))
    [(0, 250), (250, 500), (500, 600)]
    >>> len(list(row_ranges(20_000))), len(list(row_ranges(1_000_000)))
    (16, 200)
    """
    size = min(max(-(-count // SHARDS), SMALLEST_SHARD), LARGEST_SHARD)
    for start in range(0, count, size):
        yield start, min(start + size, count)


def shards(directory: str, model: str, count: int) -> Iterator[InferShard]:
    """``count`` rows to infer, in :func:`row_ranges`."""
    for start, end in row_ranges(count):
        yield InferShard(directory, model, start, end)


def rows_to_infer(trained: np.ndarray, size: int) -> np.ndarray:
    """The rows of a corpus of ``size`` rows not among ``trained``, ascending."""
    rest = np.ones(size, dtype=bool)
    rest[trained] = False
    return np.flatnonzero(rest).astype(np.int64)


def infer_vectors(
    model: "Doc2Vec", documents: Sequence[Sequence[str]], caption_ids: Sequence[str], seed: int
) -> tuple[np.ndarray, int]:
    """(unit vectors (n, dim) float32, how many documents have no word the model knows).

    Each caption's start vector and negative draws come from (seed, caption id)
    (:func:`infer_unit_vector`); a caption with no known word keeps its random start.
    """
    vectors = np.empty((len(documents), model.dv.vector_size), dtype=np.float32)
    unknown = 0
    for k, (words, caption_id) in enumerate(zip(documents, caption_ids, strict=True)):
        rng = keyed_rng(seed, f"pv infer {caption_id}")
        vectors[k] = infer_unit_vector(model, words, rng)
        unknown += not any(word in model.wv.key_to_index for word in words)
    return vectors, unknown


@dataclass
class Inference:
    """What a worker process needs to infer any shard; loaded once per process."""

    model: "Doc2Vec"
    caption_ids: pa.ChunkedArray  # of the rows to infer, in row order
    texts: pa.ChunkedArray
    lock: threading.Lock = field(default_factory=threading.Lock)  # the model's RNG

    def __len__(self) -> int:
        return len(self.texts)


def load_inference(directory: str, model: str) -> Inference:
    with timed_load("pv_model"):
        table = pq.read_table(
            io.BytesIO(read_file(corpus_file(directory, CAPTIONS_FILE))),
            columns=["caption_id", "text"],
        )
        trained = np.load(io.BytesIO(read_file(FileSystems.join(directory, TRAINED_ROWS_FILE))))
        rows = pa.array(rows_to_infer(trained, table.num_rows))
        table = table.take(rows)
        logging.info("loaded PV model %s to infer %d captions' vectors", model, table.num_rows)
        return Inference(load_model(model), table.column("caption_id"), table.column("text"))


@dataclass(frozen=True)
class SharedModel:
    """The worker process's one copy of the model: the first caller loads it."""

    shared: Shared

    def acquire(self, directory: str, model: str) -> Inference:
        return self.shared.acquire(
            lambda: load_inference(directory, model), tag=f"{directory}|{model}"
        )


class InferVectors(beam.DoFn):
    """InferShard -> InferredShard, once the shard's vectors are written."""

    def __init__(self, model: SharedModel, seed: int):
        self._model, self._seed = model, seed
        self._progress = None
        self._unknown = Metrics.counter("pv", "inferred_without_known_words")

    def process(self, shard: InferShard):
        inference = self._model.acquire(shard.directory, shard.model)
        if self._progress is None:
            self._progress = Progress("pv", "inferred", len(inference))
        parts = []
        for first in range(shard.start, shard.end, BATCH):
            last = min(first + BATCH, shard.end)
            with timed("pv", "infer"), inference.lock:
                vectors, unknown = infer_vectors(
                    inference.model,
                    [text.split() for text in inference.texts[first:last].to_pylist()],
                    inference.caption_ids[first:last].to_pylist(),
                    self._seed,
                )
            parts.append(vectors)
            self._unknown.inc(unknown)
            self._progress.advance(last - first)
        path = shard_path(shard.directory, shard.start)
        buffer = io.BytesIO()
        np.save(buffer, np.concatenate(parts))
        write_file(path, buffer.getvalue())
        yield InferredShard(shard.start, shard.end, path)
