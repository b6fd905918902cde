"""The corpus as one read-only object: the global step of the pipeline.

PV training needs every caption at once, and so does neighbour search over the
whole pool. So :class:`TrainParagraphVectors` has the workers write the captions
in parts (``corpus/caption_parts/``), gathers only the parts' paths, reads the
parts on one worker, trains the model there and writes the corpus to files:

    <output>/build/corpus/captions.parquet   caption table, rows in caption-id order
    <output>/build/corpus/embeddings.npy     unit PV vectors, one row per caption
    <output>/build/corpus/ngrams.npz         n-gram table for simSURF
    <output>/build/corpus/own_closeness.npy  per caption: mean simPV to its image's other captions
    <output>/build/pv/doc2vec.model          the trained gensim model
    <output>/build/corpus/pv_trained_rows.npy  a sampled run's: the rows PV trained on

Above ``--pv_train_sample`` captions, PV trains on a seeded sample of that many
and the other captions' vectors are inferred in parallel over shards
(:mod:`transforms.corpus.inference`); a last step writes the embeddings in row
order and own_closeness from them. At or below it, PV trains on every caption.

Only the directory's path travels through the graph. Each worker process loads
the files once (:func:`load_corpus` behind ``apache_beam.utils.shared.Shared``),
so the embeddings are never a side input copied into every bundle. Cost of the
global step: one worker holds the captions as a table, their texts and the word
lists of the captions PV trains on, and trains PV single-handed.
"""

import io
import itertools
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared
from gensim.models.doc2vec import Doc2Vec

from schemas.layout import build_path, corpus_folder
from schemas.records import Caption, caption_order
from transforms.corpus import inference
from transforms.corpus.paragraph_vectors import (
    CORPUS_DIGEST,
    TRAIN_SAMPLE,
    PVConfig,
    check_model_corpus,
    corpus_digest,
    load_model,
    save_model,
    train_paragraph_vectors,
    train_sample_rows,
    unit_vectors,
)
from transforms.corpus.split import SPLITS
from transforms.corpus.surface import NgramTable, encode_ngrams
from transforms.errors import InputError
from transforms.files import delete_folder, unfenced, write_file
from transforms.memory import release_freed_memory
from transforms.progress import timed

CAPTION_COLUMNS = Caption._fields
DECOY_POOLS = ("all", "split")
EMBEDDINGS = "embeddings.npy"
# corpus/caption_parts/: the captions as the train step gathers them, removed once it is done.
PARTS_DIRECTORY = "caption_parts"
CLOSENESS_CHUNK = 1 << 16  # rows of own_closeness computed at a time
PART_SIZE = 100_000  # captions a part: ~50 MB as Python objects, a few MB as a file
CAPTION_SCHEMA = pa.schema([(name, pa.string()) for name in CAPTION_COLUMNS])


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


def dense_ids(values: Sequence[str] | pa.ChunkedArray) -> np.ndarray:
    """Each value's index among the distinct values in sorted order, as
    ``np.unique(values, return_inverse=True)[1]``, but without numpy's fixed-width copy of
    every string: 3.3M captions of up to 600 characters would take 7.9 GB.

    >>> dense_ids(["b", "a", "b", "é", ""]).tolist()
    [2, 1, 2, 3, 0]
    """
    column = values if isinstance(values, pa.ChunkedArray) else pa.array(values, pa.string())
    distinct = pc.unique(column)
    distinct = distinct.take(pc.array_sort_indices(distinct))
    return pc.index_in(column, value_set=distinct).to_numpy().astype(np.int64)


