"""What the version tests share: a run made to fail part way, and a version's files by content."""

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import transforms.dataset.write
from pipelines.store.versions import read_manifest, verify_version
from schemas.layout import COMPLETE_FILE

# Written by every run, with times in them; the dataset is the rest.
RUN_RECORDS = {"manifest.json", COMPLETE_FILE, "build/pv/doc2vec.model"}
# The dataset's files that name their version (the card, Croissant's and TFDS's metadata):
# a forced copy (<version>.2) differs from its original there, by the name alone.
NAME_THEIR_VERSION = (
    "dataset/README.md",
    "dataset/metadata.json",
    "dataset/tfrecord/dataset_info.json",
)


def version_files(directory: str) -> dict[str, str]:
    """Relative path -> sha256 of every file under a version, run records left out.

    Checks the version against its manifest first (pipelines.store.versions.verify_version).
    """
    verify_version(directory)
    return {
        entry["path"]: entry["sha256"]
        for entry in read_manifest(directory)["files"]
        if entry["path"] not in RUN_RECORDS
    }


@contextmanager
def failure_after_a_train_shard() -> Iterator[None]:
    """Runs inside fail late: once a train shard's files are written (in-process runner)."""
    write_shard = transforms.dataset.write.write_shard

    def fail_after_writing(shard_and_records, **kwargs):
        paths = write_shard(shard_and_records, **kwargs)
        if kwargs["name"] == "train":
            raise RuntimeError("injected failure after writing a train shard")
        return paths

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(transforms.dataset.write, "write_shard", fail_after_writing)
        yield


def same_but_the_name(first: str, second: str) -> None:
    """Two versions of the same content: every file byte-identical, except that the files
    naming their version name their own."""
    files = version_files(first)
    assert {
        path: digest
        for path, digest in version_files(second).items()
        if path not in NAME_THEIR_VERSION
    } == {path: digest for path, digest in files.items() if path not in NAME_THEIR_VERSION}
    first_name, second_name = os.path.basename(first), os.path.basename(second)
    for path in NAME_THEIR_VERSION:
        assert path in files, path
        with (
            open(os.path.join(first, path), "rb") as a,
            open(os.path.join(second, path), "rb") as b,
        ):
            named = b.read()
            assert second_name.encode() in named, path
            assert named.replace(second_name.encode(), first_name.encode()) == a.read(), path
