"""The run manifest: what was run on what (pipelines.store.lifecycle completes and writes it)."""

import dataclasses
import hashlib
import importlib.metadata
import platform
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

from apache_beam.io.filesystems import FileSystems

from pipelines.store.versions import RECORDED_WHEN_SET
from schemas.records import RawCaption
from transforms.corpus.languages.base import Language
from transforms.corpus.languages.detect import SAMPLE_PER_FILE
from transforms.corpus.languages.registry import ENGLISH
from transforms.corpus.read import GZIP_MAGIC, caption_sample
from transforms.corpus.synthetic import HEAD_BYTES, is_synthetic
from transforms.errors import InputError
from transforms.files import read_file

GZIP_WINDOW = 16 + zlib.MAX_WBITS  # zlib's window bits for a gzip header and trailer
PACKAGES = ("dmc-datasets", "apache-beam", "gensim", "faiss-cpu", "numpy", "pyarrow", "numba")


def file_checksum(path: str) -> dict:
    digest = hashlib.sha256()
    size = 0
    with FileSystems.open(path, compression_type="uncompressed") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return {"path": path, "sha256": digest.hexdigest(), "bytes": size}


def recorded_options(options) -> dict:
    """Every option, but those of ``RECORDED_WHEN_SET`` only when set."""
    defaults = {flag.name: flag.default for flag in dataclasses.fields(options)}
    return {
        name: value
        for name, value in dataclasses.asdict(options).items()
        if not (name in RECORDED_WHEN_SET and value == defaults[name])
    }


def language_record(language: Language) -> dict:
    """What tokenised a version's captions: the language, its tokeniser and the versions of
    the packages it uses (their dictionaries decide the words)."""
    return {
        "code": language.code,
        "name": language.name,
        "tokeniser": language.tokeniser,
        "packages": {package: _version(package) for package in language.packages},
    }


def corpus_checksum(path: str, data: bytes) -> dict:
    """An input corpus's entry from its contents as read (``data``, compressed if the file
    is): its checksum, and whether it is the project's synthetic corpus (whose captions
    are the project's own: the card's licence and citations follow it)."""
    head = data[:HEAD_BYTES]
    if data.startswith(GZIP_MAGIC):  # told from its first bytes, as the readers tell it
        head = zlib.decompressobj(GZIP_WINDOW).decompress(data, HEAD_BYTES)
    checksum = {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    return {**checksum, "synthetic": is_synthetic(head)}


def read_inputs(inputs: list[str], image_list: str = "") -> tuple[list[dict], list[RawCaption]]:
    """Each input file read once, one at a time, before the run: its checksum (what the
    version is named after) and its first captions (what ``--language`` is checked or
    detected from)."""
    if image_list and not FileSystems.exists(image_list):
        raise InputError(f"--image_list {image_list}: no such file")
    checksums = []

    def read() -> Iterator[tuple[str, bytes]]:  # caption_sample takes them one at a time
        for path in inputs:
            data = read_file(path)
            checksums.append(corpus_checksum(path, data))
            yield path, data

    sample = caption_sample(read(), SAMPLE_PER_FILE, image_list)
    return checksums, sample


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
    """What was run on what; pipelines.store.lifecycle adds the version, time, statistics, metrics
    and files. ``search``: where the search report is and what it chose (``--optimize``), or
    None."""
    language = options.caption_language()
    return {
        "options": recorded_options(options),
        **({} if language is ENGLISH else {"language": language_record(language)}),
        "beam_args": beam_args,
        "inputs": checksums,
        "code": {
            "git_commit": _git_commit(),
            "versions": {package: _version(package) for package in PACKAGES},
            "python": platform.python_version(),
        },
        "search": search,
    }
