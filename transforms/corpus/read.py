"""Reading caption corpora: COCO ``captions_*.json``, Flickr token files, and parallel lines.

Two input formats (``--input_format``): ``auto``, where each file is a COCO captions file or a
Flickr token file, told by its first character; and ``lines``, Multi30k's layout, where every
input file holds one caption per line and line i describes the image on line i of an image list
(``--image_list``).

Everything goes through ``apache_beam.io.filesystems``, so local paths and
``gs://`` work alike; gzip-compressed files are read as such, and a UTF-8 byte
order mark is ignored. Bad input raises :class:`InputError` naming the file and
record; nothing is dropped silently here (empty captions are counted later,
by normalisation). In ``auto``, an image id belongs to one input file: one in two files is
an error naming both, unless the user asks to merge them (``--merge_inputs``); in ``lines``,
every file describes the same images by design.
"""

import gzip
import itertools
import os
import re
from collections.abc import Iterable, Iterator

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas.instance import CONTROL_CHARACTERS
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
from transforms.progress import timed, timed_items

AUTO_FORMAT, LINES = "auto", "lines"
INPUT_FORMATS = (AUTO_FORMAT, LINES)


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


def check_outside(inputs: list[str], output: str) -> None:
    """An --input glob reaching into --output would read the versions' own files (the root
    card, the MCIC text files) as captions: refused, naming one of them."""

    def absolute(path: str) -> str:
        return path if FileSystems.get_scheme(path) else os.path.abspath(path)

    folder = absolute(output).rstrip("/") + "/"
    inside = [path for path in inputs if absolute(path).startswith(folder)]
    if inside:
        raise InputError(
            f"--input matches {len(inside)} files under --output {output} (e.g. {inside[0]}): "
            "the versions' own files are no captions; give --input globs that leave it out"
        )


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
        raise InputError(f"{path}: the file is empty: give a captions file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(
            f"{path}: line {line}: not UTF-8 (byte {error.start}: "
            f"{data[error.start : error.start + 1]!r}); re-encode the file as UTF-8"
        ) from error


def parse_captions(path: str, data: bytes) -> Iterator[RawCaption]:
    """Parses one corpus file; the format is told by its first character. A generator
    throughout, so that timing its items (``timed_items``) includes decoding the file."""
    text = decode(path, data)
    if text.lstrip().startswith(("{", "[")):
        yield from _parse_coco(path, text)
    else:
        yield from _parse_flickr(path, text)


# What an image file name cannot hold: the C0 and C1 controls (tab, CR, LF, NUL...), DEL and
# the line and paragraph separators. No real image is named so, and in a name they would break
# the lines of the text formats written from it, and of the tools that read them.
_CONTROL = re.compile(f"[{CONTROL_CHARACTERS}]")


def check_image_name(path: str, record: str, name: str) -> None:
    r"""An image file name holding a control character is refused, naming the file and
    record, when the input is read: not found at the end of the run in broken files.

    >>> check_image_name("images.txt", "line 2", "a\rb.jpg")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: images.txt: line 2: the image file name 'a\rb.jpg' holds ...
    """
    found = _CONTROL.search(name)
    if found:
        raise InputError(
            f"{path}: {record}: the image file name {name[:80]!r} holds a control character "
            f"(U+{ord(found[0]):04X}); file names cannot hold tabs, line breaks or other "
            "control characters: rename the image"
        )


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
        check_image_name(path, f"images[{index}] (id {image_id})", str(image["file_name"]))
        first = images.setdefault(image_id, image)
        if first["file_name"] != image["file_name"]:
            raise InputError(
                f"{path}: images[{index}] has id {image_id} like images[{index_of[image_id]}], "
                f"with another file name ({image['file_name']} and {first['file_name']})"
            )
        index_of.setdefault(image_id, index)
    first_of: dict[str, str] = {}
    for index, annotation in enumerate(document["annotations"]):
        record = f"annotations[{index}]"
        require_keys(path, record, annotation, ("id", "image_id", "caption"))
        check_new_id(path, record, str(annotation["id"]), first_of)
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


def check_new_id(path: str, record: str, caption_id: str, first_of: dict[str, str]) -> None:
    """A caption id seen before in the file is refused naming both records (across files,
    the corpus's own check refuses it); ``first_of``: each id's first record, kept here."""
    first = first_of.setdefault(caption_id, record)
    if first != record:
        raise InputError(
            f"{path}: {record} has caption id {caption_id} like {first}: caption ids must be unique"
        )


def _parse_flickr(path: str, text: str) -> Iterator[RawCaption]:
    first_of: dict[str, str] = {}
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
        check_image_name(path, f"line {line_number}", file_name)
        check_new_id(path, f"line {line_number}", key, first_of)
        yield RawCaption(
            caption_id=key,
            image_id=file_name,
            caption=caption,
            file_name=file_name,
            url="",
            source=path,
        )


