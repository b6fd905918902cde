"""Example shards: what is written is read back, every pass covers a split once, and no pass
holds more than the configured number of examples."""

import pathlib

import apache_beam as beam
import numpy as np
import pyarrow.parquet as pq
import pytest

from schemas.examples import Example
from tests.support.local import local_pipeline
from transforms.trainer.stream import ExampleShards, WriteExamples, write_shard


def example(number: int, split: str = "train", k: int = 3, dim: int = 4) -> Example:
    rng = np.random.default_rng(number)
    return Example(
        example_id=f"{number}_0",
        split=split,
        image_id=str(number),
        label=number % k,
        image=rng.standard_normal(dim).astype(np.float32),
        options=rng.standard_normal((k, dim)).astype(np.float32),
        text=rng.standard_normal((k, 4)).astype(np.float32),
        texts=tuple(f"caption {number} {j}" for j in range(k)),
        option_set=f"{number}",
    )


@pytest.fixture
def shards(tmp_path) -> list[str]:
    """Three shards of 100, 57 and 1 examples."""
    sizes, paths, number = (100, 57, 1), [], 0
    for shard, size in enumerate(sizes):
        members = [example(n) for n in range(number, number + size)]
        paths.append(
            write_shard((shard, members), directory=str(tmp_path), split="train", seed=0, shards=3)
        )
        number += size
    return paths


def ids(batches) -> list[str]:
    return [e for batch in batches for e in batch.texts[:, 0]]


def test_examples_are_read_back_as_written(shards):
    source = ExampleShards(shards, capacity=50)
    read = {}
    for batch in source.batches(16):
        for row in range(len(batch)):
            read[batch.texts[row, 0].split()[1]] = (batch, row)
    assert len(read) == 158
    for number in (0, 99, 157):
        batch, row = read[str(number)]
        written = example(number)
        np.testing.assert_array_equal(batch.images[row], written.image)
        np.testing.assert_array_equal(batch.options[row], written.options)
        np.testing.assert_array_equal(batch.text[row], written.text)
        assert batch.labels[row] == written.label and tuple(batch.texts[row]) == written.texts


@pytest.mark.parametrize("capacity", [8, 50, 1000])
def test_every_pass_covers_the_split_once_holding_at_most_capacity(shards, capacity):
    source = ExampleShards(shards, capacity=capacity)
    in_order = ids(source.batches(5))
    shuffled = ids(source.batches(5, seed=1))
    assert sorted(in_order) == sorted(shuffled) and len(set(in_order)) == 158
    assert shuffled != in_order
    assert ids(source.batches(5, seed=1)) == shuffled  # the same seed, the same order
    assert ids(source.batches(5, seed=2)) != shuffled
    assert all(len(batch) <= 5 for batch in source.batches(5, seed=3))
    passes = [ids(source.batches(1024)), ids(source.batches(1024, seed=4))]
    assert all(sorted(done) == sorted(in_order) for done in passes)
    assert 0 < source.peak <= capacity  # batches larger than the capacity too


def test_shards_do_not_depend_on_the_order_examples_arrive_in(tmp_path):
    members = [example(n, split) for n in range(30) for split in ("train", "dev")]

    def written(directory: str, order: list[Example]) -> dict[str, list[str]]:
        with local_pipeline() as pipeline:
            examples = pipeline | beam.Create(order, reshuffle=False)
            _ = examples | "Train" >> WriteExamples(directory=directory, split="train", seed=0)
            _ = examples | "Dev" >> WriteExamples(directory=directory, split="dev", seed=0)
        files = sorted(pathlib.Path(directory).glob("*.parquet"))
        return {f.name: pq.read_table(f).column("example_id").to_pylist() for f in files}

    forward = written(str(tmp_path / "forward"), members)
    backward = written(str(tmp_path / "backward"), members[::-1])
    assert forward == backward
    assert set(forward) == {"train-00000-of-00001.parquet", "dev-00000-of-00001.parquet"}
    assert sorted(forward["dev-00000-of-00001.parquet"]) == sorted(f"{n}_0" for n in range(30))
