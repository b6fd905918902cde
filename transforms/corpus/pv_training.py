"""PV training: the global step of the pipeline, which writes the corpus.

PV training needs every caption at once, and so does neighbour search over the
whole pool. So :class:`TrainParagraphVectors` has the workers write the captions
in parts (``corpus/caption_parts/``), gathers only the parts' paths, reads the
parts on one worker, trains the model there and writes the corpus's files
(:mod:`transforms.corpus.store`).

Above ``--pv_train_sample`` captions, PV trains on a seeded sample of that many
and the other captions' vectors are inferred in parallel over shards
(:mod:`transforms.corpus.inference`); a last step writes the embeddings in row
order and own_closeness from them. At or below it, PV trains on every caption.

Cost of the global step: one worker holds the captions as a table, their texts and
the word lists of the captions PV trains on, and trains PV single-handed.
"""

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared

from schemas.layout import INFERRED_DIRECTORY, PARTS_DIRECTORY, corpus_folder
from schemas.records import Caption
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
from transforms.corpus.store import (
    CAPTION_COLUMNS,
    CAPTION_SCHEMA,
    CorpusRef,
    caption_id_order,
    captions_table,
    check_pool_size,
    corpus_ref,
    dense_ids,
    make_corpus,
    model_path,
    own_closeness,
    read_caption_table,
    read_npy,
    split_codes,
    write_corpus,
    write_npy,
    write_tables,
    write_vectors,
)
from transforms.corpus.surface import encode_ngrams
from transforms.errors import InputError
from transforms.files import delete_folder, unfenced
from transforms.memory import release_freed_memory
from transforms.progress import timed

if TYPE_CHECKING:
    from gensim.models.doc2vec import Doc2Vec  # gensim loads once a model is trained or read

PART_SIZE = 100_000  # captions a part: ~50 MB as Python objects, a few MB as a file


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
) -> tuple["Doc2Vec", np.ndarray | None]:
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
    model: "Doc2Vec",
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
            columns = {name: captions.column(name) for name in CAPTION_COLUMNS}
            corpus = make_corpus(columns, unit_vectors(model), encode_ngrams(documents))
            ref = write_corpus(corpus, model, output, fence)
            return TrainedCorpus(ref, model_path(output), 0)
        directory = corpus_folder(output)
        write_tables(captions, encode_ngrams(documents), directory)
        write_npy(FileSystems.join(directory, inference.TRAINED_ROWS_FILE), trained)
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
        rows = read_npy(FileSystems.join(directory, inference.TRAINED_ROWS_FILE))
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
        delete_folder(FileSystems.join(directory, INFERRED_DIRECTORY))
        del vectors, model
        release_freed_memory()
    logging.info(
        "assembled the PV vectors of %d captions: %d trained, %d inferred",
        trained.ref.size,
        len(rows),
        len(rest),
    )
    return trained.ref
