"""Publishes a completed version's dataset folder to a Hugging Face Hub dataset repo.

::

    python -m pipelines.publish --dataset out/mcic-coco --repo_id USER/NAME \\
        [--private] [--revision BRANCH] [--dry_run] [--timeout SECONDS] [--allow_held_back]

Verifies the version (its marker, then every file against its manifest:
:func:`pipelines.store.versions.completed_dataset`) and refuses one its audit gate held
back unless ``--allow_held_back``, then commits the files the manifest
lists under ``dataset/`` (:mod:`schemas.layout`), at their paths inside it, in
one commit through ``huggingface_hub``: the card ``dataset/README.md`` becomes
the repo's dataset card. Nothing of ``build/``, nor the manifest, marker or claim,
is sent. The same commit deletes the repo's files that are not the version's
(``.gitattributes`` aside), so a split's glob on the Hub never mixes two
versions' shards. Each file's sha256 is computed again as it is read for the
upload and must be the manifest's; a version in an object store (gs://) is first
copied to a temporary local folder. The token is huggingface_hub's own
(``HF_TOKEN``, or ``hf auth login``): no flag takes a secret. Every request has a
``--timeout``; a hub that cannot be reached, never answers, drops the connection, refuses
the token or fails (5xx) is one line each, exit code 2.
"""

import importlib
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import TypeVar

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipelines.cli.commands import PUBLISH
from pipelines.options import PublishOptions
from pipelines.options.publish import DEFAULT_BRANCH
from pipelines.runner import cli
from pipelines.store.versions import (
    completed_dataset,
    enclosing,
    is_complete,
    latest_name,
    read_manifest,
)
from schemas.layout import (
    COMPLETE_FILE,
    DATASET,
    LATEST_FILE,
    STATISTICS_FILE,
    VERSIONS_DIRECTORY,
    dataset_path,
)
from transforms.errors import InputError, first_line, install_command
from transforms.files import list_files, read_json
from transforms.trainer.dataset_audit import WARN, held_back

REPO_TYPE = "dataset"
# The Hub writes it into every new repo (which files go to LFS): not the version's to delete.
HUB_OWN_FILES = (".gitattributes",)
COPY_CHUNK = 16 * 1024 * 1024  # bytes: a version on GCS is copied to a local disk by chunks
# Seconds waited before each new try of a call huggingface_hub sends once (creating the repo,
# the branch); it retries listing the repo and the pre-upload itself (6 tries, 23 s of waits).
RETRY_WAITS = (1.0, 4.0)
# The statuses of a hub failing for a moment: those huggingface_hub's own retries take.
RETRIED_STATUSES = (408, 429, 500, 502, 503, 504)
REFUSED_TOKEN_STATUSES = (401, 403)

T = TypeVar("T")


@dataclass(frozen=True)
class HubFile:
    path: str  # in the repo: relative to the version's dataset/ folder
    source: str  # where it is read from: a local path or an object-store URL
    size: int
    sha256: str


def gate_verdict(version: str) -> str | None:
    """The audit's line when the version's own gate holds it back: the run's --audit_gate
    (its manifest's options; a version without one was not gated) was fail and its
    text-only audit (its statistics) is off chance."""
    gate = read_manifest(version)["options"].get("audit_gate", WARN)
    if gate == WARN:
        return None
    return held_back(gate, read_json(dataset_path(version, STATISTICS_FILE))["text_only_audit"])


def output_of(version: str) -> str | None:
    """The output a version lies in (``OUTPUT/versions/<version>``), None for one elsewhere.

    >>> output_of("out/versions/v1"), output_of("copies/v1")
    ('out', None)
    """
    output, _, folder = version.rstrip("/").rpartition("/")[0].rpartition("/")
    return output if folder == VERSIONS_DIRECTORY else None


def held_back_leak(version: str) -> str | None:
    """The audit's line when the gate held ``version`` back: gated, off chance, and not what
    its output's latest.txt names (made the latest all the same by a later run with
    --audit_gate warn, it is published, not held back)."""
    leak = gate_verdict(version)
    if leak is None:
        return None
    output = output_of(version)
    made_latest = output is not None and latest_name(output) == os.path.basename(version)
    return None if made_latest else leak


