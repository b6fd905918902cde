"""Versioned, atomic outputs: ``OUTPUT/<version>/``, a completion marker, a ``latest`` pointer.

A run writes into ``OUTPUT/<version>/``, where the version is a digest of what
decides the dataset's content: the input files' checksums, the options that
change records and the package version (prefixed by ``--label``). Every
shard, then the manifest, then the completion marker are written, in that
order, and ``OUTPUT/latest`` is pointed at the version only after that.
Readers accept a version only with its marker, so a run that fails half way
never looks finished. Re-running with the same inputs and options finds the
completed version and does nothing; ``--force`` writes ``<version>.2`` (then
``.3``, ...) and never touches a completed version.
"""

import dataclasses
import hashlib
import importlib.metadata
import json
import logging
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from apache_beam.io.filesystems import FileSystems

from transforms.errors import InputError
from transforms.files import list_files, read_file, write_file

COMPLETE_FILE = "_COMPLETE"
LATEST_FILE = "latest"
MANIFEST_FILE = "manifest.json"
# Options that say where and how fast, not what: they do not change a record.
NO_CONTENT_OPTIONS = (
    "input",
    "output",
    "label",
    "force",
    "search_threads",
    "shard_size",
    "batch_size",
)
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class Version:
    name: str
    directory: str
    complete: bool


def content_options(options: dict) -> dict:
    """The options (name -> value) that decide what the dataset holds."""
    return {name: value for name, value in options.items() if name not in NO_CONTENT_OPTIONS}


def version_name(options, checksums: list[dict]) -> str:
    """``[<label>-]<12 hex digits>`` from the content options, input checksums and package."""
    content = {
        "options": content_options(dataclasses.asdict(options)),
        "inputs": sorted(checksum["sha256"] for checksum in checksums),
        "package": importlib.metadata.version("dmc-datasets"),
    }
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()[:12]
    return f"{options.label}-{digest}" if options.label else digest


def is_complete(directory: str) -> bool:
    return FileSystems.exists(FileSystems.join(directory, COMPLETE_FILE))


def plan_version(output: str, name: str, *, force: bool) -> Version:
    """The completed version to reuse or, with ``force``, the first name not completed yet."""
    attempt = 1
    while True:
        candidate = name if attempt == 1 else f"{name}.{attempt}"
        directory = FileSystems.join(output, candidate)
        complete = is_complete(directory)
        if not (complete and force):
            return Version(candidate, directory, complete)
        attempt += 1


def clear_incomplete(version: Version) -> None:
    """Removes what a failed run left in this version, so its shards cannot mix with ours."""
    left = list_files(FileSystems.join(version.directory, "**"))
    if left:
        logging.warning(
            "removing %d files of incomplete version %s left by a failed run",
            len(left),
            version.directory,
        )
        FileSystems.delete(left)


def write_atomically(path: str, data: bytes) -> None:
    """Readers see the old file or the new one: rename is atomic locally, an upload on GCS."""
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    write_file(temporary, data)
    FileSystems.rename([temporary], [path])


def publish(output: str, version: Version, summary: dict) -> Version:
    """Marks the version complete, then points ``latest`` at it: call after everything else."""
    marker = {
        "version": version.name,
        "completed": datetime.now(timezone.utc).isoformat(),
        **summary,
    }
    write_atomically(
        FileSystems.join(version.directory, COMPLETE_FILE),
        json.dumps(marker, indent=2, sort_keys=True).encode("utf-8"),
    )
    point_latest(output, version)
    return dataclasses.replace(version, complete=True)


def point_latest(output: str, version: Version) -> None:
    write_atomically(FileSystems.join(output, LATEST_FILE), f"{version.name}\n".encode())


def latest_version(output: str) -> Version | None:
    """The version ``OUTPUT/latest`` names, or None when no run has completed there."""
    latest = FileSystems.join(output, LATEST_FILE)
    if not FileSystems.exists(latest):
        return None
    name = read_file(latest).decode("utf-8").strip()
    directory = FileSystems.join(output, name)
    return Version(name, directory, is_complete(directory))


def completed_dataset(path: str) -> str:
    """The dataset directory to read: ``path`` itself if completed, else what its ``latest`` names.

    Refuses anything without a completion marker: such a version is being
    written or its run failed, and its files may be partial.
    """
    if is_complete(path):
        return path
    latest = latest_version(path)
    if latest is not None:
        if latest.complete:
            return latest.directory
        raise InputError(
            f"{FileSystems.join(path, LATEST_FILE)} names {latest.directory}, which has no "
            f"{COMPLETE_FILE} marker: the dataset is incomplete"
        )
    if list_files(FileSystems.join(path, "**")):
        raise InputError(
            f"{path} has no {COMPLETE_FILE} marker: the run that wrote it failed or is still "
            f"running, so its files may be partial; read a completed version or its {LATEST_FILE}"
        )
    raise InputError(f"{path}: no dataset there (no {COMPLETE_FILE} marker, no {LATEST_FILE} file)")


def read_manifest(directory: str) -> dict:
    return json.loads(read_file(FileSystems.join(directory, MANIFEST_FILE)))
