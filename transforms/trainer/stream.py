"""Examples for fitting, streamed in minibatches with a bounded number held at once.

Fitting needs passes over the whole train split (epochs, scaler statistics,
ridge's Gram matrices, counts) and over dev (selection after each epoch), but
never the whole split at once. :class:`WriteExamples` writes the train and
dev Examples as Parquet shards, each example in a shard chosen by a key of
(seed, example id) and ordered by it, so shard contents do not depend on how
the runner bundled them; :class:`ExampleShards` reads them back in minibatches:
shuffled (shard order per pass, then a shuffle buffer) for training steps, in
file order for statistics and dev accuracy. It holds at most ``capacity``
examples at a time, plus the one Parquet row group being decoded (at most
``READ_ROWS`` examples). :class:`InMemoryExamples` serves the same interface
from a list (generate's audit, the tests).
"""

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas.examples import Batch, Example
from transforms.seeds import keyed_int

READ_ROWS = 256  # examples per Parquet row group, written and read
EXAMPLES_PER_SHARD = 20_000

EXAMPLE_SCHEMA = pa.schema(
    [
        ("example_id", pa.string()),
        ("split", pa.string()),
        ("image_id", pa.string()),
        ("label", pa.int64()),
        ("image", pa.list_(pa.float32())),
        ("options", pa.list_(pa.float32())),  # k * dim, row-major
        ("text", pa.list_(pa.float32())),  # k * len(TEXT_FEATURES), row-major
        ("texts", pa.list_(pa.string())),
        ("option_set", pa.string()),
    ]
)


class ExampleSource(Protocol):
    """What a fitter reads a split through."""

    def batches(self, size: int, seed: int | None = None) -> Iterator[Batch]:
        """Minibatches of ``size`` (the last may be smaller) covering the split once;
        shuffled by ``seed`` when given, in a fixed order otherwise."""


@dataclass(frozen=True)
class FitData:
    train: ExampleSource
    dev: ExampleSource


@dataclass(frozen=True)
class InMemoryExamples:
    """A split already stacked in memory: generate's audit samples, the tests' problems."""

    batch: Batch

    def batches(self, size: int, seed: int | None = None) -> Iterator[Batch]:
        order = np.arange(len(self.batch))
        if seed is not None:
            order = np.random.default_rng(seed).permutation(len(self.batch))
        for start in range(0, len(order), size):
            yield self.batch.take(order[start : start + size])


def to_arrow(examples: Sequence[Example]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "example_id": e.example_id,
                "split": e.split,
                "image_id": e.image_id,
                "label": e.label,
                "image": e.image,
                "options": e.options.reshape(-1),
                "text": e.text.reshape(-1),
                "texts": list(e.texts),
                "option_set": e.option_set,
            }
            for e in examples
        ],
        schema=EXAMPLE_SCHEMA,
    )


def flat_column(rows: pa.RecordBatch, name: str, shape: tuple[int, ...]) -> np.ndarray:
    return rows.column(name).values.to_numpy(zero_copy_only=False).reshape(shape)


def from_arrow(rows: pa.RecordBatch) -> list[Example]:
    """The examples of a record batch (every example of a version has the same k and dim)."""
    n = rows.num_rows
    if not n:
        return []
    texts = rows.column("texts").to_pylist()
    k = len(texts[0])
    images = flat_column(rows, "image", (n, -1))
    options = flat_column(rows, "options", (n, k, -1))
    text = flat_column(rows, "text", (n, k, -1))
    columns = {
        name: rows.column(name).to_pylist()
        for name in ("example_id", "split", "image_id", "option_set")
    }
    labels = rows.column("label").to_pylist()
    return [
        Example(
            example_id=columns["example_id"][row],
            split=columns["split"][row],
            image_id=columns["image_id"][row],
            label=labels[row],
            image=images[row],
            options=options[row],
            text=text[row],
            texts=tuple(texts[row]),
            option_set=columns["option_set"][row],
        )
        for row in range(n)
    ]


