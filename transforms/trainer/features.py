"""Instances -> Examples: an image vector, a vector per option, text-only features.

Caption side (paper, section 5.1): each option's PV vector from the generation
run (``corpus/embeddings.npy``, found through ``option_caption_ids``), reduced
to ``dim`` by a seeded Gaussian random projection. An option built from a
caption (its ``option_edits`` entry is not "": forced choice's edits and
chunks) is not that caption's text, so its PV vector is inferred from its own
text with the version's model (``pv/doc2vec.model``, loaded only when such an
option appears), seeded by (seed, text), and its text features (length, BLEU
and PV hubs) are computed from the option texts too.

A version's instances all have the same number of options k; an instance with
another number is an error naming its file.

Image side, one of:

- the user's features (``--image_features``: Parquet with columns ``image``
  and ``features``, or ``.npy`` rows named by ``--image_ids``), matched by
  image id or file name and randomly projected to ``dim`` like the captions;
- built-in *concept* features in the spirit of Yao et al. 2016: the bag of
  visual words (open-class words of a lexicon built from the train split's
  captions) of the image's *other* captions, never the instance's own
  options, randomly projected to ``dim``. This is an oracle signal, an upper
  bound on what a perfect concept detector could give, not vision: it is
  read off human captions of the very image.

The lexicon needs no tagger (no nltk data exists here): Yao et al.'s atoms
are nouns, verbs and adjectives; captions are short descriptive phrases in
which, once a fixed list of closed-class words (determiners, prepositions,
pronouns, conjunctions, auxiliaries, numerals) is removed, what remains is
overwhelmingly those three classes. Plurals fold onto their singular when
both occur ("dogs" -> "dog"), and the most frequent words are kept.

Every worker process builds the feature space once (``Shared``): the corpus,
the lexicon and the image vectors, never a side input copied per bundle.
"""

import functools
import io
import logging
import os
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils.shared import Shared

from schemas.examples import TEXT_FEATURES, Example
from schemas.image_features import FEATURES_COLUMN, IMAGE_COLUMN, SHARDS
from schemas.instance import option_set
from schemas.layout import PARQUET, corpus_folder, shard_pattern
from transforms.corpus.paragraph_vectors import infer_unit_vector, load_model
from transforms.corpus.store import Corpus, load_corpus, model_path
from transforms.corpus.surface import encode_ngrams, sim_surf_batch
from transforms.errors import InputError
from transforms.files import (
    list_files,
    read_file,
    read_parquet,
    read_parquet_shards,
    shard_files,
)
from transforms.seeds import keyed_rng
from transforms.trainer.text_rules import hub_scores

_CLOSED_CLASS_WORDS = """
    a an the this that these those some any each every both either neither no another other
    of in on at to from by with without into onto over under above below near beside behind
    between through across along around about against among up down out off for as like than
    upon inside outside toward towards while during before after until next top front
    i me my you your he him his she her it its we us our they them their there here what which
    who whom whose where when why how
    and or but nor so yet if then also just very too not
    is are was were be been being am has have had having do does did can could will would
    shall should may might must
    one two three four five six seven eight nine ten many several few lots lot
"""
CLOSED_CLASS = frozenset(_CLOSED_CLASS_WORDS.split())
INSTANCE_COLUMNS = (
    "example_id",
    "split",
    "image_id",
    "image_file",
    "options",
    "label",
    "option_caption_ids",
    "option_edits",
)


def random_projection(size: int, dim: int, seed: int, salt: str) -> np.ndarray:
    """A (size, dim) matrix R ~ N(0, 1/dim), seeded by (seed, salt): ``x @ R`` keeps inner
    products (Johnson-Lindenstrauss). Vectors of at most ``dim`` components have nothing to
    reduce: then R is the identity.
    """
    if size <= dim:
        return np.eye(size, dtype=np.float32)
    rng = np.random.default_rng([seed, *salt.encode()])
    return (rng.standard_normal((size, dim)) / np.sqrt(dim)).astype(np.float32)


