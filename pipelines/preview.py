"""Writes an HTML preview of a dataset: a seeded sample of instances per split, one static page.

::

    python -m pipelines.preview --dataset out/synthetic --output out/preview \\
        [--images ../coco/val2017] [--per_split 20] [--seed 0]

Reads a completed version's Parquet shards one at a time through Beam's
filesystems (a few whole-file reads, no pipeline), so gs:// paths work;
copies the shown instances' images found in ``--images`` into
``OUTPUT/images/`` and writes ``OUTPUT/index.html``. The rendering is
``transforms/report/preview.py``.
"""

import os
import sys

from apache_beam.io.filesystems import FileSystems

from pipelines.cli import Command
from pipelines.options import PreviewOptions
from pipelines.runner import cli
from pipelines.versions import VERSIONS_DIRECTORY, completed_dataset, read_manifest
from schemas.layout import PARQUET, shard_pattern
from transforms.corpus.split import SPLITS
from transforms.errors import InputError
from transforms.files import (
    check_location,
    check_writable,
    read_file,
    read_parquet_files,
    write_file,
)
from transforms.report.preview import (
    IMAGES_DIRECTORY,
    Header,
    SplitPreview,
    copyable,
    image_source,
    render_page,
    sample,
)

INDEX_FILE = "index.html"


def sampled_split(version: str, split: str, size: int, seed: int) -> tuple[int, list[dict]]:
    """(the split's instance count, its sample); one shard in memory at a time."""
    count, kept = 0, []
    for table in read_parquet_files(shard_pattern(version, PARQUET, split)):
        rows = table.to_pylist()
        count += len(rows)
        kept = sample([*kept, *rows], size, seed)
    return count, kept


def is_directory(path: str) -> bool:
    """A local directory, or a prefix holding files in an object store (which has no folders)."""
    if FileSystems.get_scheme(path) is None:
        return os.path.isdir(path)
    return bool(FileSystems.match([FileSystems.join(path, "*")], [1])[0].metadata_list)


def check_images(images: str) -> None:
    """``--images`` must be a folder (or a prefix holding files in an object store)."""
    if not is_directory(images):
        raise InputError(
            f"--images {images}: not a directory; give the folder holding the images' "
            "files (named as their image_file)"
        )


def copy_images(instances: list[dict], images: str, output: str) -> set[str]:
    """Copies the instances' image files found in ``images`` to OUTPUT/images/; returns
    the names copied."""
    copied = set()
    for name in sorted({instance["image_file"] for instance in instances}):
        source = FileSystems.join(images, name)
        if copyable(name) and FileSystems.exists(source):
            write_file(FileSystems.join(output, IMAGES_DIRECTORY, name), read_file(source))
            copied.add(name)
    return copied


def output_name(version: str) -> str:
    """The name of the output a version lies in (``OUTPUT/versions/<version>``), or the
    version's own folder's when it lies elsewhere (a copied version).

    >>> output_name("/home/me/runs/coco/versions/3fa2/"), output_name("gs://b/copy/3fa2")
    ('coco', '3fa2')
    """
    if FileSystems.get_scheme(version) is None:
        version = os.path.abspath(version)  # "." and ".." have names too
    parts = version.rstrip("/").split("/")
    return parts[-3] if len(parts) > 2 and parts[-2] == VERSIONS_DIRECTORY else parts[-1]


def checked_version(options) -> str:
    """The checks of a command that reads a completed version (``--dataset``, ``--images``)
    and writes a folder (``--output``); returns the version's directory."""
    options.validate()
    check_location(options.dataset, "dataset")
    check_location(options.output, "output")
    if options.images:
        check_images(options.images)
    version = completed_dataset(options.dataset)
    check_writable(options.output)
    return version


def run(options: PreviewOptions) -> str:
    """Writes the preview; returns the path of its index.html."""
    version = checked_version(options)
    samples = {
        split: sampled_split(version, split, options.per_split, options.seed) for split in SPLITS
    }
    shown = [instance for _, instances in samples.values() for instance in instances]
    copied = copy_images(shown, options.images, options.output) if options.images else set()
    splits = [
        SplitPreview(
            split, count, [(instance, image_source(instance, copied)) for instance in rows]
        )
        for split, (count, rows) in samples.items()
    ]
    header = Header(
        version=version.rstrip("/").rsplit("/", 1)[-1],
        output=output_name(version),
        decoys=read_manifest(version)["options"]["decoys"],
        seed=options.seed,
        per_split=options.per_split,
    )
    path = FileSystems.join(options.output, INDEX_FILE)
    write_file(path, render_page(header, splits).encode("utf-8"))
    return path


COMMAND = Command(
    prog="dmc-preview",
    description=(
        "Writes an HTML preview of a dataset dmc-generate wrote: a seeded sample of instances "
        "per split, each with its image, its five options with the target marked, and where "
        "each decoy comes from (its image, caption, simPV, simSURF and Score). The folder "
        "--output is self-contained: open its index.html in a browser, offline too."
    ),
    example="dmc-preview --dataset out/synthetic --output out/preview --images val2017/",
    manual="docs/preview.md",
    beam=False,
)


def main(argv: list[str] | None = None) -> int:
    return cli(
        argv,
        lambda options, _: f"preview written to {run(options)}",
        PreviewOptions,
        command=COMMAND,
    )


if __name__ == "__main__":
    sys.exit(main())
