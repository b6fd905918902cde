"""Image files -> feature vectors, the Beam stages of dmc-features.

Each image file is read through Beam's filesystems (local or gs://), decoded (PIL) and
preprocessed by the encoder's own transforms; the pixels are batched and encoded by the
model, loaded once per worker process (``Shared``). An image is named by its file's base
name ("COCO_train2014_000000000009.jpg"), which dmc-train matches against the dataset's
file names. A file that cannot be decoded (a decompression bomb included) is skipped,
counted (``features/unreadable``) and listed with the reason, never dropped in silence.
``read_image`` is the one way both dmc-features and dmc-evaluate read an image file.
"""

import io
import os
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared
from PIL import Image

from schemas.image_features import FEATURES_COLUMN, IMAGE_COLUMN
from schemas.records import SKIPPED
from transforms.errors import InputError
from transforms.files import read_file, storage_problem
from transforms.progress import Progress
from transforms.vision.encoders.base import EncoderSpec, ImageEncoder, first_line
from transforms.vision.encoders.registry import load_encoder

NAMESPACE = "features"
UNREADABLE = "unreadable"


def image_id(path: str) -> str:
    """ "gs://b/train2014/COCO_train2014_000000000009.jpg" -> "COCO_train2014_000000000009.jpg"."""
    return os.path.basename(path.rstrip("/"))


def check_image_ids(paths: list[str]) -> None:
    """Every image's id (its base name) names one file: the trainer needs one vector each,
    and matches it by file name.

    >>> check_image_ids(["a/x.jpg", "b/x.jpg"])
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: two image files are named x.jpg: a/x.jpg and b/x.jpg
    """
    first: dict[str, str] = {}
    for path in paths:
        other = first.setdefault(image_id(path), path)
        if other != path:
            raise InputError(f"two image files are named {image_id(path)}: {other} and {path}")


def decode(data: bytes) -> Image.Image:
    """The file's picture in RGB; PIL's OSError (not an image, truncated), ValueError or
    DecompressionBombError (over twice ``Image.MAX_IMAGE_PIXELS``: a tiny file that would
    take gigabytes decoded) if it is none."""
    picture = Image.open(io.BytesIO(data))
    picture.load()
    return picture.convert("RGB")


def unreadable_reason(error: Exception) -> str:
    """Why PIL could not read a file, in words that do not change from run to run.

    >>> unreadable_reason(Image.UnidentifiedImageError("cannot identify image file <...>"))
    'not an image format PIL reads'
    >>> unreadable_reason(OSError("image file is truncated (3 bytes not processed)"))
    'image file is truncated (3 bytes not processed)'
    """
    if isinstance(error, Image.UnidentifiedImageError):  # its message names a buffer's address
        return "not an image format PIL reads"
    return first_line(error)


def read_image(path: str) -> Image.Image | str:
    """The file's picture in RGB, or why PIL cannot read it (not an image, truncated, a
    decompression bomb): a bad file is its caller's to count, not a crash. A file the
    filesystem cannot give (permissions, network) is an InputError naming it: the run stops.
    """
    try:
        data = read_file(path)
    except Exception as error:  # each filesystem raises its own: the run stops, naming it
        raise InputError(f"{path}: cannot read it: {storage_problem(error)}") from error
    try:
        return decode(data)
    except (OSError, ValueError, Image.DecompressionBombError) as error:
        return unreadable_reason(error)


def features_table(rows: list[tuple[str, np.ndarray]]) -> pa.Table:
    """(image id, vector) rows -> the Parquet table dmc-train reads, sorted by image id."""
    rows = sorted(rows, key=lambda row: row[0])
    vectors = [np.asarray(vector, dtype=np.float32).tolist() for _, vector in rows]
    return pa.table(
        {
            IMAGE_COLUMN: pa.array([image for image, _ in rows], pa.string()),
            FEATURES_COLUMN: pa.array(vectors, pa.list_(pa.float32())),
        }
    )


def parquet_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


@dataclass(frozen=True)
class SharedEncoder:
    """The one encoder of a worker process, loaded on first use by whichever stage asks."""

    shared: Shared
    spec: EncoderSpec

    def acquire(self) -> ImageEncoder:
        return self.shared.acquire(lambda: load_encoder(self.spec), tag=repr(self.spec))


class _Decode(beam.DoFn):
    def __init__(self, encoder: SharedEncoder, total: int):
        self._encoder, self._total = encoder, total
        self._unreadable = Metrics.counter(NAMESPACE, UNREADABLE)

    def setup(self):
        self._progress = Progress(NAMESPACE, "images decoded", self._total)
        self._model = self._encoder.acquire()  # held: Shared keeps only a weak reference

    def process(self, path: str):
        self._progress.advance(1)
        picture = read_image(path)
        if isinstance(picture, str):
            self._unreadable.inc()
            yield beam.pvalue.TaggedOutput(SKIPPED, {"file": path, "why": picture})
            return
        yield image_id(path), self._model.preprocess(picture)


class _Encode(beam.DoFn):
    def __init__(self, encoder: SharedEncoder, total: int):
        self._encoder, self._total = encoder, total

    def setup(self):
        self._progress = Progress(NAMESPACE, "images encoded", self._total)
        self._model = self._encoder.acquire()

    def process(self, batch: list[tuple[str, np.ndarray]]):
        vectors = self._model.encode(np.stack([pixels for _, pixels in batch]))
        self._progress.advance(len(batch))
        yield from zip([image for image, _ in batch], vectors, strict=True)


class EncodeImages(beam.PTransform):
    """Image file paths -> {"features": (image id, vector), SKIPPED: {"file", "why"}}.

    ``total``: how many paths, for the progress lines. Batches hold ``batch_size`` images
    (the last one fewer).
    """

    def __init__(self, *, encoder: SharedEncoder, batch_size: int, total: int):
        super().__init__()
        self._encoder, self._batch_size, self._total = encoder, batch_size, total

    def expand(self, paths):
        decoded = paths | "Decode" >> beam.ParDo(_Decode(self._encoder, self._total)).with_outputs(
            SKIPPED, main="pixels"
        )
        features = (
            decoded.pixels
            | "Batch"
            >> beam.BatchElements(min_batch_size=self._batch_size, max_batch_size=self._batch_size)
            | "Encode" >> beam.ParDo(_Encode(self._encoder, self._total))
        )
        return {"features": features, SKIPPED: decoded[SKIPPED]}