def open_class_words(text: str) -> set[str]:
    """The caption's (its tokens') words outside :data:`CLOSED_CLASS`, English's; single
    letters a-z (English's "a", the "s" of "man's") are not words, but a single Japanese or
    Chinese character often is (犬, dog)."""
    return {
        word
        for word in text.split()
        if word not in CLOSED_CLASS and (len(word) > 1 or not word.isascii())
    }


def singular(word: str, known: Iterable[str]) -> str:
    """ "dogs" -> "dog", "boxes" -> "box" when the singular is a known word."""
    for suffix in ("s", "es"):
        if word.endswith(suffix) and word[: -len(suffix)] in known:
            return word[: -len(suffix)]
    return word


def build_lexicon(captions: Iterable[str], size: int, min_count: int) -> dict[str, int]:
    """Word -> column: the ``size`` open-class words in most captions (at least ``min_count``).

    >>> build_lexicon(["a dog on grass", "two dogs on the grass", "a red dog"], 5, 2)
    {'dog': 0, 'grass': 1}
    """
    surface = Counter(word for caption in captions for word in open_class_words(caption))
    counts = Counter()
    for word, count in surface.items():
        counts[singular(word, surface)] += count
    ranked = sorted((-count, word) for word, count in counts.items() if count >= min_count)
    return {word: column for column, (_, word) in enumerate(ranked[:size])}


def concept_bag(captions: Iterable[str], lexicon: dict[str, int]) -> np.ndarray:
    """Unit-length indicator of the lexicon words in ``captions`` (zeros if none)."""
    bag = np.zeros(len(lexicon), dtype=np.float64)
    for caption in captions:
        for word in open_class_words(caption):
            column = lexicon.get(singular(word, lexicon))
            if column is not None:
                bag[column] = 1.0
    norm = np.linalg.norm(bag)
    return bag / norm if norm else bag


@dataclass(frozen=True)
class FeatureConfig:
    dataset: str
    dim: int
    seed: int
    image_features: str  # "" for concept features
    image_ids: str  # with a .npy image_features: its rows' ids, one a line
    concept_vocabulary: int
    concept_min_count: int


def features_table(path: str) -> pa.Table:
    """dmc-features' folder of shards, or one Parquet file."""
    if os.path.isdir(path) or shard_files(path, SHARDS, ".parquet"):
        return read_parquet_shards(path, SHARDS)
    return read_parquet(path)


def read_image_features(path: str, ids_path: str) -> tuple[list[str], np.ndarray]:
    """(ids, vectors) from dmc-features' folder, a Parquet file, or a .npy file plus an ids
    file."""
    try:
        if path.endswith(".npy"):
            vectors = np.load(io.BytesIO(read_file(path)))
            lines = read_file(ids_path).decode("utf-8").splitlines()
            ids = [line.strip() for line in lines if line.strip()]
            where = f"{path} with {ids_path}"
        else:
            table = features_table(path)
            ids = [str(value) for value in table.column(IMAGE_COLUMN).to_pylist()]
            vectors = np.asarray(table.column(FEATURES_COLUMN).to_pylist(), dtype=np.float64)
            where = path
    except (OSError, ValueError, KeyError) as error:
        raise InputError(
            f"{path}: cannot read image features ({error}); expected dmc-features' folder, "
            f"a Parquet file with columns '{IMAGE_COLUMN}' and '{FEATURES_COLUMN}', or a .npy "
            "matrix with --image_ids naming its rows"
        ) from error
    if vectors.ndim != 2 or len(ids) != len(vectors):
        raise InputError(
            f"{where}: {len(ids)} ids for a feature array of shape {vectors.shape}: "
            "expected one vector (row) per id"
        )
    if vectors.shape[1] == 0:
        raise InputError(f"{where}: every feature vector is empty: give at least one value each")
    check_feature_rows(ids, vectors, where)
    return ids, vectors


