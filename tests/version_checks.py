"""What the version tests share: a run made to fail part way, and a version's files by content."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import transforms.dataset.write
from pipelines.versions import COMPLETE_FILE, read_manifest, verify_version

# Written by every run, with times in them; the dataset is the rest.
RUN_RECORDS = {"manifest.json", COMPLETE_FILE, "build/pv/doc2vec.model"}


def version_files(directory: str) -> dict[str, str]:
    """Relative path -> sha256 of every file under a version, run records left out.

    Checks the version against its manifest first (pipelines.versions.verify_version).
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
