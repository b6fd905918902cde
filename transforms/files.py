"""Whole-file reads and writes through Beam's filesystems (local paths, gs://, ...)."""

from apache_beam.io.filesystems import FileSystems


def read_file(path: str) -> bytes:
    with FileSystems.open(path, compression_type="uncompressed") as handle:
        return handle.read()


def write_file(path: str, data: bytes) -> None:
    with FileSystems.create(path) as handle:
        handle.write(data)


def list_files(pattern: str) -> list[str]:
    """The files matching a glob, sorted; none is not an error here."""
    return sorted(metadata.path for metadata in FileSystems.match([pattern])[0].metadata_list)
