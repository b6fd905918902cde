"""The corpus as one read-only object: the global step of the pipeline.

PV training needs every caption at once, and so does neighbour search over the
whole pool, so :class:`TrainParagraphVectors` gathers the captions on one
worker (``ToList``), trains the model there and writes the corpus to files:

    <output>/corpus/captions.parquet   caption table, rows in caption-id order
    <output>/corpus/embeddings.npy     unit PV vectors, one row per caption
    <output>/corpus/ngrams.npz         n-gram table for simSURF
    <output>/corpus/own_closeness.npy  per caption: mean simPV to its image's other captions
    <output>/pv/doc2vec.model          the trained gensim model

Only the directory's path travels through the graph. Each worker process loads
the files once (:func:`load_corpus` behind ``apache_beam.utils.shared.Shared``),
so the embeddings are never a side input copied into every bundle. Cost of the
global step: one worker holds the captions (~0.5 KB each in Python) and trains
PV single-handed; at COCO 2014 scale (600k captions, dim 256) that process
peaked at ~5 GB.
"""

import io
import itertools
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from schemas.records import Caption, caption_order
from transforms.corpus.paragraph_vectors import (
    CORPUS_DIGEST,
    PVConfig,
    check_model_corpus,
    corpus_digest,
    load_model,
    save_model,
    train_paragraph_vectors,
    unit_vectors,
)
from transforms.corpus.split import SPLITS
from transforms.corpus.surface import NgramTable, encode_ngrams
from transforms.errors import InputError
from transforms.files import read_file, write_file
from transforms.progress import timed

CAPTION_COLUMNS = Caption._fields
DECOY_POOLS = ("all", "split")


class CorpusRef(NamedTuple):
    """What travels through the graph instead of the corpus itself."""

    directory: str
    size: int
    split_sizes: dict[str, int]  # captions per split: sizes the output shards


@dataclass
class Corpus:
    """Every caption of the run, by row; row order is caption-id order."""

    captions: dict[str, list[str]]  # column name -> values, one per row
    split_of: np.ndarray  # int8 index into SPLITS, per row
    image_of: np.ndarray  # int64 dense image index, per row
    embeddings: np.ndarray | None  # float32 (rows, dim), unit length; None once indexed
    ngrams: NgramTable
    own_closeness: np.ndarray  # float32 per row: mean simPV to the other captions of its image
    text_id: np.ndarray  # int64 per row: equal ids <=> equal normalised text
    image_rows: np.ndarray  # int64: rows grouped by image, image k's at image_offsets[k:k + 2]
    image_offsets: np.ndarray  # int64 (images + 1,)
    directory: str = ""  # where it was loaded from; files strategies add sit beside its own

    def __len__(self) -> int:
        return len(self.split_of)

    def image_ids(self) -> np.ndarray:
        """Image ids by dense image index (``image_of``'s values)."""
        return np.unique(self.captions["image_id"])

    def rows_of_image(self, image: int) -> np.ndarray:
        """The rows of image ``image`` (a dense index)."""
        return self.image_rows[self.image_offsets[image] : self.image_offsets[image + 1]]

    def caption(self, row: int) -> Caption:
        return Caption(*(self.captions[name][row] for name in CAPTION_COLUMNS))

    def pools(self, decoy_pool: str) -> dict[str, np.ndarray]:
        """The rows decoys may come from: one pool ("all") or one per split."""
        if decoy_pool == "all":
            return {"all": np.arange(len(self))}
        return {split: np.flatnonzero(self.split_of == code) for code, split in enumerate(SPLITS)}


def sorted_captions(captions: Iterable[Caption]) -> list[Caption]:
    """Caption-id order, so that "lower row" means "lower caption id" everywhere."""
    ordered = sorted(captions, key=lambda caption: caption_order(caption.caption_id))
    if not ordered:
        raise InputError("the corpus has no captions left after normalisation: check --input")
    for previous, current in itertools.pairwise(ordered):
        if previous.caption_id == current.caption_id:
            raise InputError(
                f"caption id {current.caption_id} occurs twice (images {previous.image_id} and "
                f"{current.image_id}): caption ids must be unique across all input files"
            )
    return ordered


def check_pool_size(captions: list[Caption], neighbours: int, decoy_pool: str) -> None:
    """Every target must have at least ``neighbours`` captions of other images."""
    pools = Counter(c.split for c in captions) if decoy_pool == "split" else {"": len(captions)}
    per_image = Counter((c.split if decoy_pool == "split" else "", c.image_id) for c in captions)
    for (pool, image_id), own in per_image.items():
        available = pools[pool] - own
        if available < neighbours:
            where = f"the {pool} split" if pool else "the corpus"
            raise InputError(
                f"{where} has {pools[pool]} captions, so image {image_id} has only "
                f"{available} captions of other images to draw from, fewer than "
                f"--neighbours {neighbours}: lower --neighbours or add captions"
            )