def newest_held_back(output: str) -> tuple[str, str] | None:
    """(directory, the audit's line) of the newest complete version of an output without a
    latest one, if its gate held it back."""
    markers = list_files(FileSystems.join(output, VERSIONS_DIRECTORY, "*", COMPLETE_FILE))
    if not markers:
        return None
    newest = max(markers, key=lambda marker: read_json(marker)["completed"])
    version = newest.rpartition("/")[0]
    leak = gate_verdict(version)
    return None if leak is None else (version, leak)


def refuse_without_marker(where: str) -> None:
    """Refuses ``where`` (no completion marker) where completed_dataset's reason would be
    wrong ("the run that wrote it failed or is still running"): a latest.txt that is not
    UTF-8, an output whose newest version the audit gate held back, a folder no run
    writes into. Anything else is left to completed_dataset."""
    if latest_name(where) is not None:
        return
    held = newest_held_back(where)
    if held is not None:
        version, leak = held
        raise InputError(
            f"{where}: no version is the latest (no {LATEST_FILE}): the newest, {version}, is "
            f"complete but its audit gate held it back ({leak}); to publish it all the same, "
            f"give --dataset {version} --allow_held_back"
        )
    if output_of(where) is not None:
        return  # a version a run failed to complete, or still writes
    if list_files(FileSystems.join(where, VERSIONS_DIRECTORY, "**")):
        return  # an output holding only such versions
    if list_files(FileSystems.join(where, "**")):
        raise InputError(
            f"{where}: not a dataset: neither a version (no {COMPLETE_FILE} marker) nor "
            f"generate's --output (no {LATEST_FILE}, no {VERSIONS_DIRECTORY}/); give generate's "
            "--output, OUTPUT/latest or OUTPUT/versions/<version>"
        )


def publishable(path: str, allow_held_back: bool) -> str:
    """The verified version ``--dataset`` names (:func:`completed_dataset`). One its audit
    gate held back is refused (the gate exists so that a leak is not published by
    accident), or with ``allow_held_back`` published with a warning."""
    where = enclosing(path)
    if not is_complete(where):
        refuse_without_marker(where)
    version = completed_dataset(where)
    leak = held_back_leak(version)
    if leak is not None:
        if not allow_held_back:
            raise InputError(
                f"{version}: its audit gate held it back ({leak}): it is complete but was "
                "never made the latest; publish it all the same with --allow_held_back"
            )
        logging.warning(
            "%s: publishing a version its audit gate held back (%s): --allow_held_back",
            version,
            leak,
        )
    return version


def hub_files(version: str, manifest: dict) -> list[HubFile]:
    """The files of the version's dataset/ folder, as its (verified) manifest lists them.

    >>> manifest = {"files": [
    ...     {"path": "build/corpus/images.parquet", "bytes": 9, "sha256": "a"},
    ...     {"path": "dataset/README.md", "bytes": 5, "sha256": "b"}]}
    >>> hub_files("out/versions/v1", manifest)
    [HubFile(path='README.md', source='out/versions/v1/dataset/README.md', size=5, sha256='b')]
    """
    prefix = f"{DATASET}/"
    return [
        HubFile(path, dataset_path(version, path), entry["bytes"], entry["sha256"])
        for entry in manifest["files"]
        if entry["path"].startswith(prefix)
        for path in [entry["path"][len(prefix) :]]
    ]


def listing(files: list[HubFile], repo_id: str) -> str:
    """The dry run's output: one ``<path in the repo>  <bytes>`` line per file, then the total.

    >>> print(listing([HubFile("README.md", "v/dataset/README.md", 1200, "b")], "me/mcic"))
    README.md  1200
    1 file, 1,200 bytes: would be uploaded to me/mcic (dry run: nothing uploaded)
    """
    total = sum(file.size for file in files)
    count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
    return "\n".join(
        [
            *(f"{file.path}  {file.size}" for file in files),
            f"{count}, {total:,} bytes: would be uploaded to {repo_id} (dry run: nothing uploaded)",
        ]
    )


def hub_library():
    """``huggingface_hub``, imported here only: listing (--dry_run) does without it."""
    try:
        import huggingface_hub.errors  # a submodule the package does not load itself
    except ImportError as error:
        raise InputError(
            f"dmc-publish needs huggingface_hub, which is not installed: {install_command('hub')}"
        ) from error
    return huggingface_hub