def split_lines(text: str) -> list[str]:
    """Lines ended by "\\n" (or "\\r\\n") only: a caption may hold a character that
    ``str.splitlines`` breaks on (U+2028, U+0085...), which would shift every later line.

    >>> split_lines("a\\u2028b\\r\\n\\nc\\n")
    ['a\\u2028b', '', 'c']
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def image_id_of(file_name: str) -> str:
    """An image list's file name -> its image id, the name without extension (Flickr30k's
    ids in Multi30k: ``1000092795.jpg`` -> ``1000092795``)."""
    return os.path.splitext(file_name)[0]


def parse_image_list(path: str, data: bytes) -> list[str]:
    """The image file names of ``--image_list``, one a line; their ids must be distinct."""
    names = [line.strip() for line in split_lines(decode(path, data))]
    first_line: dict[str, int] = {}
    for number, name in enumerate(names, start=1):
        if not name:
            raise InputError(f"{path}: line {number}: empty; one image file name a line")
        check_image_name(path, f"line {number}", name)
        first = first_line.setdefault(image_id_of(name), number)
        if first != number:
            raise InputError(
                f"{path}: line {number}: {name} has the image id {image_id_of(name)} of line "
                f"{first} ({names[first - 1]}); each image once"
            )
    return names


def parse_lines(
    position: int, path: str, data: bytes, images: list[str], images_path: str
) -> Iterator[RawCaption]:
    """One caption file of the parallel layout: line i describes image i of ``images``.

    The caption of image ``1000092795.jpg`` in the ``position``-th input file (0-based) is
    ``1000092795#<position>``, as Flickr numbers an image's captions. An empty line is
    kept: normalisation counts it as an empty caption.
    """
    captions = split_lines(decode(path, data))
    if len(captions) != len(images):
        raise InputError(
            f"{path}: {len(captions)} lines, but the image list {images_path} has "
            f"{len(images)}; line i of a caption file describes the image on line i"
        )
    for file_name, caption in zip(images, captions, strict=True):
        image_id = image_id_of(file_name)
        yield RawCaption(
            caption_id=f"{image_id}#{position}",
            image_id=image_id,
            caption=caption,
            file_name=file_name,
            url="",
            source=path,
        )


def caption_sample(
    files: Iterable[tuple[str, bytes]], per_file: int, images: str = ""
) -> list[RawCaption]:
    """The first ``per_file`` captions of each (path, contents) file, read in the driver:
    what the language is told from (transforms/corpus/languages/detect.py). The files are
    taken one at a time, so a generator holds one in memory. A COCO file is parsed whole;
    with ``images``, the files are parallel lines (a caption file of the wrong length
    fails here, before the run)."""
    if images:
        names = parse_image_list(images, read_file(images))
        parsed = (
            parse_lines(position, path, data, names, images)
            for position, (path, data) in enumerate(files)
        )
    else:
        parsed = (parse_captions(path, data) for path, data in files)
    return [caption for file in parsed for caption in itertools.islice(file, per_file)]


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


READ = "read"  # the counter read/read_ms: reading and parsing the caption files


def timed_read(path: str) -> bytes:
    with timed(READ, READ):
        return read_file(path)


class ReadCaptions(beam.PTransform):
    """File paths -> RawCaption, one file per element so files read in parallel.

    With ``images`` (an image list), the files are parallel lines (:class:`ReadLines`);
    otherwise COCO or Flickr files where, unless ``merge``, every image id is checked to come
    from one file only.
    """

    def __init__(self, paths: list[str], *, merge: bool = False, images: str = ""):
        super().__init__()
        self._paths, self._merge, self._images = paths, merge, images

    def expand(self, pipeline):
        if self._images:
            return pipeline | "ReadLines" >> ReadLines(self._paths, images=self._images)
        captions = (
            pipeline
            | "Paths" >> beam.Create(self._paths)
            | "Read" >> beam.Map(lambda path: (path, timed_read(path)))
            | "Parse"
            >> beam.FlatMapTuple(
                lambda path, data: timed_items(READ, READ, parse_captions(path, data))
            )
        )
        if not self._merge:
            _ = (
                captions
                | "ImageSources"
                >> beam.Map(lambda caption: (caption.image_id, caption.source)).with_output_types(
                    tuple[str, str]
                )
                | "Distinct" >> beam.Distinct()
                | "ByImage" >> beam.GroupByKey()
                | "OneSourceEach" >> beam.Map(check_one_source)
            )
        return captions


class ReadLines(beam.PTransform):
    """Caption files of the parallel layout, each read in parallel with the image list."""

    def __init__(self, paths: list[str], *, images: str):
        super().__init__()
        self._paths, self._images = paths, images

    def expand(self, pipeline):
        images = (
            pipeline
            | "ImageListPath" >> beam.Create([self._images])
            | "ReadImageList" >> beam.Map(lambda path: parse_image_list(path, read_file(path)))
        )
        return (
            pipeline
            | "Paths" >> beam.Create(list(enumerate(self._paths)))
            | "Read" >> beam.MapTuple(lambda position, path: (position, path, timed_read(path)))
            | "Parse"
            >> beam.FlatMap(
                lambda file, images, images_path: timed_items(
                    READ, READ, parse_lines(*file, images, images_path)
                ),
                beam.pvalue.AsSingleton(images),
                self._images,
            )
        )