def check_feature_rows(ids: list[str], vectors: np.ndarray, where: str) -> None:
    """One finite vector per image: a NaN would turn every image model's weights to NaN.

    >>> check_feature_rows(["a", "b"], np.array([[0.0], [np.inf]]), "f.parquet")
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: f.parquet: 1 rows hold NaN or infinite values: row 1 (image b)
    """
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if len(bad):
        rows = ", ".join(f"row {row} (image {ids[row]})" for row in bad[:5].tolist())
        raise InputError(f"{where}: {len(bad)} rows hold NaN or infinite values: {rows}")
    first_row: dict[str, int] = {}
    for row, image in enumerate(ids):
        first = first_row.setdefault(image, row)
        if first != row:
            raise InputError(
                f"{where}: image {image} has two rows, {first} and {row}: give one vector per image"
            )


def match_images(ids: list[str], images: dict[str, str], where: str) -> dict[str, int]:
    """Image id -> feature row, matching by image id, file name or the file name's base name.

    Every image must be matched: a missing one is an error naming how many and a few.
    """
    row_of = {key: row for row, key in enumerate(ids)}
    matched, missing = {}, []
    for image_id, file_name in images.items():
        for key in (image_id, file_name, os.path.basename(file_name)):
            if key in row_of:
                matched[image_id] = row_of[key]
                break
        else:
            missing.append(image_id)
    if missing:
        examples = ", ".join(sorted(missing)[:5])
        raise InputError(
            f"{where}: {len(missing)} of {len(images)} images of the dataset have no features "
            f"(e.g. image ids {examples}); features are matched by image id or file name"
        )
    return matched


@dataclass
class ConceptImages:
    """Concept features: the bag of visual words of an image's other captions."""

    lexicon: dict[str, int]
    captions_of: dict[str, list[tuple[str, str]]]  # image id -> (caption id, text)
    projection: np.ndarray  # (len(lexicon), dim)

    def vector(self, instance: dict) -> np.ndarray:
        own = set(instance["option_caption_ids"])
        others = [text for cid, text in self.captions_of[instance["image_id"]] if cid not in own]
        return concept_bag(others, self.lexicon).astype(np.float32) @ self.projection


@dataclass
class TableImages:
    """The user's features, projected once when loaded."""

    row_of: dict[str, int]  # image id -> row
    vectors: np.ndarray  # float32 (rows, dim)

    def vector(self, instance: dict) -> np.ndarray:
        return self.vectors[self.row_of[instance["image_id"]]]


@dataclass
class FeatureSpace:
    """Everything a worker needs to turn instances into Examples; loaded once per process."""

    corpus: Corpus
    row_of: dict[str, int]  # caption id -> corpus row
    caption_projection: np.ndarray  # (PV dim, dim)
    images: ConceptImages | TableImages
    config: FeatureConfig
    inference: threading.Lock = field(default_factory=threading.Lock)  # the PV model's RNG

    @functools.cached_property
    def pv_model(self):
        """The version's PV-DBOW model, read on the first edited option (versions without any
        never read it)."""
        path = model_path(self.config.dataset)
        model = load_model(path)
        if model.dm:
            raise InputError(
                f"{path}: a PV-DM model; vectors of edited options are inferred with PV-DBOW "
                "(dm=0), the model generate trains"
            )
        return model

    @functools.cached_property
    def captions_by_image(self) -> dict[str, list[str]]:
        """Image id -> its captions in the corpus: the references captioning is scored with."""
        columns = self.corpus.captions
        by_image = defaultdict(list)
        for image_id, text in zip(columns["image_id"], columns["text"], strict=True):
            by_image[image_id].append(text)
        return dict(by_image)

    def inferred_vector(self, text: str) -> np.ndarray:
        """The unit PV vector of an option text the corpus lacks: the same for a text
        whatever instance, worker or thread asks."""
        with self.inference:
            rng = keyed_rng(self.config.seed, f"infer {text}")
            return infer_unit_vector(self.pv_model, text.split(), rng)


