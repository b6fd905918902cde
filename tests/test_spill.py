"""Values grouped through files (transforms/spill.py): the pieces of a key read back as
its values, however the files are cut, and the folder goes once they are read."""

import os

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests.support.local import local_pipeline
from transforms import spill
from transforms.spill import (
    GroupThroughFiles,
    RemoveAfter,
    SpillToFiles,
    ThroughFiles,
    read_spilled,
)

ROWS = [("a", 1), ("b", {"x": [1, 2]}), ("a", 3), ("c", "text"), ("a", 5), ("b", None)]


@pytest.mark.parametrize("file_bytes", [1, 1 << 20])  # a file per value, or one per bundle
def test_values_come_back_by_key_and_the_folder_goes(tmp_path, monkeypatch, file_bytes):
    monkeypatch.setattr(spill, "FILE_BYTES", file_bytes)
    folder = str(tmp_path / "spilled")
    with local_pipeline() as pipeline:
        where = pipeline | "Folder" >> beam.Create([folder])
        grouped = (
            pipeline
            | beam.Create(ROWS)
            | SpillToFiles(folder=where, name="rows")
            | beam.GroupByKey()
            | beam.MapTuple(lambda key, pieces: (key, sorted(map(repr, read_spilled(pieces)))))
        )
        _ = grouped | RemoveAfter(where)
        expected = {}
        for key, value in ROWS:
            expected.setdefault(key, []).append(repr(value))
        assert_that(grouped, equal_to([(k, sorted(v)) for k, v in expected.items()]))
    assert not os.path.exists(folder)


def test_through_files_merges_pcollections_and_removes_its_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(spill, "FILE_BYTES", 1)
    folder = str(tmp_path / "merged")
    with local_pipeline() as pipeline:
        where = pipeline | "Folder" >> beam.Create([folder])
        first = pipeline | "First" >> beam.Create(range(20))
        second = pipeline | "Second" >> beam.Create(["a", "b"])
        merged = (first, second) | ThroughFiles(folder=where, name="merged")
        assert_that(merged, equal_to([*range(20), "a", "b"]))
    assert not os.path.exists(folder)


def test_group_through_files_groups_several_pcollections_by_key_and_removes_its_folder(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(spill, "FILE_BYTES", 1)
    folder = str(tmp_path / "grouped")
    with local_pipeline() as pipeline:
        where = pipeline | "Folder" >> beam.Create([folder])
        first = pipeline | "First" >> beam.Create(ROWS[:4])
        second = pipeline | "Second" >> beam.Create([*ROWS[4:], ("d", 0)])
        grouped = (first, second) | GroupThroughFiles(folder=where, name="grouped")
        assert_that(
            grouped | beam.MapTuple(lambda key, values: (key, sorted(map(repr, values)))),
            equal_to(
                [("a", ["1", "3", "5"]), ("b", ["None", "{'x': [1, 2]}"]), ("c", ["'text'"]),
                 ("d", ["0"])]
            ),
        )  # fmt: skip
    assert not os.path.exists(folder)