class ExampleShards:
    """One split's example shards, streamed; ``peak`` is the most examples it ever held."""

    def __init__(self, paths: Iterable[str], *, capacity: int):
        self.paths = sorted(paths)
        self.capacity = capacity
        self.read_rows = max(1, min(READ_ROWS, capacity // 2))
        self.peak = 0

    def _chunks(self, paths: Sequence[str]) -> Iterator[list[Example]]:
        for path in paths:
            with FileSystems.open(path, compression_type="uncompressed") as handle:
                for rows in pq.ParquetFile(handle).iter_batches(batch_size=self.read_rows):
                    yield from_arrow(rows)

    def _hold(self, count: int) -> None:
        self.peak = max(self.peak, count)

    def batches(self, size: int, seed: int | None = None) -> Iterator[Batch]:
        """Batches of at most half the capacity: what is held while one fills, plus the chunk
        read into it, stays within the capacity."""
        size = min(size, self.capacity // 2)
        if seed is None:
            yield from self._in_order(size)
        else:
            yield from self._shuffled(size, np.random.default_rng(seed))

    def _in_order(self, size: int) -> Iterator[Batch]:
        held: list[Example] = []
        for chunk in self._chunks(self.paths):
            held.extend(chunk)
            self._hold(len(held))
            while len(held) >= size:
                yield Batch.stack(held[:size])
                held = held[size:]
        if held:
            yield Batch.stack(held)

    def _shuffled(self, size: int, rng: np.random.Generator) -> Iterator[Batch]:
        """A shuffle buffer: before each chunk is read, minibatches drawn at random from the
        buffer make room for it, so the buffer never exceeds ``capacity``."""
        paths = [self.paths[k] for k in rng.permutation(len(self.paths))]
        held: list[Example] = []
        for chunk in self._chunks(paths):
            while len(held) + len(chunk) > self.capacity and held:
                yield draw(held, min(size, len(held)), rng)
            held.extend(chunk)
            self._hold(len(held))
        while held:
            yield draw(held, min(size, len(held)), rng)


def draw(held: list[Example], size: int, rng: np.random.Generator) -> Batch:
    """Removes ``size`` random examples from ``held`` (swapping the last into each hole)."""
    picked = []
    for _ in range(size):
        position = int(rng.integers(len(held)))
        held[position], held[-1] = held[-1], held[position]
        picked.append(held.pop())
    return Batch.stack(picked)


def shard_count(count: int) -> int:
    return max(1, math.ceil(count / EXAMPLES_PER_SHARD))


def write_shard(
    keyed: tuple[int, Iterable[Example]], *, directory: str, split: str, seed: int, shards: int
) -> str:
    """One shard: its examples ordered by their (seed, example id) key."""
    shard, examples = keyed
    ordered = sorted(examples, key=lambda e: keyed_int(seed, f"shard {e.example_id}"))
    path = FileSystems.join(directory, f"{split}-{shard:05d}-of-{shards:05d}.parquet")
    with FileSystems.create(path) as handle:
        pq.write_table(to_arrow(ordered), handle, row_group_size=READ_ROWS)
    return path


class WriteExamples(beam.PTransform):
    """Examples -> the paths of ``split``'s shards (one element per shard)."""

    def __init__(self, *, directory: str, split: str, seed: int):
        super().__init__()
        self._directory, self._split, self._seed = directory, split, seed

    def expand(self, examples):
        split = self._split
        members = examples | "Split" >> beam.Filter(lambda e: e.split == split)
        shards = (
            members | "Count" >> beam.combiners.Count.Globally() | "Shards" >> beam.Map(shard_count)
        )
        seed = self._seed
        return (
            members
            | "Key"
            >> beam.Map(
                lambda e, shards: (keyed_int(seed, f"shard {e.example_id}") % shards, e),
                shards=beam.pvalue.AsSingleton(shards),
            ).with_output_types(tuple[int, Any])
            | "Group" >> beam.GroupByKey()
            | "Write"
            >> beam.Map(
                write_shard,
                directory=self._directory,
                split=split,
                seed=seed,
                shards=beam.pvalue.AsSingleton(shards),
            )
        )
