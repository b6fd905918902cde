"""The corpus's format: what a run writes under ``build/corpus/`` and every strategy reads.

    <output>/build/corpus/captions.parquet   caption table, rows in caption-id order
    <output>/build/corpus/embeddings.npy     unit PV vectors, one row per caption
    <output>/build/corpus/ngrams-*.npy       n-gram table for simSURF, one file an array
    <output>/build/corpus/own_closeness.npy  per caption: mean simPV to its image's other captions
    <output>/build/pv/doc2vec.model          the trained gensim model
    <output>/build/corpus/pv_trained_rows.npy  a sampled run's: the rows PV trained on

Only the directory's path travels through the graph (a :class:`CorpusRef`). Each worker
process loads the files once (:func:`load_corpus` behind ``apache_beam.utils.shared.Shared``),
so the embeddings are never a side input copied into every bundle. They are written by
the training step (:mod:`transforms.corpus.pv_training`).
"""

import itertools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.localfilesystem import LocalFileSystem

from schemas.layout import (
    CAPTIONS_FILE,
    EMBEDDINGS_FILE,
    OWN_CLOSENESS_FILE,
    PV_MODEL_FILE,
    SENTENCE_EMBEDDINGS_FILE,
    build_path,
    corpus_file,
    corpus_folder,
    ngrams_file,
)
from schemas.records import Caption, caption_order
from transforms.corpus.paragraph_vectors import (
    save_model,
)
from transforms.corpus.split import SPLITS
from transforms.corpus.surface import NgramTable
from transforms.errors import InputError
from transforms.memory import release_freed_memory

CAPTION_COLUMNS = Caption._fields
NGRAM_ARRAYS = ("ids", "ranks", "offsets", "lengths")  # NgramTable's arrays, a file each
DECOY_POOLS = ("all", "split")
CLOSENESS_CHUNK = 1 << 16  # rows of own_closeness computed at a time
CAPTION_SCHEMA = pa.schema([(name, pa.string()) for name in CAPTION_COLUMNS])
NO_SENTENCES = np.zeros((0, 0), np.float32)
ITERATION_CHUNK = 1 << 16  # values of a TextColumn made Python strings at a time


class TextColumn(Sequence[str]):
    """One caption column as Arrow holds it: a buffer of UTF-8 bytes and one of offsets,
    a value made a Python string only when asked for. Each worker process holds every
    column of the corpus, and as Python lists they took 3.3x the bytes (366 against 110 MB
    at 600k captions, measured), 2 GB a worker at CC3M size.

    >>> column = TextColumn(["a dog", "é", ""])
    >>> column[1], len(column), list(column), column[np.int64(0)]
    ('é', 3, ['a dog', 'é', ''], 'a dog')
    """

    def __init__(self, values: "ColumnValues"):
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        elif not isinstance(values, pa.Array):
            values = pa.array(values, pa.string())  # or, from a TextColumn, its array
        self._array = values
        _, offsets, data = values.buffers()
        width = np.int64 if pa.types.is_large_string(values.type) else np.int32
        first = values.offset
        self._offsets = np.frombuffer(offsets, width)[first : first + len(values) + 1]
        self._data = memoryview(data) if data is not None else memoryview(b"")

    def __len__(self) -> int:
        return len(self._array)

    def __getitem__(self, row):  # a row of the corpus: int or numpy integer
        return str(self._data[self._offsets[row] : self._offsets[row + 1]], "utf-8")

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self._array), ITERATION_CHUNK):
            yield from self._array.slice(start, ITERATION_CHUNK).to_pylist()

    @property
    def array(self) -> pa.Array:
        return self._array

    def __arrow_array__(self, type=None) -> pa.Array:  # pa.array(column), pa.table({...})
        return self._array if type is None else self._array.cast(type)

    def __reduce__(self):
        return TextColumn, (self._array,)


