"""Every caption's vector from a pretrained sentence encoder: what the validity rule
``describes_the_image`` reads (:mod:`transforms.strategies.validity`).

    <output>/build/corpus/sentence_embeddings.npy   float32 (rows, dim), unit rows, row order

PV and BLEU see words; a reordered or reworded caption says the same thing in other words,
and a sentence encoder trained on paraphrases sees that. It reads each caption's original
text (``Caption.original``), as it was trained to. The rows are cut into shards that the
workers encode in parallel, each process loading the model once (``Shared``), with its
threads set deliberately; a last step writes the file in row order, shard after shard,
never holding the whole matrix. Each shard encodes the same rows in the same batches on
any worker, so the file's bytes do not depend on the runner.
"""

import io
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils.shared import Shared

from schemas.layout import SENTENCE_EMBEDDINGS_FILE, SENTENCE_PARTS_DIRECTORY, corpus_file
from transforms.corpus.encoders.base import SentenceEncoder
from transforms.corpus.encoders.registry import encoder_identity, load_encoder
from transforms.corpus.inference import row_ranges
from transforms.corpus.store import CorpusRef, read_caption_table, read_npy
from transforms.errors import InputError
from transforms.files import delete_folder, write_file
from transforms.progress import Progress, timed, timed_load
from transforms.threads import limit_torch

BATCH = 2048  # captions between progress updates (the encoder batches them by length itself)
NO_MODEL = "none"  # --validity_model none: the paper's rules only
# The cosine at which a candidate describes the target's image, chosen with all-MiniLM-L6-v2
# on Flickr8k's expert judgments (benchmarks/validity.py; docs/results.md): with the int8
# family's margin it keeps 11% of the pairs the experts judged to describe the image and
# rejects 8.5% of the others; of a default Flickr8k run's decoys an estimated 1.8% describe
# the image (3.4% weighed as the experts chose pairs to judge), against 3.0% (6.1%) at
# 0.55 and 19% (56%) without the rule. What it costs: docs/results.md.
DEFAULT_THRESHOLD = 0.5
VALIDITY_MODEL = "validity_model"  # what marks the model's entry among a manifest's inputs


@dataclass(frozen=True)
class EncoderSpec:
    """Which encoder a run uses: a family of :data:`registry.ENCODERS` and its model."""

    family: str
    model: str


class EncodeShard(NamedTuple):
    directory: str  # the corpus directory
    start: int
    end: int


class EncodedShard(NamedTuple):
    start: int
    end: int
    path: str  # float32 (end - start, dim) unit vectors, .npy


def model_checksum(spec: EncoderSpec, language: str) -> dict:
    """The encoder's entry among a version's inputs, so that its weights name the version;
    a caption language its model card does not declare is refused here, before any work."""
    identity = encoder_identity(spec.model, spec.family)
    if not identity.covers(language):
        raise InputError(
            f"--validity_model {spec.model} was trained on {', '.join(identity.languages)} "
            f"captions, not --language {language}: pass a multilingual sentence encoder (a "
            "folder, or a hub id in the local cache) or --validity_model none"
        )
    return {
        "path": spec.model,
        "sha256": identity.sha256,
        "bytes": identity.bytes,
        VALIDITY_MODEL: {"family": spec.family, "languages": list(identity.languages)},
    }


def shard_path(directory: str, start: int) -> str:
    return FileSystems.join(directory, SENTENCE_PARTS_DIRECTORY, f"rows-{start:012d}.npy")


@dataclass
class Encoding:
    """What a worker process needs to encode any shard of a corpus; loaded once."""

    encoder: SentenceEncoder
    originals: pa.ChunkedArray  # every caption's original text, in row order