def make_corpus(
    captions: dict[str, list[str]],
    embeddings: np.ndarray | None,
    ngrams: NgramTable,
    closeness: np.ndarray | None = None,
    directory: str = "",
) -> Corpus:
    """``closeness``: :func:`own_closeness`, computed from ``embeddings`` when not given."""
    image_of, text_id = dense_ids(captions["image_id"]), dense_ids(captions["text"])
    image_rows = np.argsort(image_of, kind="stable")
    image_offsets = np.concatenate(([0], np.cumsum(np.bincount(image_of))))
    return Corpus(
        captions=captions,
        split_of=split_codes(captions["split"]),
        image_of=image_of,
        embeddings=embeddings,
        ngrams=ngrams,
        own_closeness=own_closeness(embeddings, image_of) if closeness is None else closeness,
        text_id=text_id,
        image_rows=image_rows.astype(np.int64),
        image_offsets=image_offsets.astype(np.int64),
        directory=directory,
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


def model_path(output: str) -> str:
    return build_path(output, "pv", "doc2vec.model")


def caption_table(columns: dict[str, Sequence[str]]) -> pa.Table:
    return pa.table({name: columns[name] for name in CAPTION_COLUMNS}, schema=CAPTION_SCHEMA)


def captions_table(captions: Sequence[Caption]) -> pa.Table:
    return caption_table({name: [getattr(c, name) for c in captions] for name in CAPTION_COLUMNS})


def write_tables(table: pa.Table, ngrams: NgramTable, directory: str) -> None:
    """The caption table and the n-gram table: what does not depend on PV."""
    with FileSystems.create(FileSystems.join(directory, "captions.parquet")) as handle:
        pq.write_table(table, handle)
    buffer = io.BytesIO()  # a zip is written seeking, and a GCS upload cannot seek
    np.savez(
        buffer,
        ids=ngrams.ids,
        ranks=ngrams.ranks,
        offsets=ngrams.offsets,
        lengths=ngrams.lengths,
        vocab_size=np.int64(ngrams.vocab_size),
    )
    write_file(FileSystems.join(directory, "ngrams.npz"), buffer.getbuffer())  # not a copy


def read_caption_table(directory: str, columns: list[str] | None = None) -> pa.Table:
    """The caption table, or some of its columns, read from the file's handle."""
    with FileSystems.open(FileSystems.join(directory, "captions.parquet")) as handle:
        return pq.read_table(handle, columns=columns)


def write_vectors(directory: str, embeddings: np.ndarray, closeness: np.ndarray) -> None:
    write_npy(FileSystems.join(directory, EMBEDDINGS), embeddings)
    write_npy(FileSystems.join(directory, "own_closeness.npy"), closeness)


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
    with FileSystems.open(FileSystems.join(directory, "ngrams.npz")) as handle:
        ngrams = dict(np.load(handle))  # read into the arrays, not first as the file's bytes
    corpus = make_corpus(
        {name: table.column(name).to_pylist() for name in CAPTION_COLUMNS},
        read_npy(FileSystems.join(directory, EMBEDDINGS)) if embeddings else None,
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


class TrainedCorpus(NamedTuple):
    """The train step's result: the corpus, complete unless ``inferred`` rows still need
    their vectors (a sampled run: :mod:`transforms.corpus.inference`)."""

    ref: CorpusRef
    model: str  # the saved model's path
    inferred: int  # rows whose vectors are to be inferred; 0: embeddings.npy is written


class TrainParagraphVectors(beam.PTransform):
    """Caption (with split) -> one CorpusRef: where the corpus was written.

    The captions are written in parts of :data:`PART_SIZE` by whichever worker holds them,
    and only the parts' paths are gathered: the train step reads the parts on one worker
    (see module docstring), so no element carries the corpus. In a sampled run
    (``pv.train_sample``), the captions PV did not train on get their vectors inferred in
    parallel over shards (:class:`transforms.corpus.inference.InferVectors`), then one
    step assembles the embeddings in row order.
    """

    def __init__(
        self,
        *,
        pv: PVConfig,
        pretrained: str,
        neighbours: int,
        decoy_pool: str,
        output: str,
        fence: Callable[[], None] = unfenced,
    ):
        super().__init__()
        self._pv, self._pretrained = pv, pretrained
        self._neighbours, self._pool, self._output = neighbours, decoy_pool, output
        self._fence = fence

    def expand(self, captions):
        parts = FileSystems.join(corpus_folder(self._output), PARTS_DIRECTORY)
        trained = (
            captions
            | "Parts" >> beam.BatchElements(min_batch_size=PART_SIZE, max_batch_size=PART_SIZE)
            | "WriteParts" >> beam.Map(write_part, directory=parts, fence=self._fence)
            | "Gather" >> beam.combiners.ToList()
            | "TrainAndWrite"
            >> beam.Map(
                train_on_parts,
                pv=self._pv,
                pretrained=self._pretrained,
                neighbours=self._neighbours,
                decoy_pool=self._pool,
                output=self._output,
                fence=self._fence,
            )
        )
        inferred = (
            trained
            | "InferShards"
            >> beam.FlatMap(lambda t: inference.shards(t.ref.directory, t.model, t.inferred))
            | "Distribute" >> beam.Reshuffle()
            | "Infer"
            >> beam.ParDo(inference.InferVectors(inference.SharedModel(Shared()), self._pv.seed))
        )
        return trained | "Assemble" >> beam.Map(
            assemble, beam.pvalue.AsList(inferred), fence=self._fence
        )


def write_part(captions: list[Caption], directory: str, fence: Callable[[], None]) -> str:
    """One part of the captions, under a name of its own: a retried bundle's part is not
    among the gathered paths, and goes with the folder."""
    path = FileSystems.join(directory, f"part-{uuid.uuid4().hex}.parquet")
    table = captions_table(captions)
    fence()
    with FileSystems.create(path) as handle:
        pq.write_table(table, handle)
    return path


def train_on_parts(parts: list[str], *, output: str, **train: Any) -> TrainedCorpus:
    """:func:`train_and_store` on the captions of ``parts``, which are removed once the
    corpus is written."""
    tables = [CAPTION_SCHEMA.empty_table()]  # no part: no caption, said in one line
    for path in parts:
        with FileSystems.open(path) as handle:
            tables.append(pq.read_table(handle))
    trained = train_and_store(pa.concat_tables(tables), output=output, **train)
    delete_folder(FileSystems.join(corpus_folder(output), PARTS_DIRECTORY))
    del tables
    release_freed_memory()
    return trained


def train_and_write(
    captions: list[Caption],
    *,
    pv: PVConfig,
    pretrained: str,
    neighbours: int,
    decoy_pool: str,
    output: str,
) -> CorpusRef:
    """:class:`TrainParagraphVectors` in this process: the same files, inference in one shard."""
    trained = train_and_store(
        captions_table(captions),
        pv=pv,
        pretrained=pretrained,
        neighbours=neighbours,
        decoy_pool=decoy_pool,
        output=output,
        fence=unfenced,
    )
    infer = inference.InferVectors(inference.SharedModel(Shared()), pv.seed)
    shards = [
        done
        for shard in inference.shards(trained.ref.directory, trained.model, trained.inferred)
        for done in infer.process(shard)
    ]
    return assemble(trained, shards, fence=unfenced)


class Words(Sequence[list[str]]):
    """Each caption's words, split when read: a run holds the word lists of the captions
    PV trains on, not of every caption (~0.7 KB a caption: 2.3 GB at CC3M size).

    >>> words = Words(["a dog", "two cats"])
    >>> len(words), words[1], [len(caption) for caption in words]
    (2, ['two', 'cats'], [2, 2])
    """

    def __init__(self, texts: Sequence[str]):
        self._texts = texts

    def __len__(self) -> int:
        return len(self._texts)

    def __getitem__(self, row: int) -> list[str]:
        return self._texts[row].split()


def pv_model(
    documents: Sequence[list[str]],
    caption_ids: list[str],
    *,
    pv: PVConfig,
    pretrained: str,
) -> tuple[Doc2Vec, np.ndarray | None]:
    """(the model, the rows its document vectors stand for: None for every row).

    ``pretrained``: a model of exactly these captions (a search's winner, an earlier
    run's), or one an earlier sampled run trained on this run's sample.
    """
    digest = corpus_digest(caption_ids, documents)
    sample = train_sample_rows(caption_ids, pv.train_sample, pv.seed)
    sample_digest, sampled = None, None
    if sample is not None:
        sampled = [documents[row] for row in sample]
        sample_digest = corpus_digest([caption_ids[row] for row in sample], sampled)
    if pretrained:
        model = load_model(pretrained)
        trained = reused_rows(model, pretrained, digest, sample, sample_digest)
        return model, trained
    if sample is None:
        model = train_paragraph_vectors(documents, pv)
        setattr(model, CORPUS_DIGEST, digest)
        return model, None
    logging.info(
        "PV trains on a sample of %d of %d captions (--pv_train_sample); the others' vectors "
        "are inferred",
        len(sample),
        len(documents),
    )
    model = train_paragraph_vectors(sampled, pv)
    setattr(model, CORPUS_DIGEST, sample_digest)
    setattr(
        model,
        TRAIN_SAMPLE,
        {"captions": len(sample), "of": len(documents), "seed": pv.seed, "corpus_sha256": digest},
    )
    return model, sample


def reused_rows(
    model: Doc2Vec,
    path: str,
    digest: str,
    sample: np.ndarray | None,
    sample_digest: str | None,
) -> np.ndarray | None:
    """The rows a reused model's document vectors stand for (None: every row); a model of
    other captions is refused.

    A model trained on every caption is used as it is, sampled run or not: its vectors
    are all trained. A sampled model stands for its sample only, so it serves only a run
    whose own sample is that sample (same captions there, same --seed and
    --pv_train_sample); the other rows' vectors are then inferred as in the run that
    trained it, to the same bytes.
    """
    stamped = getattr(model, CORPUS_DIGEST, None)
    if stamped is not None and stamped == digest:
        if sample is not None:
            logging.info("--pv_model was trained on every caption: no vector is inferred")
        return None
    if sample is not None and stamped == sample_digest:
        return sample
    sampled = getattr(model, TRAIN_SAMPLE, None)
    if stamped is not None and sampled is not None:
        this_run = (
            f"this run's sample of {len(sample):,} is other captions (another --seed or "
            "--pv_train_sample, or changed captions)"
            if sample is not None
            else "this run trains on every caption (--pv_train_sample 0, or at least the "
            "corpus's size), so it needs a model trained on every caption"
        )
        raise InputError(
            f"{path}: the model was trained on a sample of {sampled['captions']:,} of "
            f"{sampled['of']:,} captions (--pv_train_sample {sampled['captions']} --seed "
            f"{sampled['seed']}); its document vectors stand for that sample only, and "
            f"{this_run}: reuse it with the --seed and --pv_train_sample of the run that "
            "trained it on the same captions, or drop --pv_model"
        )
    check_model_corpus(model, digest, path)  # refuses, saying why
    raise AssertionError("check_model_corpus accepted a model of other captions")


def train_and_store(
    captions: pa.Table,
    *,
    pv: PVConfig,
    pretrained: str,
    neighbours: int,
    decoy_pool: str,
    output: str,
    fence: Callable[[], None],
) -> TrainedCorpus:
    """Trains PV (or reuses ``pretrained``) on ``captions`` (a table of :class:`Caption`'s
    columns, in any order) and writes the corpus; in a sampled run, all but the vectors,
    which :func:`assemble` writes once the others' are inferred. A run whose claim was
    taken over while it trained writes nothing (``fence``)."""
    caption_ids = captions.column("caption_id").to_pylist()
    order = caption_id_order(caption_ids, captions.column("image_id"))
    captions = captions.take(pa.array(order))
    caption_ids = [caption_ids[row] for row in order]
    del order
    check_pool_size(
        captions.column("split").to_pylist(),
        captions.column("image_id").to_pylist(),
        neighbours,
        decoy_pool,
    )
    Metrics.counter("corpus", "captions").inc(len(caption_ids))
    texts = captions.column("text").to_pylist()
    documents = Words(texts)
    with timed("pv", "train"):
        model, trained = pv_model(documents, caption_ids, pv=pv, pretrained=pretrained)
    fence()
    with timed("corpus", "encode_and_write"):
        if trained is None:
            held = {"caption_id": caption_ids, "text": texts}  # not converted a second time
            columns = {
                name: held[name] if name in held else captions.column(name).to_pylist()
                for name in CAPTION_COLUMNS
            }
            corpus = make_corpus(columns, unit_vectors(model), encode_ngrams(documents))
            ref = write_corpus(corpus, model, output, fence)
            return TrainedCorpus(ref, model_path(output), 0)
        directory = corpus_folder(output)
        write_tables(captions, encode_ngrams(documents), directory)
        write_npy(FileSystems.join(directory, inference.TRAINED_ROWS), trained)
        fence()
        save_model(model, model_path(output))
        Metrics.counter("pv", "trained").inc(len(trained))
        inferred = len(caption_ids) - len(trained)
        ref = corpus_ref(directory, split_codes(captions.column("split")))
        return TrainedCorpus(ref, model_path(output), inferred)


def assemble(
    trained: TrainedCorpus, shards: list[inference.InferredShard], fence: Callable[[], None]
) -> CorpusRef:
    """The sampled run's embeddings in row order: the sample's trained vectors and the
    inferred shards; then own_closeness from them. The shard files are removed."""
    if not trained.inferred:
        return trained.ref
    fence()
    directory = trained.ref.directory
    with timed("corpus", "assemble"):
        rows = read_npy(FileSystems.join(directory, inference.TRAINED_ROWS))
        model = load_model(trained.model)
        vectors = np.empty((trained.ref.size, model.dv.vector_size), dtype=np.float32)
        vectors[rows] = unit_vectors(model)
        rest = inference.rows_to_infer(rows, trained.ref.size)
        done = {shard.start: shard for shard in shards}  # a retried shard once
        if sum(shard.end - shard.start for shard in done.values()) != len(rest):
            raise RuntimeError(
                f"{directory}: {len(rest)} vectors to infer, the shards hold "
                f"{sum(shard.end - shard.start for shard in done.values())}"
            )
        for start, shard in sorted(done.items()):
            vectors[rest[start : shard.end]] = read_npy(shard.path)
        image_of = dense_ids(read_caption_table(directory, ["image_id"]).column("image_id"))
        write_vectors(directory, vectors, own_closeness(vectors, image_of))
        delete_folder(FileSystems.join(directory, inference.INFERRED_DIRECTORY))
        del vectors, model
        release_freed_memory()
    logging.info(
        "assembled the PV vectors of %d captions: %d trained, %d inferred",
        trained.ref.size,
        len(rows),
        len(rest),
    )
    return trained.ref
