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
    return build_path(version, "corpus")


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
