"""Versioned, atomic outputs: ``OUTPUT/versions/<version>/``, a marker, a ``latest`` pointer.

A run writes into ``OUTPUT/versions/<version>/``, where the version is a digest of what
decides the dataset's content: the input files' checksums, the options that
change records and the package version (prefixed by ``--label``). Every
shard, then the manifest, then the completion marker are written, in that
order, and the version becomes the latest only after that: ``OUTPUT/latest.txt``
holds its name (on every filesystem), ``OUTPUT/latest`` is a symlink to its dataset
folder on a local disk (so ``OUTPUT/latest/parquet/dev`` is a path, and no glob under
it reaches a build artifact: :mod:`schemas.layout`), and ``OUTPUT/README.md``
is a dataset card whose data files are the latest version's, so HuggingFace
``datasets.load_dataset(OUTPUT)`` reads that version and never mixes versions.
Readers accept a version only with its marker, so a run that fails half way
never looks finished, and only when its files are exactly those its manifest
lists (size, sha256): a deleted, truncated, altered or added file is refused,
named. The marker is written only after the files were counted against what
their producer wrote (:mod:`pipelines.store.lifecycle` writes every version).
Re-running with the same inputs and options finds the completed version and
does nothing; ``--force`` writes ``<version>.2`` (then ``.3``, ...) and never
touches a completed version.
"""

import contextlib
import dataclasses
import glob
import hashlib
import importlib.metadata
import io
import json
import logging
import os
import struct
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from pipelines.store.claims import Fence, lease_seconds
from schemas.layout import (
    BUILD,
    CARD_FILE,
    COMPLETE_FILE,
    DATASET,
    EVALUATION_DIRECTORY,
    LATEST_FILE,
    LATEST_LINK,
    LOCK_FILE,
    MANIFEST_FILE,
    MCIC,
    PARQUET,
    RATINGS_DIRECTORY,
    SHARD_NAME,
    TFRECORD,
    VERSIONS_DIRECTORY,
)
from transforms.corpus.languages.registry import ENGLISH, LANGUAGES
from transforms.corpus.split import SPLITS
from transforms.errors import InputError
from transforms.files import (
    check_writable,
    list_files,
    read_file,
    read_json,
    remove_empty_subfolders,
    write_file,
)
from transforms.report.card import ROOT_CARD_MARKER

# Added to a completed version later, by other commands: not among the files it lists.
ADDED_LATER = (f"{EVALUATION_DIRECTORY}/", f"{RATINGS_DIRECTORY}/")
# Files of a version directory that are not part of the dataset the manifest lists.
NOT_LISTED = (COMPLETE_FILE, MANIFEST_FILE, LOCK_FILE)
# Options that say where and how fast, not what: they do not change a record.
# --pv_model, --objects, --images and --validity_model enter through their checksums, among
# the inputs', not their paths.
NO_CONTENT_OPTIONS = (
    "input",
    "image_list",
    "pv_model",
    "validity_model",
    "objects",
    "output",
    "label",
    "force",
    "search_threads",
    "shard_size",
    "batch_size",
    "audit_gate",
)
# Options added after versions were named: each enters the name's digest only when set away
# from its default, so a version named before it existed keeps its name. (A version's
# content follows the code too, which the package version names only at a release.)
NAMED_WHEN_SET = ("pv_train_sample", "input_format", "language")
# Options the manifest (so the card) records only when set away from their default, so a
# default run writes the manifest it wrote before they existed: English is not named, nor
# the default input format.
RECORDED_WHEN_SET = ("language", "input_format", "images")
# Folders inside a version, and OUTPUT/latest (a link to one's dataset folder): a reader given
# one of them reads the version, or the output, it lies in.
INNER_FOLDERS = (LATEST_LINK, DATASET, BUILD, PARQUET, TFRECORD, MCIC, *SPLITS)


@dataclass(frozen=True)
class Version:
    name: str
    directory: str
    complete: bool


def tfrecord_count(data: bytes) -> int:
    """Records in a TFRecord file: each is an 8-byte length, its CRC, the data, a CRC."""
    count, offset = 0, 0
    while offset < len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        offset += 8 + 4 + length + 4
        count += 1
    return count


def record_count(path: str, data: bytes) -> int | None:
    """Records in a dataset file, where that means something (shards, skipped records)."""
    if path.endswith(".parquet"):
        return pq.ParquetFile(io.BytesIO(data)).metadata.num_rows
    if path.endswith(".tfrecord"):
        return tfrecord_count(data)
    if path.endswith((".txt", ".jsonl")):
        return sum(1 for line in data.splitlines() if line.strip())
    return None


