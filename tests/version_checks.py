"""What the version tests share: a run made to fail part way, and a version's files by content."""

import hashlib
import pathlib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import transforms.dataset.write
from pipelines.versions import COMPLETE_FILE

# Written by every run, with times in them; the dataset is the rest.
RUN_RECORDS = {"manifest.json", COMPLETE_FILE, "pv/doc2vec.model"}


def version_files(directory: str) -> dict[str, str]:
    """Relative path -> sha256 of every file under a version, run records left out."""
    files = {}
    for path in pathlib.Path(directory).rglob("*"):
        name = path.relative_to(directory).as_posix()
        if path.is_file() and name not in RUN_RECORDS:
            files[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


@contextmanager
def failure_after_a_train_shard() -> Iterator[None]:
    """Runs inside fail late: once a train shard's files are written (in-process runner)."""
    write_shard = transforms.dataset.write.write_shard

    def fail_after_writing(shard_and_records, **kwargs):
        paths = write_shard(shard_and_records, **kwargs)
        if kwargs["directory"].endswith("train"):
            raise RuntimeError("injected failure after writing a train shard")
        return paths

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(transforms.dataset.write, "write_shard", fail_after_writing)
        yield
