"""Where a version's files live: the dataset to publish apart from what built it.

::

    <version>/dataset/README.md                          the dataset card
    <version>/dataset/parquet/<split>/<split>-SSSSS-of-NNNNN.parquet
    <version>/dataset/tfrecord/<split>/<split>-SSSSS-of-NNNNN.tfrecord
    <version>/dataset/tfrecord/feature_spec.json
    <version>/dataset/mcic/<split>/<split>-SSSSS-of-NNNNN.txt
    <version>/build/corpus/ build/pv/ build/skipped/ ...   what built it, never published

``dataset/`` is what a consumer reads and a hub receives, so no glob under it
(``dataset/**/*.parquet``) can reach a build artifact such as the corpus's own
Parquet table; ``OUTPUT/latest`` links to it. Inside, one directory per format and
split, so a directory-level read (``pandas.read_parquet("<dataset>/parquet/dev")``,
``pyarrow.dataset``, HuggingFace ``datasets``' Parquet builder, which takes the
split from the directory and file names) sees one format only. Every reader and
writer of a version's files takes its paths from here.
"""

import re

from apache_beam.io.filesystems import FileSystems

DATASET = "dataset"  # what is published: instances, card, plots, statistics
BUILD = "build"  # what built it: corpus tables, embeddings, indexes, PV model, skipped records
PARQUET = "parquet"
CARD_FILE = "README.md"  # the dataset card, in a dataset folder and at the output root
TFRECORD = "tfrecord"
MCIC = "mcic"
SUFFIXES = {PARQUET: ".parquet", TFRECORD: ".tfrecord", MCIC: ".txt"}
# How to parse the TFRecord files (schemas.tf_example.tfrecord_feature_spec), beside them.
FEATURE_SPEC_FILE = f"{TFRECORD}/feature_spec.json"
# TFDS's own description of them (transforms/report/tfds.py)
TFDS_INFO_FILE = f"{TFRECORD}/dataset_info.json"
TFDS_FEATURES_FILE = f"{TFRECORD}/features.json"
STATISTICS_FILE = "statistics.json"  # in dataset/: what the run counted, the audit
CROISSANT_FILE = "metadata.json"  # in dataset/: Croissant's metadata
# in dataset/, beside the card
SIMILARITIES_PLOT, SPLIT_SIZES_PLOT, SKIPPED_PLOT = (
    "decoy_similarities.png",
    "split_sizes.png",
    "skipped.png",
)

# An output root: its versions, and what names the latest of them.
VERSIONS_DIRECTORY = "versions"
LATEST_FILE = "latest.txt"
LATEST_LINK = "latest"
# A version's own records, at its top: what it holds, that it is whole, who writes it.
MANIFEST_FILE = "manifest.json"
COMPLETE_FILE = "_COMPLETE"
LOCK_FILE = "_LOCK"
# Added to a completed version later, by other commands, at its top: regenerate --train's
# evaluation (not "train", a split's name) and dmc-rate import's ratings/<job>.
EVALUATION_DIRECTORY = "evaluation"
RATINGS_DIRECTORY = "ratings"

# build/: what built the dataset.
CORPUS_DIRECTORY = "corpus"
PV_MODEL_FILE = "pv/doc2vec.model"  # the trained paragraph-vector model
SEARCH_DIRECTORY = "search"  # --optimize's search; its report is SEARCH_REPORT_FILE there
SEARCH_REPORT_FILE = "report.json"
ADVERSARIAL_FILE = "adversarial.json"  # --adversarial_rounds' before and after
# build/corpus/: the corpus every strategy reads
CAPTIONS_FILE = "captions.parquet"
EMBEDDINGS_FILE = "embeddings.npy"
OWN_CLOSENESS_FILE = "own_closeness.npy"
# unit vectors of every caption's original text from the validity rule's sentence encoder,
# one row per caption (transforms/corpus/sentences.py); absent with --validity_model none
SENTENCE_EMBEDDINGS_FILE = "sentence_embeddings.npy"
# in a sampled run, the rows (ascending) whose vectors PV training learned; every other
# row's vector was inferred. Absent when every caption was trained on.
TRAINED_ROWS_FILE = "pv_trained_rows.npy"
OBJECTS_FILE = "objects.npy"  # madlibs: images (dense index) x 80 COCO categories
# build/corpus/: a run's working folders, each removed once what it holds is read
PARTS_DIRECTORY = "caption_parts"  # the captions as PV training gathers them
INFERRED_DIRECTORY = "pv_inferred"  # a sampled run's inferred vectors, one file per shard
SENTENCE_PARTS_DIRECTORY = "sentence_parts"  # the sentence encoder's vectors, one file a shard
EDGES_DIRECTORY = "edges"  # closed sets' allowed pairs, by part
LEFTOVERS_DIRECTORY = "leftovers"  # closed sets' captions left for the border rounds
BORDER_DIRECTORY = "border_rounds"  # closed sets' border rounds' groups, a folder each
SELECTIONS_DIRECTORY = "selections"  # closed sets' chosen sets, before instances are built