def version_paths(directory: str) -> list[str]:
    """Every file of a version, relative to it, the marker, manifest and claim left out."""
    prefix = directory.rstrip("/") + "/"
    relative = (path[len(prefix) :] for path in list_files(FileSystems.join(directory, "**")))
    return [
        path for path in relative if path not in NOT_LISTED and not path.startswith(ADDED_LATER)
    ]


def fingerprint(data: bytes) -> dict:
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def describe_file(directory: str, path: str) -> dict:
    """The manifest's entry of one file: path, bytes, sha256, records."""
    data = read_file(FileSystems.join(directory, path))
    return {"path": path, **fingerprint(data), "records": record_count(path, data)}


def inventory(directory: str, described: list[dict] = ()) -> list[dict]:
    """Every file's entry; the files in ``described`` (entries made earlier in this run, of
    files not written since) are not read again."""
    known = {entry["path"]: entry for entry in described}
    return [known.get(path) or describe_file(directory, path) for path in version_paths(directory)]


def count_problems(files: list[dict], records: dict[str, int]) -> list[str]:
    """Where the written shards disagree with the records their producer says it wrote.

    Every shard of every format must be there, and each format's shards named
    ``<name>-*`` must hold ``records[name]`` records.
    """
    found: dict[tuple[str, str, str], int] = defaultdict(int)
    shards: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    expected: dict[tuple[str, str, str], int] = {}
    for entry in files:
        match = SHARD_NAME.fullmatch(entry["path"])
        if match is None:
            continue
        key = (match["dir"], match["prefix"], match["suffix"])
        found[key] += entry["records"] or 0
        shards[key].add(int(match["shard"]))
        expected[key] = int(match["of"])
    problems = []
    for (directory, name, suffix), count in sorted(found.items()):
        pattern = f"{directory}/{name}-*{suffix}"
        missing = set(range(expected[directory, name, suffix])) - shards[directory, name, suffix]
        if missing:
            problems.append(f"{pattern}: shards {sorted(missing)} missing")
        if count != (written := records.get(name, 0)):
            problems.append(f"{pattern}: {count} records, {written} were written")
    return problems


def checked_inventory(
    directory: str, records: dict[str, int], described: list[dict] = ()
) -> list[dict]:
    """The version's files for its manifest, after checking them against ``records``: the
    records written per shard name. Files in ``described`` are not read again."""
    files = inventory(directory, described)
    problems = count_problems(files, records)
    if problems:
        raise RuntimeError(
            f"{directory}: the files do not hold what was written ("
            + "; ".join(problems)
            + "): not marking the version complete"
        )
    return files


def verify_version(directory: str) -> dict:
    """The version's manifest, once every file it lists is there, unaltered, and no other.

    Every reader of a version calls this; a problem is an InputError naming the file.
    """
    if not FileSystems.exists(FileSystems.join(directory, MANIFEST_FILE)):
        raise InputError(f"{directory}: no {MANIFEST_FILE}: not a version written by generate")
    manifest = read_manifest(directory)
    if "files" not in manifest:
        raise InputError(
            f"{directory}: its {MANIFEST_FILE} lists no files (written by an older release), "
            "so it cannot be verified; generate the version again (--force)"
        )
    listed = {entry["path"]: entry for entry in manifest["files"]}
    present = set(version_paths(directory))
    for path in sorted(listed.keys() - present):
        raise InputError(
            f"{FileSystems.join(directory, path)}: missing (the version's {MANIFEST_FILE} lists "
            "it); the version is damaged: generate it again (--force)"
        )
    for path in sorted(present - listed.keys()):
        raise InputError(
            f"{FileSystems.join(directory, path)}: not part of the version (its "
            f"{MANIFEST_FILE} does not list it); remove it"
        )
    for path, entry in sorted(listed.items()):
        # Bytes and checksum only: a damaged shard may not even parse.
        found = fingerprint(read_file(FileSystems.join(directory, path)))
        if (found["bytes"], found["sha256"]) != (entry["bytes"], entry["sha256"]):
            raise InputError(
                f"{FileSystems.join(directory, path)}: altered since the version was written "
                f"({found['bytes']} bytes, sha256 {found['sha256'][:12]}; the manifest says "
                f"{entry['bytes']} bytes, sha256 {entry['sha256'][:12]}); the version is "
                "damaged: generate it again (--force)"
            )
    return manifest


def content_options(options: dict) -> dict:
    """The options (name -> value) that decide what the dataset holds."""
    return {name: value for name, value in options.items() if name not in NO_CONTENT_OPTIONS}


