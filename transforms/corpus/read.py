"""Reading caption corpora: COCO ``captions_*.json`` and Flickr token files.

Everything goes through ``apache_beam.io.filesystems``, so local paths and
``gs://`` work alike. Bad input raises :class:`InputError` naming the file and
record; nothing is dropped silently here (empty captions are counted later,
by normalisation).
"""

import json
from collections.abc import Iterator

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas.records import RawCaption
from transforms.errors import InputError
from transforms.files import (
    bucket_exists,
    bucket_of,
    check_location,
    read_file,
    storage_problem,
)


def expand_inputs(spec: str) -> list[str]:
    """Comma-separated paths or globs -> the sorted, distinct files they match."""
    patterns = [pattern.strip() for pattern in spec.split(",") if pattern.strip()]
    if not patterns:
        raise InputError("--input is empty: give COCO captions_*.json or Flickr token files")
    paths: set[str] = set()
    for pattern in patterns:
        check_location(pattern, "input")
        try:
            matched = FileSystems.match([pattern])[0].metadata_list
        except Exception as error:  # each filesystem raises its own type
            raise InputError(f"{pattern}: cannot list input: {storage_problem(error)}") from error
        if not matched:
            raise InputError(f"{pattern}: {_why_nothing_matched(pattern)}")
        paths.update(metadata.path for metadata in matched)
    return sorted(paths)


def _why_nothing_matched(pattern: str) -> str:
    bucket = bucket_of(pattern)
    if bucket:
        try:
            if not bucket_exists(bucket):
                return f"the bucket {bucket} does not exist"
        except Exception as error:  # the client's own types
            return f"cannot look up the bucket {bucket}: {storage_problem(error)}"
    return "no such file (check the path or glob in --input)"


def parse_captions(path: str, data: bytes) -> Iterator[RawCaption]:
    """Parses one corpus file; the format is told by its first character."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"{path}: not UTF-8 (byte {error.start}: {data[error.start : error.start + 1]!r}); "
            "re-encode the file as UTF-8"
        ) from error
    if text.lstrip().startswith("{"):
        return _parse_coco(path, text)
    return _parse_flickr(path, text)


def _parse_coco(path: str, text: str) -> Iterator[RawCaption]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}: malformed JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from error
    for key in ("images", "annotations"):
        if not isinstance(document.get(key), list):
            raise InputError(
                f"{path}: no '{key}' list; a COCO captions file has 'images' and 'annotations'"
            )
    images = {}
    for index, image in enumerate(document["images"]):
        _require(path, f"images[{index}]", image, ("id", "file_name"))
        images[str(image["id"])] = image
    for index, annotation in enumerate(document["annotations"]):
        record = f"annotations[{index}]"
        _require(path, record, annotation, ("id", "image_id", "caption"))
        image = images.get(str(annotation["image_id"]))
        if image is None:
            raise InputError(
                f"{path}: {record} (id {annotation['id']}) refers to image_id "
                f"{annotation['image_id']}, which is not in 'images'"
            )
        if not isinstance(annotation["caption"], str):
            raise InputError(f"{path}: {record} (id {annotation['id']}): caption is not a string")
        yield RawCaption(
            caption_id=str(annotation["id"]),
            image_id=str(annotation["image_id"]),
            caption=annotation["caption"],
            file_name=str(image["file_name"]),
            url=str(image.get("coco_url", "")),
        )


def _require(path: str, record: str, value: object, keys: tuple[str, ...]) -> None:
    if not isinstance(value, dict):
        raise InputError(f"{path}: {record} is not an object")
    missing = [key for key in keys if key not in value]
    if missing:
        raise InputError(f"{path}: {record} has no {', '.join(repr(k) for k in missing)}")


def _parse_flickr(path: str, text: str) -> Iterator[RawCaption]:
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, tab, caption = line.partition("\t")
        file_name, hash_sign, k = key.partition("#")
        if not (tab and hash_sign and file_name and k):
            raise InputError(
                f"{path}: line {line_number}: expected '<image file>#<k><TAB><caption>' "
                f"(Flickr token format), got {line[:80]!r}"
            )
        yield RawCaption(
            caption_id=key,
            image_id=file_name,
            caption=caption,
            file_name=file_name,
            url="",
        )


class ReadCaptions(beam.PTransform):
    """File paths -> RawCaption, one file per element so files read in parallel."""

    def __init__(self, paths: list[str]):
        super().__init__()
        self._paths = paths

    def expand(self, pipeline):
        return (
            pipeline
            | "Paths" >> beam.Create(self._paths)
            | "Read" >> beam.Map(lambda path: (path, read_file(path)))
            | "Parse" >> beam.FlatMapTuple(parse_captions)
        )