def shards_directory(name: str) -> str:
    """The working folder of the writer of ``name``'s shards (``instances``, ``skipped``).

    >>> shards_directory("instances")
    'shards-instances'
    """
    return f"shards-{name}"


def dataset_path(version: str, *parts: str) -> str:
    """
    >>> dataset_path("gs://b/out/versions/v1", "README.md")
    'gs://b/out/versions/v1/dataset/README.md'
    """
    return FileSystems.join(version, DATASET, *parts)


def build_path(version: str, *parts: str) -> str:
    """
    >>> build_path("out/versions/v1", "pv", "doc2vec.model")
    'out/versions/v1/build/pv/doc2vec.model'
    """
    return FileSystems.join(version, BUILD, *parts)


def corpus_folder(version: str) -> str:
    """The corpus tables, embeddings and neighbour indexes every strategy reads."""
    return build_path(version, CORPUS_DIRECTORY)


def corpus_file(directory: str, name: str) -> str:
    """A file of the corpus folder ``directory``.

    >>> corpus_file("out/versions/v1/build/corpus", CAPTIONS_FILE)
    'out/versions/v1/build/corpus/captions.parquet'
    """
    return FileSystems.join(directory, name)


def ngrams_file(directory: str, array: str) -> str:
    """One array of the simSURF n-gram table, in the corpus folder. Each is a file of its
    own, so that the worker processes of a machine map it and share one copy.

    >>> ngrams_file("c", "ids")
    'c/ngrams-ids.npy'
    """
    return FileSystems.join(directory, f"ngrams-{array}.npy")


def index_file(directory: str, pool: str) -> str:
    """The faiss index of a decoy pool (``all``, or a split's), in the corpus folder.

    >>> index_file("c", "train")
    'c/index-train.faiss'
    """
    return FileSystems.join(directory, f"index-{pool}.faiss")


def shard_file(name: str, shard: int, num_shards: int, suffix: str) -> str:
    """
    >>> shard_file("dev", 0, 2, ".parquet")
    'dev-00000-of-00002.parquet'
    >>> SHARD_NAME.fullmatch("parquet/dev/" + shard_file("dev", 1, 2, ".parquet"))["shard"]
    '00001'
    """
    return f"{name}-{shard:05d}-of-{num_shards:05d}{suffix}"


# A shard's path (relative to the version) as shard_file names it, in its parts.
SHARD_NAME = re.compile(
    r"(?P<dir>.+)/(?P<prefix>[a-z]+)-(?P<shard>\d{5})-of-(?P<of>\d{5})(?P<suffix>\.\w+)"
)


def relative_shard_pattern(form: str, split: str) -> str:
    """The glob of every shard of one format and split, relative to the dataset folder.

    >>> relative_shard_pattern("tfrecord", "test")
    'tfrecord/test/test-*.tfrecord'
    """
    return f"{form}/{split}/{split}-*{SUFFIXES[form]}"


def shard_pattern(version: str, form: str, split: str) -> str:
    """
    >>> shard_pattern("gs://b/v1", "parquet", "dev")
    'gs://b/v1/dataset/parquet/dev/dev-*.parquet'
    """
    return dataset_path(version, relative_shard_pattern(form, split))
