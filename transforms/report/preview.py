"""The HTML preview of a dataset: a seeded sample of instances per split, on one static page.

Pure functions from instance records (``schemas/instance.py``) to HTML;
``pipelines/preview.py`` reads the shards, copies the images and writes the page.
The page has no script and loads nothing from the network but the ``image_url``
of an image that was not copied, so it works offline (such an image then shows
its file name). Every piece of data is escaped: captions are text, never markup.

The page is ``assets/preview.html``, a ``string.Template``, with ``preview.css`` inlined;
its pieces (an instance, an option's row, a split...) are the templates of
``assets/preview_fragments.html``.
"""

import functools
import heapq
import html
import os
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from string import Template
from urllib.parse import quote

from apache_beam.io.filesystems import FileSystems

from schemas.layout import PARQUET, shard_pattern
from transforms.errors import InputError
from transforms.files import read_file, read_parquet_files, write_file
from transforms.report import assets
from transforms.seeds import keyed_int

IMAGES_DIRECTORY = "images"
LOCAL, URL, MISSING = "local", "url", "missing"
WEB_SCHEMES = ("http://", "https://")


@dataclass(frozen=True)
class Image:
    """Where an instance's image comes from: ``kind`` is LOCAL, URL or MISSING (no ``src``)."""

    kind: str
    src: str = ""


@dataclass(frozen=True)
class Decoy:
    """A decoy's provenance; ``rank`` 1 is the strategy's first choice."""

    rank: int
    caption_id: str
    image_id: str
    sim_pv: float
    sim_surf: float
    score: float
    edit: str  # how the text was built from the caption; "" for the caption itself


@dataclass(frozen=True)
class SplitPreview:
    name: str
    instances: int  # in the split, not only those shown
    shown: list[tuple[dict, Image]]


@dataclass(frozen=True)
class Header:
    version: str
    output: str  # the name of the folder dmc-generate wrote, never a local path: pages are shared
    decoys: str  # the decoy strategy
    seed: int
    per_split: int


def sample(instances: Iterable[dict], size: int, seed: int) -> list[dict]:
    """The ``size`` instances with the smallest keys of (seed, example_id), in key order.

    A key depends on the instance alone, so the sample does not depend on the
    order of files or rows, and the sample of a union is the sample of its
    parts' samples: shards can be sampled one at a time.

    >>> rows = [{"example_id": f"{i}_0"} for i in range(10)]
    >>> sample(rows, 3, seed=0) == sample(reversed(rows), 3, seed=0)
    True
    """
    return heapq.nsmallest(
        size, instances, key=lambda row: (keyed_int(seed, row["example_id"]), row["example_id"])
    )


def copyable(image_file: str) -> bool:
    """A relative path without ``..``: copying it under ``images/`` cannot write elsewhere.

    >>> [copyable(name) for name in ("a.jpg", "val/a.jpg", "../a.jpg", "/a.jpg", "")]
    [True, True, False, False, False]
    """
    parts = image_file.replace("\\", "/").split("/")
    return all(part not in ("", ".", "..") for part in parts)


def image_source(instance: dict, copied: Collection[str]) -> Image:
    """The copied file if there is one, else the ``image_url`` (web addresses only), else none.

    >>> image_source({"image_file": "a b.jpg", "image_url": ""}, {"a b.jpg"})
    Image(kind='local', src='images/a%20b.jpg')
    >>> image_source({"image_file": "a.jpg", "image_url": "javascript:x"}, set())
    Image(kind='missing', src='')
    """
    if instance["image_file"] in copied:
        return Image(LOCAL, f"{IMAGES_DIRECTORY}/{quote(instance['image_file'])}")
    if instance["image_url"].startswith(WEB_SCHEMES):
        return Image(URL, instance["image_url"])
    return Image(MISSING)


def decoys_by_source(instance: dict) -> dict[tuple[str, str], Decoy]:
    """Each decoy's provenance under (caption id, edit), which is how options name it: an
    edited decoy may come from the target's own caption."""
    columns = zip(
        instance["decoy_caption_ids"],
        instance["decoy_image_ids"],
        instance["decoy_sim_pv"],
        instance["decoy_sim_surf"],
        instance["decoy_score"],
        instance["decoy_edits"],
        strict=True,
    )
    return {
        (caption_id, edit): Decoy(rank, caption_id, image_id, sim_pv, sim_surf, score, edit)
        for rank, (caption_id, image_id, sim_pv, sim_surf, score, edit) in enumerate(columns, 1)
    }


