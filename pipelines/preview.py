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

from pipelines.cli.commands import PREVIEW
from pipelines.options import PreviewOptions
from pipelines.runner import checked_version, cli
from pipelines.store.versions import read_manifest
from schemas.layout import VERSIONS_DIRECTORY
from transforms.corpus.split import SPLITS
from transforms.files import (
    write_file,
)
from transforms.report.preview import (
    Header,
    SplitPreview,
    copy_images,
    image_source,
    render_page,
    sampled_split,
)

INDEX_FILE = "index.html"


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


def main(argv: list[str] | None = None) -> int:
    return cli(
        argv,
        lambda options, _: f"preview written to {run(options)}",
        PREVIEW,
    )


if __name__ == "__main__":
    sys.exit(main())
