"""Reading caption corpora: COCO ``captions_*.json`` and Flickr token files.

Everything goes through ``apache_beam.io.filesystems``, so local paths and
``gs://`` work alike; gzip-compressed files are read as such, and a UTF-8 byte
order mark is ignored. Bad input raises :class:`InputError` naming the file and
record; nothing is dropped silently here (empty captions are counted later,
by normalisation). An image id belongs to one input file: one in two files is
an error naming both, unless the user asks to merge them (``--merge_inputs``).
"""

import gzip
import itertools
import os
from collections.abc import Iterable, Iterator

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas.records import RawCaption
from transforms.errors import InputError
from transforms.files import (
    bucket_exists,
    bucket_of,
    check_location,
    parse_json,
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
    for path in sorted(paths):
        if os.path.isdir(path):
            raise InputError(
                f"{path}: is a directory; --input takes files or globs such as {path}/*.json"
            )
    return sorted(paths)


def check_distinct_contents(checksums: list[dict]) -> None:
    """Two paths with the same bytes are one file given twice: its captions would count twice."""
    seen: dict[str, str] = {}
    for checksum in checksums:
        first = seen.setdefault(checksum["sha256"], checksum["path"])
        if first != checksum["path"]:
            raise InputError(
                f"{checksum['path']}: the same content (sha256 {checksum['sha256'][:12]}) as "
                f"{first}: the same file given twice? give it once"
            )


def _why_nothing_matched(pattern: str) -> str:
    bucket = bucket_of(pattern)
    if bucket:
        try:
            if not bucket_exists(bucket):
                return f"the bucket {bucket} does not exist"
        except Exception as error:  # the client's own types
            return f"cannot look up the bucket {bucket}: {storage_problem(error)}"
    return "no such file (check the path or glob in --input)"


GZIP_MAGIC = b"\x1f\x8b"


def decode(path: str, data: bytes) -> str:
    """The file's text: gunzipped if compressed, without a UTF-8 byte order mark.

    >>> decode("a.json", gzip.compress("\ufeff{}".encode()))
    '{}'
    """
    if data.startswith(GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise InputError(f"{path}: a damaged gzip file ({error})") from error
    if not data.strip():
        raise InputError(f"{path}: the file is empty: give a COCO or Flickr captions file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(
            f"{path}: not UTF-8 (byte {error.start}: {data[error.start : error.start + 1]!r}); "
            "re-encode the file as UTF-8"
        ) from error


def parse_captions(path: str, data: bytes) -> Iterator[RawCaption]:
    """Parses one corpus file; the format is told by its first character."""
    text = decode(path, data)
    if text.lstrip().startswith(("{", "[")):
        return _parse_coco(path, text)
    return _parse_flickr(path, text)


def _parse_coco(path: str, text: str) -> Iterator[RawCaption]:
    document = parse_json(path, text, dict, "a COCO captions file")
    for key in ("images", "annotations"):
        if not isinstance(document.get(key), list):
            raise InputError(
                f"{path}: no '{key}' list; a COCO captions file has 'images' and 'annotations'"
            )
    images, index_of = {}, {}
    for index, image in enumerate(document["images"]):
        require_keys(path, f"images[{index}]", image, ("id", "file_name"))
        image_id = str(image["id"])
        first = images.setdefault(image_id, image)
        if first["file_name"] != image["file_name"]:
            raise InputError(
                f"{path}: images[{index}] has id {image_id} like images[{index_of[image_id]}], "
                f"with another file name ({image['file_name']} and {first['file_name']})"
            )
        index_of.setdefault(image_id, index)
    for index, annotation in enumerate(document["annotations"]):
        record = f"annotations[{index}]"
        require_keys(path, record, annotation, ("id", "image_id", "caption"))
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
            source=path,
        )


def require_keys(path: str, record: str, value: object, keys: tuple[str, ...]) -> None:
    """``value`` is an object with every one of ``keys``, none null; else an InputError."""
    if not isinstance(value, dict):
        raise InputError(f"{path}: {record} is not an object")
    missing = [key for key in keys if key not in value]
    if missing:
        raise InputError(f"{path}: {record} has no {', '.join(repr(k) for k in missing)}")
    null = [key for key in keys if value[key] is None]
    if null:
        raise InputError(f"{path}: {record}: {', '.join(repr(k) for k in null)} is null")


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
            source=path,
        )


def caption_sample(paths: list[str], per_file: int) -> list[RawCaption]:
    """The first ``per_file`` captions of each file, read in the driver: what the language
    is told from (transforms/corpus/languages/detect.py). A COCO file is parsed whole."""
    return [
        caption
        for path in paths
        for caption in itertools.islice(parse_captions(path, read_file(path)), per_file)
    ]


def check_one_source(image: tuple[str, Iterable[str]]) -> str:
    """An image id read from two files is refused: their captions would silently merge."""
    image_id, sources = image
    files = sorted(sources)
    if len(files) > 1:
        raise InputError(
            f"image id {image_id} is in {files[0]} and in {files[1]}: image ids must be unique "
            "across input files (--merge_inputs merges their captions)"
        )
    return image_id


class ReadCaptions(beam.PTransform):
    """File paths -> RawCaption, one file per element so files read in parallel.

    Unless ``merge``, every image id is checked to come from one file only.
    """

    def __init__(self, paths: list[str], *, merge: bool = False):
        super().__init__()
        self._paths, self._merge = paths, merge

    def expand(self, pipeline):
        captions = (
            pipeline
            | "Paths" >> beam.Create(self._paths)
            | "Read" >> beam.Map(lambda path: (path, read_file(path)))
            | "Parse" >> beam.FlatMapTuple(parse_captions)
        )
        if not self._merge:
            _ = (
                captions
                | "ImageSources" >> beam.Map(lambda caption: (caption.image_id, caption.source))
                | "Distinct" >> beam.Distinct()
                | "ByImage" >> beam.GroupByKey()
                | "OneSourceEach" >> beam.Map(check_one_source)
            )
        return captions
