"""Whole-file reads and writes through Beam's filesystems (local paths, gs://, ...)."""

import contextlib
import io
import json
import os
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from schemas.layout import SHARD_NAME, shard_file
from transforms.errors import InputError

GCS_PATH = re.compile(r"gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/.*)?")
STORAGE_REASONS = {
    401: "not authenticated: set up Application Default Credentials",
    403: "permission denied for the credentials in use",
    404: "the bucket does not exist",
}


def read_file(path: str) -> bytes:
    with FileSystems.open(path, compression_type="uncompressed") as handle:
        return handle.read()


# What JSON calls the Python types json.loads returns, for the errors below.
JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number"}


def parse_json(path: str, data: bytes | str, kind: type = dict, what: str = "it") -> Any:
    """The JSON document of ``path``, whose top level must be a ``kind`` (``what``: what the
    file is, for the error), or a one-line InputError naming the file: not UTF-8, malformed,
    nested too deeply for Python to read, or another type at the top.

    >>> parse_json("a.json", b'[1]', dict, "a COCO captions file")
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: a.json: a JSON array; a COCO captions file is a JSON object
    """
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
        document = json.loads(text)
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 (byte {error.start}); JSON files are UTF-8") from error
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}: malformed JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from error
    except RecursionError as error:
        raise InputError(f"{path}: JSON nested too deeply to read ({error})") from error
    if not isinstance(document, kind):
        found = JSON_TYPES.get(type(document), "true, false or null")
        raise InputError(f"{path}: a JSON {found}; {what} is a JSON {JSON_TYPES[kind]}")
    return document


def read_json(path: str, kind: type = dict, what: str = "it") -> Any:
    """``parse_json`` of the file at ``path``: every JSON file is read through here."""
    return parse_json(path, read_file(path), kind, what)


def unfenced() -> None:
    """The fence of writes no version claim guards (tests, scratch runs): every writer
    into a version takes a fence, which stops a run whose claim was taken over
    (pipelines/store/claims.py: Fence)."""


def write_file(path: str, data: bytes | memoryview) -> None:
    with FileSystems.create(path) as handle:
        handle.write(data)


def list_files(pattern: str) -> list[str]:
    """The files matching a glob, sorted; none is not an error here."""
    return sorted(metadata.path for metadata in FileSystems.match([pattern])[0].metadata_list)


def delete_folder(directory: str) -> None:
    """Deletes a folder of files (a prefix on GCS, which has no folders); none is no error."""
    files = list_files(FileSystems.join(directory, "*"))
    if files:
        FileSystems.delete(files)
    if FileSystems.exists(directory):
        FileSystems.delete([directory])


def remove_empty_folder(directory: str) -> None:
    """Removes a local folder that holds nothing; on GCS a prefix without objects is no
    folder, so there is nothing to remove."""
    if not bucket_of(directory):
        with contextlib.suppress(OSError):  # not empty (e.g. another run's claim), or gone
            os.rmdir(directory)


def remove_empty_subfolders(directory: str) -> None:
    """Removes the local folders under ``directory`` that hold nothing, deepest first: what
    deleting their files leaves (on GCS, deleting the objects is all there is)."""
    if not bucket_of(directory):
        for folder, _, _ in os.walk(directory, topdown=False):
            if folder != directory:
                with contextlib.suppress(OSError):  # not empty
                    os.rmdir(folder)


def read_parquet_files(pattern: str, columns: list[str] | None = None) -> Iterator[pa.Table]:
    """Every Parquet file matching ``pattern``, in name order, one table at a time."""
    for _, table in read_named_parquet_files(pattern, columns):
        yield table


def read_named_parquet_files(
    pattern: str, columns: list[str] | None = None
) -> Iterator[tuple[str, pa.Table]]:
    """(path, table) of every Parquet file matching ``pattern``: for errors naming the file."""
    for path in list_files(pattern):
        yield path, read_parquet(path, columns)