def version_name(options, checksums: list[dict]) -> str:
    """``[<label>-][<language>-<tokeniser>-]<12 hex digits>`` from the content options, input
    checksums and package; English (the default) is not named: ``coco2014-<digest>``, but
    ``multi30k-de-unicode-words-<digest>``."""
    defaults = {option.name: option.default for option in dataclasses.fields(options)}
    named = {
        name: value
        for name, value in content_options(dataclasses.asdict(options)).items()
        if not (name in NAMED_WHEN_SET and value == defaults[name])
    }
    content = {
        "options": named,
        "inputs": sorted(checksum["sha256"] for checksum in checksums),
        "package": importlib.metadata.version("dmc-datasets"),
    }
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()[:12]
    language = LANGUAGES[options.language]  # resolved: never "auto"
    named = "" if language is ENGLISH else f"{language.code}-{language.tokeniser}"
    return "-".join(part for part in (options.label, named, digest) if part)


def is_complete(directory: str) -> bool:
    return FileSystems.exists(FileSystems.join(directory, COMPLETE_FILE))


def check_output(output: str) -> None:
    """Fails before any work when the versions cannot be written: OUTPUT, and
    OUTPUT/versions where it exists already (a version is written into it), and the claims'
    lease the environment may set."""
    lease_seconds()
    check_writable(output)
    versions = FileSystems.join(output, VERSIONS_DIRECTORY)
    if FileSystems.exists(versions):
        check_writable(versions)


def plan_version(output: str, name: str, *, force: bool) -> Version:
    """The newest completed version of ``name`` to reuse or, with ``force`` or none completed,
    the first name not completed yet.

    ``--force`` writes ``name.2``, ``name.3``, ... beside a completed ``name`` (e.g. to
    repair a damaged one), so the newest completed of them is the one to reuse: the plain
    command after a repair is up to date on it, and ``--force`` is never needed twice.
    """
    attempt, completed = 1, None
    while True:
        candidate = name if attempt == 1 else f"{name}.{attempt}"
        directory = FileSystems.join(output, VERSIONS_DIRECTORY, candidate)
        if not is_complete(directory):
            break
        completed = Version(candidate, directory, True)
        attempt += 1
    if completed is not None and not force:
        return completed
    return Version(candidate, directory, False)


def clear_incomplete(
    version: Version, fence: Fence, left_by: str = "a failed run", level: int = logging.WARNING
) -> None:
    """Removes what ``left_by`` left in this version, so its shards cannot mix with ours,
    and says so at ``level`` (a run clearing up after its own refusal is no news: its error
    is the one line a user needs).

    Call only while holding the version's claim (:mod:`pipelines.store.claims`), which
    ``fence`` checks first: the files are then a dead run's, never those of a run
    still writing.
    """
    fence()
    claim = FileSystems.join(version.directory, LOCK_FILE)
    left = [path for path in list_files(FileSystems.join(version.directory, "**")) if path != claim]
    if left:
        logging.log(
            level,
            "removing %d files of incomplete version %s left by %s",
            len(left),
            version.directory,
            left_by,
        )
        FileSystems.delete(left)
    remove_empty_subfolders(version.directory)


def write_atomically(path: str, data: bytes) -> None:
    """Readers see the old file or the new one: rename is atomic locally, an upload on GCS."""
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    write_file(temporary, data)
    FileSystems.rename([temporary], [path])


def publish(
    output: str, version: Version, summary: dict, fence: Fence, *, card: str | None
) -> Version:
    """Marks the version complete, then points ``latest`` at it with ``card`` as the root's
    card (None: ``latest`` is left alone): call after everything else. ``fence`` is checked
    before each step: a run whose claim was taken over stops."""
    fence()
    marker = {
        "version": version.name,
        "completed": datetime.now(timezone.utc).isoformat(),
        **summary,
    }
    write_atomically(
        FileSystems.join(version.directory, COMPLETE_FILE),
        json.dumps(marker, indent=2, sort_keys=True).encode("utf-8"),
    )
    if card is not None:
        fence()
        point_latest(output, version, card)
    return dataclasses.replace(version, complete=True)


def point_latest(output: str, version: Version, card: str) -> None:
    """Makes ``version`` the latest: the pointer file, the local symlink, the root's ``card``
    (``pipelines.store.lifecycle.latest_card``: it needs the plots and the trainer, which readers
    of a version do not load)."""
    write_atomically(FileSystems.join(output, LATEST_FILE), f"{version.name}\n".encode())
    if FileSystems.get_scheme(output) is None:  # a local disk: symlinks exist there
        link_latest(output, version.name)
    keep_foreign_card(output)
    write_atomically(FileSystems.join(output, CARD_FILE), card.encode("utf-8"))


def replaced_name(path: str) -> str:
    """Where something of a user's at ``path`` is moved aside to, never over another."""
    return f"{path}.replaced-{datetime.now(timezone.utc):%Y%m%dT%H%M%S%fZ}"