@contextmanager
def local_sources(files: list[HubFile]) -> Iterator[list[str]]:
    """A local path per file, in order: the file itself on a local disk, else a copy in a
    temporary folder, removed afterwards.

    huggingface_hub reads each file twice (its sha256, then to send it) and keeps what it
    is given until the commit ends: a path costs nothing meanwhile, where an open stream
    from an object store would hold a read buffer per file.
    """
    if all(FileSystems.get_scheme(file.source) is None for file in files):
        yield [file.source for file in files]
        return
    with tempfile.TemporaryDirectory(prefix="dmc-publish-") as folder:
        paths = []
        for file in files:
            path = os.path.join(folder, *file.path.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with (
                FileSystems.open(
                    file.source, compression_type=CompressionTypes.UNCOMPRESSED
                ) as source,
                open(path, "wb") as copy,
            ):
                shutil.copyfileobj(source, copy, COPY_CHUNK)
            paths.append(path)
        yield paths


def additions(hub, files: list[HubFile], sources: list[str]) -> list:
    """One CommitOperationAdd per file (read from its local source), whose bytes must still
    be those verified."""
    operations = []
    for file, source in zip(files, sources, strict=True):
        operation = hub.CommitOperationAdd(path_in_repo=file.path, path_or_fileobj=source)
        if operation.upload_info.sha256.hex() != file.sha256:
            raise InputError(
                f"{file.source}: altered since the version was verified (its manifest has "
                f"another sha256); publish again once nothing writes to the version"
            )
        operations.append(operation)
    return operations


@contextmanager
def timed_requests(hub, seconds: float) -> Iterator[ModuleType]:
    """Every request huggingface_hub sends meanwhile fails after ``seconds`` without progress
    (connecting, sending, or waiting for the answer); yields the HTTP library it sends with
    (httpx2 from huggingface_hub 2, httpx in 1), whose exceptions such a request raises.

    Its shared client waits for ever, and the HfApi calls made here take no timeout. It
    makes that client anew by a factory (again after a refused connection), so the
    factory is where the timeout is set."""
    from huggingface_hub.utils._http import default_client_factory

    def factory():
        client = default_client_factory()
        client.timeout = seconds
        return client

    hub.set_client_factory(factory)
    try:
        yield importlib.import_module(type(hub.get_session()).__module__.partition(".")[0])
    finally:
        hub.set_client_factory(default_client_factory)


def status_of(hub, error: Exception) -> int | None:
    """The HTTP status a hub answered with, None for a request that got no answer."""
    return error.response.status_code if isinstance(error, hub.errors.HfHubHTTPError) else None


def transient(hub, http: ModuleType, error: Exception) -> bool:
    """Whether ``error`` may pass if the call is sent again: what huggingface_hub retries."""
    dropped = (http.TimeoutException, http.NetworkError, http.RemoteProtocolError)
    return isinstance(error, dropped) or status_of(hub, error) in RETRIED_STATUSES


def retried(passes: Callable[[Exception], bool], call: Callable[..., T], *args, **kwargs) -> T:
    """``call(*args, **kwargs)``, sent again after each of RETRY_WAITS while it fails in a
    way that ``passes``. Only for a call huggingface_hub sends once and that is the same
    when repeated (creating what exists is no error here)."""
    for wait in RETRY_WAITS:
        try:
            return call(*args, **kwargs)
        except Exception as error:
            if not passes(error):
                raise
            logging.info("hub: %s; trying again in %g s", first_line(error), wait)
        time.sleep(wait)
    return call(*args, **kwargs)


def stale_files(api, options: PublishOptions, files: list[HubFile]) -> list[str]:
    """The repo's files at the branch that the version has not: an earlier version's."""
    kept = {file.path for file in files} | set(HUB_OWN_FILES)
    present = api.list_repo_files(options.repo_id, repo_type=REPO_TYPE, revision=options.revision)
    return sorted(set(present) - kept)


def upload(
    hub, http: ModuleType, options: PublishOptions, files: list[HubFile], version_name: str
) -> str:
    """Creates the repo (and branch) when missing, commits the files; returns the commit's URL.

    ``hub``: the huggingface_hub package; its HfApi takes the endpoint (``HF_ENDPOINT``)
    and token it finds itself. ``http``: the HTTP library it sends with. Creating the repo
    and the branch is tried again after a transient failure; the commit is not (the files
    may have reached the hub): publishing again is."""
    api = hub.HfApi()
    again = partial(retried, partial(transient, hub, http))
    again(
        api.create_repo,
        options.repo_id,
        repo_type=REPO_TYPE,
        private=options.private,
        exist_ok=True,
    )
    if options.revision != DEFAULT_BRANCH:
        again(
            api.create_branch,
            options.repo_id,
            branch=options.revision,
            repo_type=REPO_TYPE,
            exist_ok=True,
        )
    deletions = [
        hub.CommitOperationDelete(path_in_repo=path) for path in stale_files(api, options, files)
    ]
    with local_sources(files) as sources:
        commit = api.create_commit(
            options.repo_id,
            [*additions(hub, files, sources), *deletions],
            commit_message=f"dmc-datasets version {version_name}",
            commit_description=f"{len(files)} files of {version_name}/{DATASET}, by dmc-publish",
            repo_type=REPO_TYPE,
            revision=options.revision,
        )
    return commit.commit_url


def answer(error) -> str:
    """A hub's answer (an HfHubHTTPError's), in a few words.

    huggingface_hub's own message differs by call (some read "403 Forbidden: None.")."""
    response, request = error.response, error.response.request
    said = f": {first_line(error.server_message)}" if error.server_message else ""
    return (
        f"{response.status_code} {response.reason_phrase} to {request.method} "
        f"{request.url.path}{said}"
    )


def hub_failure(hub, http: ModuleType, error: Exception, options: PublishOptions) -> str:
    """What went wrong with the hub (``error``: the HTTP library's, or huggingface_hub's
    HfHubHTTPError), in one line naming what to do.

    Each kind its own line: unreachable and dropped connections are the network's (or
    HF_ENDPOINT's), no answer is a slow hub (or too short a --timeout), 401/403 the
    token's, 5xx the hub's own failure (nothing the user did), any other status a request
    the Hub refused."""
    hub_url = f"hub {hub.constants.ENDPOINT}"
    if isinstance(error, http.TimeoutException):
        return (
            f"{hub_url}: no answer within --timeout {options.timeout:g} s; try again later, "
            "or give a longer --timeout"
        )
    if isinstance(error, (http.RemoteProtocolError, http.ReadError, http.WriteError)):
        return (
            f"{hub_url}: the connection was dropped before an answer ({first_line(error)}); "
            "try again later, and check the network (a proxy?)"
        )
    if isinstance(error, http.TransportError):
        return (
            f"{hub_url}: cannot connect ({first_line(error)}); check the network, and "
            "HF_ENDPOINT if set"
        )
    status = error.response.status_code
    if status in REFUSED_TOKEN_STATUSES:
        return (
            f"{options.repo_id}: the Hub refused the token ({answer(error)}); check that the "
            "token (HF_TOKEN or hf auth login) can write to it"
        )
    if status >= 500:
        return (
            f"{hub_url}: the hub failed ({answer(error)}); its fault, not the version's: try "
            "again later"
        )
    return f"{options.repo_id}: the Hub refused the upload ({answer(error)}); see its reason"


def run(options: PublishOptions) -> str:
    """Publishes (or, ``--dry_run``, lists) the version's dataset folder; returns what to print."""
    options.validate()
    version = publishable(options.dataset, options.allow_held_back)
    files = hub_files(version, read_manifest(version))
    if not files:
        raise InputError(f"{dataset_path(version)}: no files to publish")
    if options.dry_run:
        return listing(files, options.repo_id)
    hub = hub_library()
    name = version.rstrip("/").rsplit("/", 1)[-1]
    with timed_requests(hub, options.timeout) as http:
        try:
            url = upload(hub, http, options, files, name)
        except (http.TransportError, hub.errors.HfHubHTTPError) as error:
            raise InputError(hub_failure(hub, http, error, options)) from error
    total = sum(file.size for file in files)
    return (
        f"published {name} ({len(files)} files, {total:,} bytes) to {options.repo_id} "
        f"at {options.revision}: {url}"
    )


def main(argv: list[str] | None = None) -> int:
    return cli(argv, lambda options, _: run(options), PUBLISH)


if __name__ == "__main__":
    sys.exit(main())
