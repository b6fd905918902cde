"""Writing instances (Parquet, TFRecord, MCIC text, per split) so that reruns are byte-identical.

The MCIC text files are written for five-option instances only (their format has five answers).

Layout under the output directory (``schemas/layout.py``), for each split in
train/dev/test::

    parquet/<split>/<split>-SSSSS-of-NNNNN.parquet
    tfrecord/<split>/<split>-SSSSS-of-NNNNN.tfrecord
    mcic/<split>/<split>-SSSSS-of-NNNNN.txt

Beam's file sinks cut files by bundle, or deal records to shards round-robin
from a random start, so two runs over the same records write different files.
Here a record's shard is a hash of its key, and each shard is sorted by key and
written whole by one call: for a fixed seed and config a rerun writes the same
bytes whatever the runner or worker count. A retried bundle rewrites the same
files, and a failed run leaves no completion marker (``pipelines/store/versions.py``),
so a half-written shard is never read as part of a dataset.
"""

import hashlib
import io
import math
import operator
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from schemas.instance import ARROW_SCHEMA, MCIC_OPTIONS, mcic_line
from schemas.layout import MCIC, PARQUET, SUFFIXES, TFRECORD, shard_file, shards_directory
from schemas.tf_example import tfrecord_frame, to_tf_example
from transforms.corpus.split import SPLITS
from transforms.corpus.store import CorpusRef
from transforms.files import unfenced, write_file
from transforms.progress import timed
from transforms.spill import RemoveAfter, SpillToFiles, folder_under, read_spilled

SHARD_CAPTIONS = 20_000  # default shard size: one file per this many captions of the split


class Format(NamedTuple):
    """One kind of file: its directory (under the output) and suffix, how a shard becomes bytes."""

    directory: str
    suffix: str
    encode: Callable[[list], bytes]


def shard_count(records: int, requested: int, per_shard: int = SHARD_CAPTIONS) -> int:
    """``requested`` files, or (0) enough that each holds about ``per_shard`` records."""
    return requested or max(1, math.ceil(records / per_shard))


def shard_of(key: str, num_shards: int) -> int:
    """A stable hash: Python's ``hash`` of a str differs between processes."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % num_shards


def shard_path(output: str, form: Format, name: str, shard: int, num_shards: int) -> str:
    return FileSystems.join(
        output, form.directory, shard_file(name, shard, num_shards, form.suffix)
    )


def parquet_bytes(instances: list[dict]) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(instances, schema=ARROW_SCHEMA), buffer)
    return buffer.getvalue()


def tfrecord_bytes(instances: list[dict]) -> bytes:
    return b"".join(tfrecord_frame(to_tf_example(instance)) for instance in instances)


def text_bytes(lines: Iterable[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode("utf-8")


def mcic_bytes(instances: list[dict]) -> bytes:
    return text_bytes(mcic_line(instance) for instance in instances)


ENCODERS = {PARQUET: parquet_bytes, TFRECORD: tfrecord_bytes, MCIC: mcic_bytes}


def instance_formats(split: str, num_options: int) -> tuple[Format, ...]:
    """Every format of one split's instances, each in its own directory; the MCIC text
    format only holds five options, so it is written only for five-option instances."""
    return tuple(
        Format(f"{form}/{split}", SUFFIXES[form], encode)
        for form, encode in ENCODERS.items()
        if form != MCIC or num_options == MCIC_OPTIONS
    )


def write_shard(
    shard_and_records: tuple[int, dict[str, list]],
    *,
    output: str,
    name: str,
    formats: tuple[Format, ...],
    key: Callable[[Any], str],
    num_shards: int,
    fence: Callable[[], None],
) -> list[str]:
    shard, grouped = shard_and_records
    with timed("write", "write"):  # the spilled records read back, sorted, encoded, written
        records = sorted(read_spilled(grouped["records"]), key=key)
        fence()  # a run whose claim was taken over writes no shard
        paths = []
        for form in formats:
            paths.append(shard_path(output, form, name, shard, num_shards))
            write_file(paths[-1], form.encode(records))
    Metrics.counter("write", "shards").inc()
    Metrics.counter("write", records_counter(name)).inc(len(records))
    return paths


def records_counter(name: str) -> str:
    """The counter of records written to the shards named ``name`` (each format holds them all)."""
    return f"records_{name}"


def records_written(counters: dict[str, int]) -> dict[str, int]:
    """Records written per shard name, from a run's counters: what its shards must hold.

    >>> records_written({"write/records_dev": 3, "write/shards": 2, "corpus/captions": 9})
    {'dev': 3}
    """
    prefix = f"write/{records_counter('')}"
    return {
        name[len(prefix) :]: count for name, count in counters.items() if name.startswith(prefix)
    }


class ShardPlan(NamedTuple):
    """What WriteShards needs beside the records, each a one-element PCollection: how many
    shards, and the folder their records go through."""

    num_shards: beam.PCollection
    spill: beam.PCollection


def corpus_shards(
    corpus: beam.PCollection, name: str, num_shards: Callable[[CorpusRef], int]
) -> ShardPlan:
    """Shards counted from the corpus (its split sizes), spilled under its folder."""
    return ShardPlan(
        corpus | f"ShardCount {name}" >> beam.Map(num_shards),
        folder_under(corpus, shards_directory(name)),
    )


# known_shards' spill folder, in the shards' own: Parquet readers skip names starting "_"
SPILL_FOLDER = "_spill"


def known_shards(
    pipeline: beam.Pipeline, name: str, rows: int, output: str, per_shard: int = SHARD_CAPTIONS
) -> ShardPlan:
    """Shards of about ``per_shard`` of the ``rows`` records the driver has counted,
    spilled in a folder of ``output``, the shards' folder."""
    return ShardPlan(
        pipeline | f"ShardCount {name}" >> beam.Create([shard_count(rows, 0, per_shard)]),
        pipeline | f"Spill {name}" >> beam.Create([FileSystems.join(output, SPILL_FOLDER)]),
    )