def read_parquet(path: str, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file, local or gs://, read whole."""
    return pq.read_table(io.BytesIO(read_file(path)), columns=columns)


def shard_files(folder: str, name: str, suffix: str) -> list[str]:
    """Every ``<name>-SSSSS-of-NNNNN<suffix>`` file in ``folder``, whole set or not."""
    return list_files(FileSystems.join(folder, f"{name}-*-of-*{suffix}"))


def complete_shards(folder: str, name: str, suffix: str) -> list[str]:
    """The shard files ``<name>-SSSSS-of-NNNNN<suffix>`` in ``folder``, in order, when they
    are one whole set: a run that stopped part way, or a stale shard of an earlier run
    beside them, is an InputError naming the folder, not a silently partial read."""
    paths = shard_files(folder, name, suffix)
    if not paths:
        raise InputError(f"{folder}: holds no {shard_file(name, 0, 1, suffix)} or other shard")
    num_shards = int(SHARD_NAME.fullmatch(paths[0])["of"])
    expected = [
        FileSystems.join(folder, shard_file(name, shard, num_shards, suffix))
        for shard in range(num_shards)
    ]
    if paths != expected:
        missing = sorted(set(expected) - set(paths)) or ["none"]
        extra = sorted(set(paths) - set(expected)) or ["none"]
        raise InputError(
            f"{folder}: not one whole set of {name} shards (missing {os.path.basename(missing[0])}"
            f", extra {os.path.basename(extra[0])}); write them again"
        )
    return paths


def read_parquet_shards(folder: str, name: str) -> pa.Table:
    """One table of every row of a whole set of Parquet shards, in shard order."""
    return pa.concat_tables(
        read_parquet(path) for path in complete_shards(folder, name, ".parquet")
    )


def remove_shards(folder: str, name: str, suffix: str) -> None:
    """Deletes an earlier run's ``name`` shards in ``folder`` and nothing else (a folder
    given by mistake keeps every other file), or the one file an earlier release wrote at
    ``folder``'s path."""
    if os.path.isfile(folder):
        os.remove(folder)
    stale = shard_files(folder, name, suffix)
    if stale:
        FileSystems.delete(stale)


def check_location(path: str, flag: str) -> None:
    """An empty or malformed gs:// path is caught here, not as a listing error deep in Beam."""
    if not path.strip():
        raise InputError(f"--{flag} is empty: give a directory (a local path or gs://BUCKET/PATH)")
    if path.startswith("gs:/") and not GCS_PATH.fullmatch(path):
        raise InputError(f"--{flag} {path}: GCS paths look like gs://BUCKET/PATH")


def bucket_of(path: str) -> str | None:
    return path[len("gs://") :].split("/")[0] if path.startswith("gs://") else None


def storage_client():
    """The client Beam's GCS filesystem uses, with the same credentials."""
    from apache_beam.io.gcp.gcsio import create_storage_client  # Beam's gcp extra

    return create_storage_client(PipelineOptions())


def bucket_exists(bucket: str) -> bool:
    """Beam lists a missing bucket as empty, so GCS itself is asked."""
    return storage_client().lookup_bucket(bucket) is not None


def storage_problem(error: BaseException) -> str:
    """Why a filesystem call failed, in words; GCS's HTTP status says most of it."""
    while isinstance(error, BeamIOError) and error.exception_details:
        error = next(iter(error.exception_details.values()))
    status = getattr(error, "code", None)
    if not isinstance(status, int):
        status = getattr(getattr(error, "response", None), "status_code", None)
    return STORAGE_REASONS.get(status, f"{type(error).__name__}: {error}")


def check_file_path(path: str, flag: str) -> None:
    """``flag``'s value names a file to write, not a folder: refused before any work."""
    if not path:
        raise InputError(f"{flag} is empty: give the path of the file to write")
    if path.endswith("/") or os.path.isdir(path):
        raise InputError(f"{flag} {path}: is a directory; give the path of the file to write in it")


def nearest_existing(path: str) -> str:
    """``path`` itself, or the deepest of its parent folders that exists."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def check_writable(directory: str) -> None:
    """Fails in a second, before hours of work, when the output cannot be written, and
    creates nothing: a refused run leaves no empty ``--output`` behind. A local folder that
    does not exist yet is checked on the deepest parent that does."""
    if os.path.isfile(directory):
        raise InputError(f"{directory}: is a file; give a directory to write into")
    probe = FileSystems.join(directory, f".write-check-{uuid.uuid4().hex}")
    bucket = bucket_of(probe)
    if not bucket and not os.path.isdir(directory):
        existing = nearest_existing(directory)
        if not os.path.isdir(existing):
            raise InputError(f"{directory}: {existing} is a file; give a directory to write into")
        if not os.access(existing, os.W_OK | os.X_OK):  # read-only filesystems included
            raise InputError(f"{directory}: cannot write there: {existing} is not writable")
        return
    try:
        if bucket:  # a failed GCS file handle retries its upload when garbage-collected
            blob = storage_client().bucket(bucket).blob(probe[len(f"gs://{bucket}/") :])
            blob.upload_from_string(b"")
            blob.delete()
        else:
            write_file(probe, b"")
            FileSystems.delete([probe])
    except Exception as error:  # each filesystem raises its own type
        raise InputError(f"{directory}: cannot write there: {storage_problem(error)}") from error


def write_json(path: str, value: dict) -> str:
    write_file(path, json.dumps(value, indent=2, sort_keys=True).encode("utf-8"))
    return path