def keep_foreign_card(output: str) -> None:
    """A ``README.md`` at the root that is not our root card (no :data:`ROOT_CARD_MARKER`:
    the user's own, or a card from before the marker) is moved aside to
    ``README.md.replaced-<time>`` and said so in the log, as a directory at ``latest`` is."""
    card = FileSystems.join(output, CARD_FILE)
    if not FileSystems.exists(card):
        return
    if ROOT_CARD_MARKER in read_file(card).decode("utf-8", "replace"):
        return
    aside = replaced_name(card)
    FileSystems.rename([card], [aside])
    logging.warning("%s was not a card this tool wrote: moved to %s", card, aside)


def link_latest(output: str, name: str) -> None:
    """Points the ``OUTPUT/latest`` symlink at ``name``, whatever ``latest`` is now: a link
    (dangling or not) or a file is replaced atomically; a real directory (what ``cp -rL``
    or ``rsync`` without ``-l`` make of the link) is moved aside to
    ``latest.replaced-<time>``, since it may hold someone's files, and said so in the log.
    Temporary links a killed run left (``latest.tmp-*``, older than a minute) are removed.
    """
    link = os.path.join(output, LATEST_LINK)
    for left in glob.glob(f"{glob.escape(link)}.tmp-*"):
        if time.time() - os.lstat(left).st_mtime > 60:  # a live run's lasts microseconds
            with contextlib.suppress(FileNotFoundError):
                os.remove(left)
    if os.path.isdir(link) and not os.path.islink(link):
        aside = replaced_name(link)
        os.rename(link, aside)
        logging.warning(
            "%s was a directory, not the link to the latest version: moved to %s", link, aside
        )
    temporary = f"{link}.tmp-{uuid.uuid4().hex}"
    os.symlink(os.path.join(VERSIONS_DIRECTORY, name, DATASET), temporary)
    os.replace(temporary, link)


def latest_name(output: str) -> str | None:
    """The version ``OUTPUT/latest.txt`` names, None without one. A file that is not UTF-8
    (damaged, or not one of ours) is refused, named, instead of a traceback."""
    path = FileSystems.join(output, LATEST_FILE)
    if not FileSystems.exists(path):
        return None
    try:
        return read_file(path).decode("utf-8").strip()
    except UnicodeDecodeError as error:
        raise InputError(
            f"{path}: not UTF-8 (byte {error.start}), so it names no version; run generate "
            "again to rewrite it, or give OUTPUT/versions/<version>"
        ) from error


def latest_version(output: str) -> Version | None:
    """The version ``OUTPUT/latest.txt`` names, or None when no run has completed there."""
    name = latest_name(output)
    if name is None:
        return None
    directory = FileSystems.join(output, VERSIONS_DIRECTORY, name)
    return Version(name, directory, is_complete(directory))


def climbed(path: str) -> list[str]:
    """``path``, then each folder it lies in for as long as the last one is a folder inside
    a version or output (a split, a format, ``dataset``, ``latest``).

    >>> climbed("out/latest/parquet/dev")
    ['out/latest/parquet/dev', 'out/latest/parquet', 'out/latest', 'out']
    >>> climbed("gs://b/out/versions/v1/dataset/")
    ['gs://b/out/versions/v1/dataset', 'gs://b/out/versions/v1']
    """
    paths = [path.rstrip("/")]
    while True:
        parent, _, name = paths[-1].rpartition("/")
        if name not in INNER_FOLDERS or not parent or parent.endswith(":/"):
            return paths
        paths.append(parent)


def enclosing(path: str) -> str:
    """``path``, or the version or output it lies in when it is a folder inside one: the
    first of :func:`climbed` that is a complete version or has a ``latest``, else the last."""
    paths = climbed(path)
    for candidate in paths:
        if is_complete(candidate) or FileSystems.exists(FileSystems.join(candidate, LATEST_FILE)):
            return candidate
    return paths[-1]


def completed_dataset(path: str) -> str:
    """The version to read: ``path`` itself if completed, else what its ``latest`` names;
    a folder inside either (``OUTPUT/latest``, ``<version>/dataset/parquet``) reads that.

    Refuses anything without a completion marker (such a version is being
    written or its run failed, and its files may be partial) and a version
    whose files differ from its manifest's list (:func:`verify_version`).
    """
    path = enclosing(path)
    if is_complete(path):
        verify_version(path)
        return path
    latest = latest_version(path)
    if latest is not None:
        if latest.complete:
            verify_version(latest.directory)
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
    return read_json(FileSystems.join(directory, MANIFEST_FILE))
