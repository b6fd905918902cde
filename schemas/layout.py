"""Where a version's dataset files live: one directory per format, one per split inside.

::

    <version>/parquet/<split>/<split>-SSSSS-of-NNNNN.parquet
    <version>/tfrecord/<split>/<split>-SSSSS-of-NNNNN.tfrecord
    <version>/tfrecord/feature_spec.json
    <version>/mcic/<split>/<split>-SSSSS-of-NNNNN.txt

so a directory-level read (``pandas.read_parquet("<version>/parquet/dev")``,
``pyarrow.dataset``, HuggingFace ``datasets``' Parquet builder, which takes the
split from the directory and file names) sees one format only. Every reader
and writer of instance shards takes its paths from here.
"""

import re

from apache_beam.io.filesystems import FileSystems

PARQUET = "parquet"
TFRECORD = "tfrecord"
MCIC = "mcic"
SUFFIXES = {PARQUET: ".parquet", TFRECORD: ".tfrecord", MCIC: ".txt"}
# How to parse the TFRecord files (schemas.tf_example.tfrecord_feature_spec), beside them.
FEATURE_SPEC_FILE = f"{TFRECORD}/feature_spec.json"


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


def split_directory(version: str, form: str, split: str) -> str:
    """
    >>> split_directory("gs://b/out/versions/v1", "parquet", "dev")
    'gs://b/out/versions/v1/parquet/dev'
    """
    return FileSystems.join(version, form, split)


def relative_shard_pattern(form: str, split: str) -> str:
    """The glob of every shard of one format and split, relative to the version.

    >>> relative_shard_pattern("tfrecord", "test")
    'tfrecord/test/test-*.tfrecord'
    """
    return f"{form}/{split}/{split}-*{SUFFIXES[form]}"


def shard_pattern(version: str, form: str, split: str) -> str:
    """
    >>> shard_pattern("gs://b/v1", "parquet", "dev")
    'gs://b/v1/parquet/dev/dev-*.parquet'
    """
    return FileSystems.join(version, relative_shard_pattern(form, split))