def load_feature_space(config: FeatureConfig) -> FeatureSpace:
    corpus = load_corpus(corpus_folder(config.dataset))
    columns = corpus.captions
    images: ConceptImages | TableImages
    if config.image_features:
        ids, vectors = read_image_features(config.image_features, config.image_ids)
        file_names = dict(zip(columns["image_id"], columns["file_name"], strict=True))
        row_of = match_images(ids, file_names, config.image_features)
        keys = sorted(row_of)
        projection = random_projection(vectors.shape[1], config.dim, config.seed, "images")
        projected = vectors[[row_of[key] for key in keys]].astype(np.float32) @ projection
        images = TableImages({key: row for row, key in enumerate(keys)}, projected)
    else:
        train = [
            t
            for t, split in zip(columns["text"], columns["split"], strict=True)
            if split == "train"
        ]
        lexicon = build_lexicon(train, config.concept_vocabulary, config.concept_min_count)
        captions_of = defaultdict(list)
        for cid, image_id, text in zip(
            columns["caption_id"], columns["image_id"], columns["text"], strict=True
        ):
            captions_of[image_id].append((cid, text))
        projection = random_projection(len(lexicon), config.dim, config.seed, "concepts")
        images = ConceptImages(lexicon, dict(captions_of), projection)
        logging.info("concept lexicon: %d words from the train split's captions", len(lexicon))
    row_of = {cid: row for row, cid in enumerate(columns["caption_id"])}
    pv_dim = corpus.embeddings.shape[1]
    captions = random_projection(pv_dim, config.dim, config.seed, "captions")
    return FeatureSpace(corpus, row_of, captions, images, config)


def text_features(
    texts: list[str], vectors: np.ndarray, bleu: np.ndarray, seen: frozenset
) -> np.ndarray:
    """(k, len(TEXT_FEATURES)): length, BLEU hub, PV hub, novelty of each option.

    ``vectors``: the options' unit PV vectors; ``bleu[j, m]``: simSURF of option m
    against option j as reference.
    """
    columns = {
        "length": [len(text.split()) for text in texts],
        "hub_bleu": hub_scores(bleu.T),
        "hub_pv": hub_scores(vectors @ vectors.T),
        "novel": [text not in seen for text in texts],
    }
    return np.stack([np.asarray(columns[name], np.float32) for name in TEXT_FEATURES], axis=1)


def option_bleu(
    space: FeatureSpace, rows: list[int], texts: list[str], edited: list[bool], scratch: np.ndarray
) -> np.ndarray:
    """simSURF of every option against every option as reference, [reference, option].

    Corpus captions use the corpus's n-gram table; an instance with an edited option
    has its texts encoded on their own (the same numbers for the unedited ones).
    """
    table, references = space.corpus.ngrams, np.asarray(rows, dtype=np.int64)
    if any(edited):
        table = encode_ngrams([text.split() for text in texts])
        references, scratch = np.arange(len(texts)), table.scratch()
    candidates = np.tile(references, (len(references), 1))
    return sim_surf_batch(table, references, candidates, scratch)


def check_num_options(instance: dict, num_options: int, path: str) -> None:
    """Every instance of a version has the version's k options."""
    found = len(instance["options"])
    if found != num_options:
        raise InputError(
            f"{path}: instance {instance['example_id']} has {found} options where the version's "
            f"other instances have {num_options}: a version's instances all have the same "
            "number of options (do the files come from different versions?)"
        )


def read_num_options(dataset: str) -> int:
    """k: the number of options of the first instance of the version's first train shard."""
    paths = list_files(shard_pattern(dataset, PARQUET, "train"))
    if not paths:
        raise InputError(f"{dataset}: no train shards: the trainer needs train instances")
    with FileSystems.open(paths[0], compression_type="uncompressed") as handle:
        first = next(pq.ParquetFile(handle).iter_batches(batch_size=1, columns=["options"]), None)
    if first is None or not first.num_rows:
        raise InputError(f"{paths[0]}: no instances: the trainer needs train instances")
    return len(first.column(0)[0])


