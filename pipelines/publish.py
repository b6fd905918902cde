"""Publishes a completed version's dataset folder to a Hugging Face Hub dataset repo.

::

    python -m pipelines.publish --version out/mcic-coco --repo_id USER/NAME \\
        [--private] [--revision BRANCH] [--dry_run]

Verifies the version (its marker, then every file against its manifest:
:func:`pipelines.store.versions.completed_dataset`), then commits the files the manifest
lists under ``dataset/`` (:mod:`schemas.layout`), at their paths inside it, in
one commit through ``huggingface_hub``: the card ``dataset/README.md`` becomes
the repo's dataset card. Nothing of ``build/``, nor the manifest, marker or claim,
is sent. The same commit deletes the repo's files that are not the version's
(``.gitattributes`` aside), so a split's glob on the Hub never mixes two
versions' shards. Each file's sha256 is computed again as it is read for the
upload and must be the manifest's; a version in an object store (gs://) is first
copied to a temporary local folder. The token is huggingface_hub's own
(``HF_TOKEN``, or ``hf auth login``): no flag takes a secret.
"""

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipelines.cli import Command
from pipelines.options import PublishOptions
from pipelines.options.publish import DEFAULT_BRANCH
from pipelines.runner import cli
from pipelines.store.versions import completed_dataset, read_manifest
from schemas.layout import DATASET, dataset_path
from transforms.errors import InputError

REPO_TYPE = "dataset"
# The Hub writes it into every new repo (which files go to LFS): not the version's to delete.
HUB_OWN_FILES = (".gitattributes",)
COPY_CHUNK = 16 * 1024 * 1024  # bytes: a version on GCS is copied to a local disk by chunks


@dataclass(frozen=True)
class HubFile:
    path: str  # in the repo: relative to the version's dataset/ folder
    source: str  # where it is read from: a local path or an object-store URL
    size: int
    sha256: str


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
            "dmc-publish needs huggingface_hub, which is not installed: pip install '.[hub]'"
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


def stale_files(api, options: PublishOptions, files: list[HubFile]) -> list[str]:
    """The repo's files at the branch that the version has not: an earlier version's."""
    kept = {file.path for file in files} | set(HUB_OWN_FILES)
    present = api.list_repo_files(options.repo_id, repo_type=REPO_TYPE, revision=options.revision)
    return sorted(set(present) - kept)


def upload(hub, options: PublishOptions, files: list[HubFile], version_name: str) -> str:
    """Creates the repo (and branch) when missing, commits the files; returns the commit's URL.

    ``hub``: the huggingface_hub package; its HfApi takes the endpoint (``HF_ENDPOINT``)
    and token it finds itself."""
    api = hub.HfApi()
    api.create_repo(options.repo_id, repo_type=REPO_TYPE, private=options.private, exist_ok=True)
    if options.revision != DEFAULT_BRANCH:
        api.create_branch(
            options.repo_id, branch=options.revision, repo_type=REPO_TYPE, exist_ok=True
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


def hub_error(error: Exception, options: PublishOptions) -> InputError:
    """A request the Hub refused, as one line: most are the user's to fix (token, rights)."""
    first_line = (str(error).splitlines() or [""])[0]
    return InputError(
        f"{options.repo_id}: the Hub refused the upload ({first_line}); check the token "
        "(HF_TOKEN or hf auth login) can write to it"
    )


def run(options: PublishOptions) -> str:
    """Publishes (or, ``--dry_run``, lists) the version's dataset folder; returns what to print."""
    options.validate()
    version = completed_dataset(options.version)
    files = hub_files(version, read_manifest(version))
    if not files:
        raise InputError(f"{dataset_path(version)}: no files to publish")
    if options.dry_run:
        return listing(files, options.repo_id)
    hub = hub_library()
    name = version.rstrip("/").rsplit("/", 1)[-1]
    try:
        url = upload(hub, options, files, name)
    except hub.errors.HfHubHTTPError as error:
        raise hub_error(error, options) from error
    total = sum(file.size for file in files)
    return (
        f"published {name} ({len(files)} files, {total:,} bytes) to {options.repo_id} "
        f"at {options.revision}: {url}"
    )


COMMAND = Command(
    prog="dmc-publish",
    description=(
        "Uploads a completed, verified version's dataset folder (instances, card, plots, "
        "statistics; never what built it) to a Hugging Face Hub dataset repo, in one commit; "
        "the folder's README.md becomes the repo's dataset card, and the repo's files of an "
        "earlier version are deleted in the same commit. The token is huggingface_hub's "
        "(HF_TOKEN or hf auth login). Exit code 2: the version is not complete or fails "
        "verification, bad options, or the Hub refused."
    ),
    example="dmc-publish --version out/mcic-coco --repo_id USER/mcic-coco --dry_run",
    manual="docs/publish.md",
    beam=False,
)


def main(argv: list[str] | None = None) -> int:
    return cli(argv, lambda options, _: run(options), PublishOptions, command=COMMAND)


if __name__ == "__main__":
    sys.exit(main())
