"""The run manifest: what was run on what (pipelines.lifecycle completes and writes it)."""

import dataclasses
import hashlib
import importlib.metadata
import platform
import subprocess
from pathlib import Path

from apache_beam.io.filesystems import FileSystems

from transforms.corpus.synthetic import HEAD_BYTES, is_synthetic

PACKAGES = ("dmc-datasets", "apache-beam", "gensim", "faiss-cpu", "numpy", "pyarrow", "numba")


def file_checksum(path: str) -> dict:
    digest = hashlib.sha256()
    size = 0
    with FileSystems.open(path, compression_type="uncompressed") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"path": path, "sha256": digest.hexdigest(), "bytes": size}


def corpus_checksum(path: str) -> dict:
    """An input corpus's entry: its checksum, and whether it is the project's synthetic corpus
    (whose captions are the project's own: the card's licence and citations follow it)."""
    with FileSystems.open(path) as handle:  # a .gz input is read decompressed
        head = handle.read(HEAD_BYTES)
    return {**file_checksum(path), "synthetic": is_synthetic(head)}


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git_commit() -> str | None:
    source = Path(__file__).resolve().parent.parent
    try:
        result = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip()


def build_manifest(
    options, checksums: list[dict], beam_args: list[str], search: dict | None
) -> dict:
    """What was run on what; pipelines.lifecycle adds the version, time, statistics, metrics
    and files. ``search``: where the search report is and what it chose (``--optimize``), or
    None."""
    return {
        "options": dataclasses.asdict(options),
        "beam_args": beam_args,
        "inputs": checksums,
        "code": {
            "git_commit": _git_commit(),
            "versions": {package: _version(package) for package in PACKAGES},
            "python": platform.python_version(),
        },
        "search": search,
    }