@dataclass(frozen=True)
class SharedEncoder:
    shared: Shared
    spec: EncoderSpec

    def acquire(self, directory: str) -> Encoding:
        def load() -> Encoding:
            with timed_load("sentence_encoder"):
                originals = read_caption_table(directory, ["original"]).column("original")
                return Encoding(load_encoder(self.spec.model, self.spec.family), originals)

        return self.shared.acquire(load, tag=f"{directory}|{self.spec}")


class _EncodeShard(beam.DoFn):
    """EncodeShard -> EncodedShard, once its vectors are written. A text repeated within a
    shard is encoded once (COCO repeats its commonest captions, a synthetic corpus many)."""

    def __init__(self, encoder: SharedEncoder, threads: int):
        self._encoder, self._threads = encoder, threads
        self._progress = None

    def setup(self):
        limit_torch(self._threads)

    def process(self, shard: EncodeShard):
        encoding = self._encoder.acquire(shard.directory)
        if self._progress is None:
            self._progress = Progress("sentences", "encoded", len(encoding.originals))
        texts = encoding.originals[shard.start : shard.end].to_pylist()
        distinct, row_text = np.unique(np.array(texts, dtype=object), return_inverse=True)
        parts = []
        for first in range(0, len(distinct), BATCH):
            batch = distinct[first : first + BATCH].tolist()
            with timed("sentences", "encode"):
                parts.append(encoding.encoder.encode(batch))
            self._progress.advance(len(batch))
        self._progress.advance(len(texts) - len(distinct))  # repeated texts, encoded once
        buffer = io.BytesIO()
        np.save(buffer, np.concatenate(parts)[row_text])
        path = shard_path(shard.directory, shard.start)
        write_file(path, buffer.getvalue())
        yield EncodedShard(shard.start, shard.end, path)


def shards(ref: CorpusRef) -> Iterator[EncodeShard]:
    for start, end in row_ranges(ref.size):
        yield EncodeShard(ref.directory, start, end)


def assemble(ref: CorpusRef, encoded: list[EncodedShard], fence: Callable[[], None]) -> CorpusRef:
    """The shards' vectors in row order, written one shard at a time; the shards are removed."""
    done = {shard.start: shard for shard in encoded}  # a retried shard once
    if sum(shard.end - shard.start for shard in done.values()) != ref.size:
        raise RuntimeError(
            f"{ref.directory}: {ref.size} captions to encode, the shards hold "
            f"{sum(shard.end - shard.start for shard in done.values())}"
        )
    fence()
    with timed("sentences", "assemble"):
        first = read_npy(done[0].path)
        header = {"descr": "<f4", "fortran_order": False, "shape": (ref.size, first.shape[1])}
        with FileSystems.create(corpus_file(ref.directory, SENTENCE_EMBEDDINGS_FILE)) as handle:
            np.lib.format.write_array_header_1_0(handle, header)
            for start in sorted(done):
                vectors = first if start == 0 else read_npy(done[start].path)
                handle.write(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
        delete_folder(FileSystems.join(ref.directory, SENTENCE_PARTS_DIRECTORY))
    logging.info("encoded %d captions with a sentence encoder", ref.size)
    return ref


class EncodeCaptions(beam.PTransform):
    """CorpusRef -> the same CorpusRef, once ``sentence_embeddings.npy`` is written.

    ``threads``: PyTorch's in each worker process, chosen by the driver, which knows how many
    processes share a machine (pipelines.runner.worker_threads); the vectors do not depend
    on it.
    """

    def __init__(self, spec: EncoderSpec, fence: Callable[[], None], threads: int = 1):
        super().__init__()
        self._spec, self._fence, self._threads = spec, fence, threads

    def expand(self, refs):
        encoded = (
            refs
            | "Shards" >> beam.FlatMap(shards)
            | "Distribute" >> beam.Reshuffle()
            | "Encode"
            >> beam.ParDo(_EncodeShard(SharedEncoder(Shared(), self._spec), self._threads))
        )
        return refs | "Assemble" >> beam.Map(
            assemble, beam.pvalue.AsList(encoded), fence=self._fence
        )
