"""The audit reads a split in two passes: only its seeded sample becomes Python rows."""

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.layout import PARQUET, dataset_path
from transforms.errors import InputError
from transforms.trainer.dataset_audit import read_split
from transforms.trainer.features import INSTANCE_COLUMNS


def instance(n: int, k: int = 3) -> dict:
    options = [f"caption {n} option {j}" for j in range(k)]
    return {
        "example_id": f"{n}_0",
        "split": "train",
        "image_id": str(n),
        "image_file": f"{n}.jpg",
        "options": options,
        "label": 0,
        "option_caption_ids": [f"{n}:{j}" for j in range(k)],
        "option_edits": [""] * k,
    }


def write_shards(directory, shards: list[list[dict]]) -> str:
    folder = dataset_path(str(directory), PARQUET, "train")  # a version's layout
    os.makedirs(folder)
    for s, rows in enumerate(shards):
        table = pa.Table.from_pylist([{c: row[c] for c in INSTANCE_COLUMNS} for row in rows])
        pq.write_table(table, os.path.join(folder, f"train-{s:05d}-of-{len(shards):05d}.parquet"))
    return str(directory)


def test_the_sample_does_not_depend_on_how_the_rows_are_sharded(tmp_path):
    rows = [instance(n) for n in range(40)]
    one = write_shards(tmp_path / "one", [rows])
    three = write_shards(tmp_path / "three", [rows[25:], rows[:10], rows[10:25]])
    sampled, seen, k = read_split(one, "train", 0, 7, seed=5)
    resharded, seen_again, _ = read_split(three, "train", 0, 7, seed=5)
    ids = sorted(row["example_id"] for row in sampled)
    assert k == 3 and len(ids) == 7 == len(set(ids))
    assert ids == sorted(row["example_id"] for row in resharded)
    assert ids != sorted(r["example_id"] for r in read_split(one, "train", 0, 7, seed=6)[0])
    assert seen == seen_again == {text for row in rows for text in row["options"]}
    assert len(read_split(one, "train", 0, 0, seed=5)[0]) == 40  # 0: every row
    assert set(sampled[0]) == set(INSTANCE_COLUMNS)


def test_an_instance_with_another_number_of_options_is_named(tmp_path):
    directory = write_shards(tmp_path, [[instance(1), instance(2)], [instance(3, k=4)]])
    with pytest.raises(InputError, match=r"train-00001-of-00002.parquet: instance 3_0 has 4 "):
        read_split(directory, "train", 0, 0, seed=0)
    with pytest.raises(InputError, match="instance 1_0 has 3 options where the version's other"):
        read_split(directory, "train", 5, 0, seed=0)