class WriteShards(beam.PTransform):
    """Records -> every shard file of every format (empty shards included); emits the paths.

    Shards are ``<output>/<format directory>/<name>-SSSSS-of-NNNNN<suffix>``. ``plan`` is
    where their count and spill folder come from (:func:`corpus_shards`,
    :func:`known_shards`): the records reach their shard through files in that folder
    (``spill.py``), which goes once every shard is written.
    """

    def __init__(
        self,
        *,
        output: str,
        name: str,
        formats: tuple[Format, ...],
        key: Callable[[Any], str],
        plan: ShardPlan,
        fence: Callable[[], None] = unfenced,
    ):
        super().__init__()
        self._output, self._name, self._formats, self._key = output, name, formats, key
        self._plan, self._fence = plan, fence

    def expand(self, records):
        count, folder = self._plan.num_shards, self._plan.spill
        keyed = (
            records
            | "Shard"
            >> beam.Map(
                lambda record, n, key: (shard_of(key(record), n), record),
                n=beam.pvalue.AsSingleton(count),
                key=self._key,
            ).with_output_types(tuple[int, Any])
            | "ToFiles" >> SpillToFiles(folder=folder, name=self._name, fence=self._fence)
        )
        every_shard = count | "EveryShard" >> beam.FlatMap(
            lambda n: ((s, None) for s in range(n))
        ).with_output_types(tuple[int, None])
        written = (
            {"records": keyed, "shard": every_shard}
            | "Group" >> beam.CoGroupByKey()
            | "Write"
            >> beam.FlatMap(
                write_shard,
                output=self._output,
                name=self._name,
                formats=self._formats,
                key=self._key,
                num_shards=beam.pvalue.AsSingleton(count),
                fence=self._fence,
            )
        )
        _ = written | "RemoveSpilled" >> RemoveAfter(folder)
        return written


def split_shards(split: str, requested: int) -> Callable[[CorpusRef], int]:
    return lambda ref: shard_count(ref.split_sizes[split], requested)


class WriteInstances(beam.PTransform):
    """Instances -> per-split files; returns the written file names."""

    def __init__(
        self,
        *,
        output: str,
        num_shards: int,
        num_options: int,
        corpus: beam.PCollection,
        fence: Callable[[], None] = unfenced,
    ):
        super().__init__()
        self._output, self._num_shards, self._corpus = output, num_shards, corpus
        self._num_options, self._fence = num_options, fence

    def expand(self, instances):
        by_split = instances | "BySplit" >> beam.Partition(
            lambda instance, _: SPLITS.index(instance["split"]), len(SPLITS)
        )
        written = [
            by_split[code]
            | f"Write {split}"
            >> WriteShards(
                output=self._output,
                name=split,
                formats=instance_formats(split, self._num_options),
                key=operator.itemgetter("example_id"),
                plan=corpus_shards(self._corpus, split, split_shards(split, self._num_shards)),
                fence=self._fence,
            )
            for code, split in enumerate(SPLITS)
        ]
        return written | "Written" >> beam.Flatten()
