"""Whole-file reads and writes through Beam's filesystems (local paths, gs://, ...)."""

import io
import json
import os
import re
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

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


def write_file(path: str, data: bytes) -> None:
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


def read_parquet_files(pattern: str, columns: list[str] | None = None) -> Iterator[pa.Table]:
    """Every Parquet file matching ``pattern``, in name order, one table at a time."""
    for _, table in read_named_parquet_files(pattern, columns):
        yield table


def read_named_parquet_files(
    pattern: str, columns: list[str] | None = None
) -> Iterator[tuple[str, pa.Table]]:
    """(path, table) of every Parquet file matching ``pattern``: for errors naming the file."""
    for path in list_files(pattern):
        yield path, pq.read_table(io.BytesIO(read_file(path)), columns=columns)


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


def check_writable(directory: str) -> None:
    """Fails in a second, before hours of work, when the output cannot be written."""
    if os.path.isfile(directory):
        raise InputError(f"{directory}: is a file; give a directory to write into")
    probe = FileSystems.join(directory, f".write-check-{uuid.uuid4().hex}")
    bucket = bucket_of(probe)
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
