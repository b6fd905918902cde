import os
import random
import re

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.local import local_pipeline
from transforms.dataset.write import (
    Format,
    ShardPlan,
    WriteShards,
    shard_count,
    shard_of,
    text_bytes,
)
from transforms.errors import InputError
from transforms.files import read_parquet_shards, remove_shards

LINES = Format("", ".txt", text_bytes)


def _write(directory: str, records: list[str], num_shards: int) -> dict[str, bytes]:
    with local_pipeline() as pipeline:
        plan = ShardPlan(
            pipeline | "Count" >> beam.Create([num_shards]),
            pipeline | "Spill" >> beam.Create([os.path.join(directory, "_spill")]),
        )
        _ = (
            pipeline
            | beam.Create(records)
            | WriteShards(
                output=directory,
                name="lines",
                formats=(LINES,),
                key=str,
                plan=plan,
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


def _parquet_shards(folder, shards: dict[str, list[int]]) -> None:
    os.makedirs(folder, exist_ok=True)
    for name, values in shards.items():
        pq.write_table(pa.table({"value": values}), os.path.join(folder, name))


def test_a_whole_set_of_shards_reads_as_one_table_in_shard_order(tmp_path):
    _parquet_shards(
        tmp_path, {"rows-00001-of-00002.parquet": [3], "rows-00000-of-00002.parquet": [1, 2]}
    )
    (tmp_path / "notes.txt").write_text("not a shard")
    assert read_parquet_shards(str(tmp_path), "rows").column("value").to_pylist() == [1, 2, 3]


@pytest.mark.parametrize(
    "names, problem",
    [
        ([], "holds no rows-00000-of-00001.parquet or other shard"),
        (["rows-00000-of-00002.parquet"], "missing rows-00001-of-00002.parquet, extra none"),
        (
            ["rows-00000-of-00001.parquet", "rows-00001-of-00002.parquet"],
            "missing none, extra rows-00001-of-00002.parquet",
        ),
    ],
)
def test_a_partial_or_mixed_set_of_shards_is_refused_naming_the_folder(tmp_path, names, problem):
    _parquet_shards(tmp_path, {name: [0] for name in names})
    with pytest.raises(InputError, match=f"^{tmp_path}: .*{re.escape(problem)}"):
        read_parquet_shards(str(tmp_path), "rows")


def test_removing_shards_leaves_every_other_file(tmp_path):
    _parquet_shards(tmp_path, {"rows-00000-of-00001.parquet": [0], "other.parquet": [1]})
    remove_shards(str(tmp_path), "rows", ".parquet")
    assert os.listdir(tmp_path) == ["other.parquet"]
    single = tmp_path / "single.parquet"  # what an earlier release wrote at the folder's path
    single.write_bytes(b"")
    remove_shards(str(single), "rows", ".parquet")
    assert not single.exists()