def _text(value: object) -> str:
    return html.escape(str(value))


def _number(value: float) -> str:
    return f"{value:.3f}"


FRAGMENT_NAME = re.compile(r"^<!-- ([a-z_]+) -->\n", re.MULTILINE)
LINE_BREAK = re.compile(r"\n[ \t]*")


@functools.cache
def fragments() -> dict[str, Template]:
    """The pieces of ``assets/preview_fragments.html`` by name; a line break and the
    indentation after it are dropped, so the pieces can be written one element a line."""
    _, *parts = FRAGMENT_NAME.split(assets.read("preview_fragments.html"))
    return {
        name: Template(LINE_BREAK.sub("", body))
        for name, body in zip(parts[::2], parts[1::2], strict=True)
    }


def fill(piece: str, /, **values: object) -> str:
    """A piece with its ``${...}`` fields filled by values already escaped.

    >>> fill("no_instances")
    '<p>No instances in this split.</p>'
    """
    return fragments()[piece].substitute(values)


IMAGE_ORIGINS = {
    LOCAL: "a copy of the file in --images",
    URL: "from its image_url (needs the network)",
    MISSING: "not in --images, no image_url",
}


def render_image(instance: dict, image: Image) -> str:
    """The image, or a placeholder, over its id, file name and where the picture comes from."""
    file_name = _text(instance["image_file"])
    if image.kind == MISSING:
        shown = fill("placeholder", kind=MISSING)
    else:
        shown = fill("picture", src=_text(image.src), file_name=file_name, kind=image.kind)
    return fill(
        "image",
        shown=shown,
        image_id=_text(instance["image_id"]),
        file_name=file_name,
        origin=IMAGE_ORIGINS[image.kind],
    )


OWN_CAPTION = "the image's own caption"


def render_option(position: int, instance: dict, decoys: dict[tuple[str, str], Decoy]) -> str:
    """One row: the target marked; a decoy with its rank, source image, caption and scores
    (or, for a decoy built from a caption, the edit)."""
    caption_id = instance["option_caption_ids"][position]
    edit = instance["option_edits"][position]
    row = {
        "position": position,
        "caption": _text(instance["options"][position]),
        "caption_id": _text(caption_id),
    }
    if position == instance["label"]:
        return fill(
            "target", **row, image_id=_text(instance["image_id"]), edit=_text(edit or OWN_CAPTION)
        )
    decoy = decoys[(caption_id, edit)]  # its caption_id is the option's
    if edit:
        provenance = fill("edit", edit=_text(edit))
    else:
        provenance = fill(
            "scores",
            sim_pv=_number(decoy.sim_pv),
            sim_surf=_number(decoy.sim_surf),
            score=_number(decoy.score),
        )
    return fill(
        "decoy", **row, rank=decoy.rank, image_id=_text(decoy.image_id), provenance=provenance
    )


def render_instance(instance: dict, image: Image) -> str:
    """The image beside the options in their order, the target marked."""
    decoys = decoys_by_source(instance)
    return fill(
        "instance",
        split=_text(instance["split"]),
        example_id=_text(instance["example_id"]),
        label=instance["label"],
        image=render_image(instance, image),
        target_caption_id=_text(instance["target_caption_id"]),
        rows="".join(
            render_option(position, instance, decoys)
            for position in range(len(instance["options"]))
        ),
    )


def render_split(split: SplitPreview) -> str:
    body = "".join(render_instance(instance, image) for instance, image in split.shown)
    return fill(
        "split",
        name=_text(split.name),
        shown=f"{len(split.shown):,}",
        instances=f"{split.instances:,}",
        body=body or fill("no_instances"),
    )


def render_overview(splits: list[SplitPreview]) -> str:
    rows = "".join(
        fill(
            "overview_row",
            name=_text(split.name),
            instances=f"{split.instances:,}",
            shown=f"{len(split.shown):,}",
        )
        for split in splits
    )
    return fill("overview", rows=rows)


def render_page(header: Header, splits: list[SplitPreview]) -> str:
    """The whole page: what was read, the splits' sizes linking to their sections, then them."""
    return Template(assets.read("preview.html")).substitute(
        version=_text(header.version),
        style=assets.read("preview.css"),
        output=_text(header.output),
        decoys=_text(header.decoys),
        per_split=f"{header.per_split:,}",
        seed=header.seed,
        overview=render_overview(splits),
        sections="".join(render_split(split) for split in splits),
    )


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