class CorpusRef(NamedTuple):
    """What travels through the graph instead of the corpus itself."""

    directory: str
    size: int
    split_sizes: dict[str, int]  # captions per split: sizes the output shards


@dataclass
class Corpus:
    """Every caption of the run, by row; row order is caption-id order."""

    captions: dict[str, TextColumn]  # column name -> values, one per row
    split_of: np.ndarray  # int8 index into SPLITS, per row
    image_of: np.ndarray  # int64 dense image index, per row
    embeddings: np.ndarray | None  # float32 (rows, dim), unit length; None once indexed
    ngrams: NgramTable
    own_closeness: np.ndarray  # float32 per row: mean simPV to the other captions of its image
    text_id: np.ndarray  # int64 per row: equal ids <=> equal normalised text
    image_rows: np.ndarray  # int64: rows grouped by image, image k's at image_offsets[k:k + 2]
    image_offsets: np.ndarray  # int64 (images + 1,)
    directory: str = ""  # where it was loaded from; files strategies add sit beside its own
    # float32 (rows, dim) unit sentence-encoder vectors of the original texts
    # (transforms/corpus/sentences.py); (0, 0) when the run has no validity model
    sentences: np.ndarray = field(default_factory=lambda: NO_SENTENCES)

    def __len__(self) -> int:
        return len(self.split_of)

    def image_ids(self) -> np.ndarray:
        """Image ids by dense image index (``image_of``'s values)."""
        return sorted_distinct(self.captions["image_id"].array).to_numpy(zero_copy_only=False)

    def rows_of_image(self, image: int) -> np.ndarray:
        """The rows of image ``image`` (a dense index)."""
        return self.image_rows[self.image_offsets[image] : self.image_offsets[image + 1]]

    def caption(self, row: int) -> Caption:
        return Caption(*(self.captions[name][row] for name in CAPTION_COLUMNS))

    def pools(self, decoy_pool: str) -> dict[str, np.ndarray]:
        return pool_rows(self.split_of, decoy_pool)


def pool_rows(split_of: np.ndarray, decoy_pool: str) -> dict[str, np.ndarray]:
    """The rows decoys may come from: one pool ("all") or one per split."""
    if decoy_pool == "all":
        return {"all": np.arange(len(split_of))}
    return {split: np.flatnonzero(split_of == code) for code, split in enumerate(SPLITS)}


def split_codes(splits: pa.Array | pa.ChunkedArray | Sequence[str]) -> np.ndarray:
    """int8 index into SPLITS, per row."""
    codes = pc.index_in(splits, value_set=pa.array(SPLITS))
    return codes.to_numpy(zero_copy_only=False).astype(np.int8)


def caption_id_order(caption_ids: Sequence[str], image_ids: Sequence) -> list[int]:
    """The rows in caption-id order, so that "lower row" means "lower caption id"
    everywhere; refuses an empty corpus and a caption id that occurs twice."""
    order = sorted(range(len(caption_ids)), key=lambda row: caption_order(caption_ids[row]))
    if not order:
        raise InputError("the corpus has no captions left after normalisation: check --input")
    for previous, current in itertools.pairwise(order):
        if caption_ids[previous] == caption_ids[current]:
            raise InputError(
                f"caption id {caption_ids[current]} occurs twice (images "
                f"{image_ids[previous]} and {image_ids[current]}): caption ids must be unique "
                "across all input files"
            )
    return order


def sorted_captions(captions: Iterable[Caption]) -> list[Caption]:
    captions = list(captions)
    ids, images = ([getattr(c, name) for c in captions] for name in ("caption_id", "image_id"))
    return [captions[row] for row in caption_id_order(ids, images)]