def build_example(
    instance: dict, space: FeatureSpace, seen: frozenset, scratch: np.ndarray
) -> Example:
    """``seen``: the option texts of the train split (the novelty guess's memory).

    An instance with an edited option gets every option's PV vector inferred from its text:
    corpus captions' vectors were trained on them and edited texts' cannot be, so mixing the
    two lets any learned model tell the caption from the edit without reading it (on COCO
    val2017's switch_people a Text-FFNN got 90% that way).

    The example holds the options in text order, not the file's shuffled order:
    every text-only function then sees an option set the same way in each of
    its instances, and ties go to the same text (what closed sets rely on).
    """
    order = sorted(range(len(instance["options"])), key=instance["options"].__getitem__)
    texts = [instance["options"][k] for k in order]
    edited = [bool(instance["option_edits"][k]) for k in order]
    try:
        rows = [space.row_of[instance["option_caption_ids"][k]] for k in order]
    except KeyError as missing:
        raise InputError(
            f"{space.config.dataset}: instance {instance['example_id']}: option caption {missing} "
            "is not in corpus/captions.parquet: the dataset's files do not belong together"
        ) from None
    if any(edited):  # all inferred: a trained vector beside inferred ones would mark the caption
        vectors = np.stack([space.inferred_vector(text) for text in texts])
    else:
        vectors = space.corpus.embeddings[rows]
    return Example(
        example_id=instance["example_id"],
        split=instance["split"],
        image_id=instance["image_id"],
        label=order.index(int(instance["label"])),
        image=space.images.vector(instance),
        options=vectors @ space.caption_projection,
        text=text_features(texts, vectors, option_bleu(space, rows, texts, edited, scratch), seen),
        texts=tuple(texts),
        option_set=option_set(instance),
    )


@dataclass(frozen=True)
class SharedFeatureSpace:
    """The one feature space of a worker process (as ``neighbours.SharedCorpus``)."""

    shared: Shared
    config: FeatureConfig

    def acquire(self) -> FeatureSpace:
        return self.shared.acquire(lambda: load_feature_space(self.config), tag=repr(self.config))


class ReadInstances(beam.PTransform):
    """A dataset directory -> (file, instance) of every split (the columns the trainer reads)."""

    def __init__(self, *, dataset: str, splits: tuple[str, ...]):
        super().__init__()
        self._dataset, self._splits = dataset, splits

    def expand(self, pipeline):
        patterns = [shard_pattern(self._dataset, PARQUET, split) for split in self._splits]
        return (
            pipeline
            | "Patterns" >> beam.Create(patterns)
            | "Read"
            >> beam.io.ReadAllFromParquet(with_filename=True, columns=list(INSTANCE_COLUMNS))
        )


class BuildExamples(beam.PTransform):
    """(file, instance) -> Examples, in parallel; the train split's option texts are a side
    input. An instance without the version's ``num_options`` options is an error."""

    def __init__(self, *, space: SharedFeatureSpace, num_options: int):
        super().__init__()
        self._space, self._num_options = space, num_options

    def expand(self, instances):
        seen = (
            instances
            | "Train" >> beam.Filter(lambda read: read[1]["split"] == "train")
            | "Options" >> beam.FlatMap(lambda read: read[1]["options"])
            | "Seen" >> beam.combiners.ToSet()
            | "Freeze" >> beam.Map(frozenset)
        )
        return instances | "Build" >> beam.ParDo(
            _BuildExample(self._space, self._num_options), seen=beam.pvalue.AsSingleton(seen)
        )


class _BuildExample(beam.DoFn):
    def __init__(self, space: SharedFeatureSpace, num_options: int):
        self._space, self._num_options = space, num_options
        self._scratch = None

    def process(self, read: tuple[str, dict], seen: frozenset):
        path, instance = read
        check_num_options(instance, self._num_options, path)
        space = self._space.acquire()
        if self._scratch is None:
            self._scratch = space.corpus.ngrams.scratch()  # one per DoFn instance: not thread-safe
        yield build_example(instance, space, seen, self._scratch)