def own_closeness(embeddings: np.ndarray, image_of: np.ndarray) -> np.ndarray:
    """Each caption's mean simPV to the other captions of its image (NaN if it has none).

    A decoy closer to the target than that describes the target's image about as well as
    the image's own captions do (``transforms/strategies/validity.py``).

    >>> vectors = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    >>> own_closeness(vectors, np.array([0, 0, 1])).astype(float).round(2).tolist()
    [0.6, 0.6, nan]
    """
    sums = np.zeros((int(image_of.max()) + 1, embeddings.shape[1]), dtype=np.float64)
    np.add.at(sums, image_of, embeddings)
    counts = np.bincount(image_of)[image_of]
    own = np.einsum("rd,rd->r", sums[image_of], embeddings) - np.einsum(
        "rd,rd->r", embeddings, embeddings
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return (own / (counts - 1)).astype(np.float32)


def make_corpus(
    captions: dict[str, list[str]],
    embeddings: np.ndarray | None,
    ngrams: NgramTable,
    closeness: np.ndarray | None = None,
    directory: str = "",
) -> Corpus:
    """``closeness``: :func:`own_closeness`, computed from ``embeddings`` when not given."""
    _, image_of = np.unique(captions["image_id"], return_inverse=True)
    _, text_id = np.unique(
        np.asarray(captions["text"], dtype=object).astype(str), return_inverse=True
    )
    image_rows = np.argsort(image_of, kind="stable")
    image_offsets = np.concatenate(([0], np.cumsum(np.bincount(image_of))))
    return Corpus(
        captions=captions,
        split_of=np.asarray([SPLITS.index(s) for s in captions["split"]], dtype=np.int8),
        image_of=image_of.astype(np.int64),
        embeddings=embeddings,
        ngrams=ngrams,
        own_closeness=own_closeness(embeddings, image_of) if closeness is None else closeness,
        text_id=text_id.astype(np.int64),
        image_rows=image_rows.astype(np.int64),
        image_offsets=image_offsets.astype(np.int64),
        directory=directory,
    )


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def read_npy(path: str) -> np.ndarray:
    return np.load(io.BytesIO(read_file(path)))


def write_corpus(corpus: Corpus, model, output: str) -> CorpusRef:
    directory = FileSystems.join(output, "corpus")
    table = pa.table({name: corpus.captions[name] for name in CAPTION_COLUMNS})
    with FileSystems.create(FileSystems.join(directory, "captions.parquet")) as handle:
        pq.write_table(table, handle)
    write_file(FileSystems.join(directory, "embeddings.npy"), npy_bytes(corpus.embeddings))
    ngrams = io.BytesIO()
    np.savez(
        ngrams,
        ids=corpus.ngrams.ids,
        ranks=corpus.ngrams.ranks,
        offsets=corpus.ngrams.offsets,
        lengths=corpus.ngrams.lengths,
        vocab_size=np.int64(corpus.ngrams.vocab_size),
    )
    write_file(FileSystems.join(directory, "ngrams.npz"), ngrams.getvalue())
    write_file(FileSystems.join(directory, "own_closeness.npy"), npy_bytes(corpus.own_closeness))
    save_model(model, FileSystems.join(output, "pv", "doc2vec.model"))
    split_sizes = np.bincount(corpus.split_of, minlength=len(SPLITS))
    return CorpusRef(directory, len(corpus), dict(zip(SPLITS, split_sizes.tolist(), strict=True)))


def load_corpus(directory: str, *, embeddings: bool = True) -> Corpus:
    """Reads what :func:`write_corpus` wrote (once per worker process).

    Searching workers skip the embeddings: the indexes hold the vectors
    already, and a second copy is 2.4 GB per process at COCO 2014 scale
    with dim 1024.
    """
    table = pq.read_table(io.BytesIO(read_file(FileSystems.join(directory, "captions.parquet"))))
    ngrams = np.load(io.BytesIO(read_file(FileSystems.join(directory, "ngrams.npz"))))
    corpus = make_corpus(
        {name: table.column(name).to_pylist() for name in CAPTION_COLUMNS},
        read_npy(FileSystems.join(directory, "embeddings.npy")) if embeddings else None,
        NgramTable(
            ids=ngrams["ids"],
            ranks=ngrams["ranks"],
            offsets=ngrams["offsets"],
            lengths=ngrams["lengths"],
            vocab_size=int(ngrams["vocab_size"]),
        ),
        read_npy(FileSystems.join(directory, "own_closeness.npy")),
        directory,
    )
    logging.info("loaded corpus of %d captions from %s", len(corpus), directory)
    return corpus


class TrainParagraphVectors(beam.PTransform):
    """Caption (with split) -> one CorpusRef: where the corpus was written.

    The global step: runs on one worker (see module docstring).
    """

    def __init__(
        self, *, pv: PVConfig, pretrained: str, neighbours: int, decoy_pool: str, output: str
    ):
        super().__init__()
        self._pv, self._pretrained = pv, pretrained
        self._neighbours, self._pool, self._output = neighbours, decoy_pool, output

    def expand(self, captions):
        return (
            captions
            | "Gather" >> beam.combiners.ToList()
            | "TrainAndWrite"
            >> beam.Map(
                train_and_write,
                pv=self._pv,
                pretrained=self._pretrained,
                neighbours=self._neighbours,
                decoy_pool=self._pool,
                output=self._output,
            )
        )


def train_and_write(
    captions: list[Caption],
    *,
    pv: PVConfig,
    pretrained: str,
    neighbours: int,
    decoy_pool: str,
    output: str,
) -> CorpusRef:
    """``pretrained``: a model trained on exactly these captions (a search's winner)."""
    ordered = sorted_captions(captions)
    check_pool_size(ordered, neighbours, decoy_pool)
    Metrics.counter("corpus", "captions").inc(len(ordered))
    documents = [caption.text.split() for caption in ordered]
    digest = corpus_digest([caption.caption_id for caption in ordered], documents)
    with timed("pv", "train"):
        if pretrained:
            model = load_model(pretrained)
            check_model_corpus(model, digest, pretrained)
        else:
            model = train_paragraph_vectors(documents, pv)
            setattr(model, CORPUS_DIGEST, digest)
    with timed("corpus", "encode_and_write"):
        columns = {name: [getattr(c, name) for c in ordered] for name in CAPTION_COLUMNS}
        corpus = make_corpus(columns, unit_vectors(model), encode_ngrams(documents))
        return write_corpus(corpus, model, output)