def check_pool_size(
    splits: Sequence[str], image_ids: Sequence[str], neighbours: int, decoy_pool: str
) -> None:
    """Every target must have at least ``neighbours`` captions of other images."""
    pooled = splits if decoy_pool == "split" else [""] * len(image_ids)
    pools = Counter(pooled)
    for (pool, image_id), own in Counter(zip(pooled, image_ids, strict=True)).items():
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
    own = np.empty(len(image_of), dtype=np.float64)
    for start in range(0, len(image_of), CLOSENESS_CHUNK):  # sums[image_of] is 6.8 GB at 3.3M
        rows = slice(start, start + CLOSENESS_CHUNK)
        mine = embeddings[rows]
        own[rows] = np.einsum("rd,rd->r", sums[image_of[rows]], mine) - np.einsum(
            "rd,rd->r", mine, mine
        )
    # A lone caption's sum less its own square is rounding (float64 against float32), a
    # few 1e-8 either side of 0, not 0: divided by 0 it was -inf as often as +inf, and
    # -inf turned away every decoy of that caption.
    closeness = np.full(len(image_of), np.nan)
    shared = counts > 1
    closeness[shared] = own[shared] / (counts[shared] - 1)
    return closeness.astype(np.float32)


def dense_ids(values: Sequence[str] | pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each value's index among the distinct values in sorted order, as
    ``np.unique(values, return_inverse=True)[1]``, but without numpy's fixed-width copy of
    every string: 3.3M captions of up to 600 characters would take 7.9 GB.

    >>> dense_ids(["b", "a", "b", "é", ""]).tolist()
    [2, 1, 2, 3, 0]
    """
    arrow = isinstance(values, pa.Array | pa.ChunkedArray)
    column = values if arrow else pa.array(values, pa.string())
    distinct = sorted_distinct(column)
    return pc.index_in(column, value_set=distinct).to_numpy().astype(np.int64)


def sorted_distinct(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    distinct = pc.unique(column)
    return distinct.take(pc.array_sort_indices(distinct))


ColumnValues = TextColumn | pa.Array | pa.ChunkedArray | Sequence[str]


def make_corpus(
    columns: dict[str, ColumnValues],
    embeddings: np.ndarray | None,
    ngrams: NgramTable,
    closeness: np.ndarray | None = None,
    directory: str = "",
    sentences: np.ndarray = NO_SENTENCES,
) -> Corpus:
    """``closeness``: :func:`own_closeness`, computed from ``embeddings`` when not given."""
    captions = {name: TextColumn(columns[name]) for name in CAPTION_COLUMNS}
    image_of = dense_ids(captions["image_id"].array)
    text_id = dense_ids(captions["text"].array)
    image_rows = np.argsort(image_of, kind="stable")
    image_offsets = np.concatenate(([0], np.cumsum(np.bincount(image_of))))
    return Corpus(
        captions=captions,
        split_of=split_codes(captions["split"].array),
        image_of=image_of,
        embeddings=embeddings,
        ngrams=ngrams,
        own_closeness=own_closeness(embeddings, image_of) if closeness is None else closeness,
        text_id=text_id,
        image_rows=image_rows.astype(np.int64),
        image_offsets=image_offsets.astype(np.int64),
        directory=directory,
        sentences=sentences,
    )


def write_npy(path: str, array: np.ndarray) -> None:
    """Saved straight into the file (in chunks where the handle has no descriptor, as on
    GCS), never as a second copy in memory: 3.4 GB of embeddings at CC3M size."""
    with FileSystems.create(path) as handle:
        np.save(handle, array)


def read_npy(path: str) -> np.ndarray:
    """Read into the array itself, without the file's bytes as a second copy."""
    with FileSystems.open(path) as handle:
        return np.load(handle)


def read_mapped(path: str) -> np.ndarray:
    """Mapped from a local file, so that a machine's worker processes share one copy (and
    the kernel may drop its pages rather than run out of memory); read from elsewhere."""
    if isinstance(FileSystems.get_filesystem(path), LocalFileSystem):
        return np.load(path, mmap_mode="r")
    return read_npy(path)


def read_sentences(directory: str) -> np.ndarray:
    """The sentence-encoder vectors, where the run made them (0.9 GB at COCO 2014 scale)."""
    path = corpus_file(directory, SENTENCE_EMBEDDINGS_FILE)
    return read_mapped(path) if FileSystems.exists(path) else NO_SENTENCES


def write_ngrams(ngrams: NgramTable, directory: str) -> None:
    for name in NGRAM_ARRAYS:
        write_npy(ngrams_file(directory, name), getattr(ngrams, name))
    write_npy(ngrams_file(directory, "vocab_size"), np.int64(ngrams.vocab_size))


def read_ngrams(directory: str) -> NgramTable:
    """Mapped (:func:`read_mapped`): 1.15 GB a worker at CC3M size, one copy a machine."""
    arrays = {name: read_mapped(ngrams_file(directory, name)) for name in NGRAM_ARRAYS}
    return NgramTable(**arrays, vocab_size=int(read_npy(ngrams_file(directory, "vocab_size"))))


def model_path(output: str) -> str:
    return build_path(output, PV_MODEL_FILE)


def caption_table(columns: dict[str, Sequence[str]]) -> pa.Table:
    return pa.table({name: columns[name] for name in CAPTION_COLUMNS}, schema=CAPTION_SCHEMA)


def captions_table(captions: Sequence[Caption]) -> pa.Table:
    return caption_table({name: [getattr(c, name) for c in captions] for name in CAPTION_COLUMNS})


def write_tables(table: pa.Table, ngrams: NgramTable, directory: str) -> None:
    """The caption table and the n-gram table: what does not depend on PV."""
    with FileSystems.create(corpus_file(directory, CAPTIONS_FILE)) as handle:
        pq.write_table(table, handle)
    write_ngrams(ngrams, directory)


def read_caption_table(directory: str, columns: list[str] | None = None) -> pa.Table:
    """The caption table, or some of its columns, read from the file's handle."""
    with FileSystems.open(corpus_file(directory, CAPTIONS_FILE)) as handle:
        return pq.read_table(handle, columns=columns)


def write_vectors(directory: str, embeddings: np.ndarray, closeness: np.ndarray) -> None:
    write_npy(corpus_file(directory, EMBEDDINGS_FILE), embeddings)
    write_npy(corpus_file(directory, OWN_CLOSENESS_FILE), closeness)


def corpus_ref(directory: str, split_of: np.ndarray) -> CorpusRef:
    split_sizes = np.bincount(split_of, minlength=len(SPLITS))
    return CorpusRef(directory, len(split_of), dict(zip(SPLITS, split_sizes.tolist(), strict=True)))


def write_corpus(corpus: Corpus, model, output: str, fence: Callable[[], None]) -> CorpusRef:
    """The corpus files, then the model: the one file whose bytes differ from run to run
    (gensim logs times in it), so the fence is checked again just before it."""
    directory = corpus_folder(output)
    write_tables(caption_table(corpus.captions), corpus.ngrams, directory)
    write_vectors(directory, corpus.embeddings, corpus.own_closeness)
    fence()
    save_model(model, model_path(output))
    return corpus_ref(directory, corpus.split_of)


def load_corpus(directory: str, *, embeddings: bool = True) -> Corpus:
    """Reads what :func:`write_corpus` wrote (once per worker process).

    Searching workers skip the embeddings: the indexes hold the vectors
    already, and a second copy is 2.4 GB per process at COCO 2014 scale
    with dim 1024.
    """
    table = read_caption_table(directory)
    corpus = make_corpus(
        {name: table.column(name) for name in CAPTION_COLUMNS},
        read_npy(corpus_file(directory, EMBEDDINGS_FILE)) if embeddings else None,
        read_ngrams(directory),
        read_npy(corpus_file(directory, OWN_CLOSENESS_FILE)),
        directory,
        read_sentences(directory),
    )
    del table
    release_freed_memory()  # what decoding the table took and freed
    logging.info("loaded corpus of %d captions from %s", len(corpus), directory)
    return corpus
