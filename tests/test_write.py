import os
import random

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline

from transforms.corpus.store import CorpusRef
from transforms.dataset.write import Format, WriteShards, shard_count, shard_of, text_bytes

LINES = Format("", ".txt", text_bytes)


def _write(directory: str, records: list[str], num_shards: int) -> dict[str, bytes]:
    with TestPipeline() as pipeline:
        corpus = pipeline | "Corpus" >> beam.Create([CorpusRef("unused", 0, {})])
        _ = (
            pipeline
            | beam.Create(records)
            | WriteShards(
                output=directory,
                name="lines",
                formats=(LINES,),
                key=str,
                num_shards=lambda ref: num_shards,
                corpus=corpus,
            )
        )
    files = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as handle:
            files[name] = handle.read()
    return files


def test_shards_are_sorted_complete_and_independent_of_input_order(tmp_path):
    records = [f"record {i:03d}" for i in range(40)]
    shuffled = random.Random(7).sample(records, len(records))
    first = _write(str(tmp_path / "a"), records, num_shards=5)
    second = _write(str(tmp_path / "b"), shuffled, num_shards=5)
    assert first == second
    assert sorted(first) == [f"lines-{s:05d}-of-00005.txt" for s in range(5)]
    written = []
    for name, data in first.items():
        lines = data.decode().splitlines()
        assert lines == sorted(lines)
        shard = int(name.split("-")[1])
        assert all(shard_of(line, 5) == shard for line in lines)
        written.extend(lines)
    assert sorted(written) == records


def test_every_shard_is_written_even_when_empty(tmp_path):
    files = _write(str(tmp_path), ["only one"], num_shards=3)
    assert len(files) == 3
    assert sorted(files.values()) == [b"", b"", b"only one\n"]


def test_shard_count_defaults_to_the_split_size():
    assert shard_count(1, 0) == 1
    assert shard_count(40_001, 0) == 3
    assert shard_count(40_001, 7) == 7
