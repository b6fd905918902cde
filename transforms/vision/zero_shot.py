"""Zero-shot scoring of a dataset's instances with a contrastive model (``dmc-evaluate``).

Each dev and test instance's image (``--images`` / its ``image_file``) and each of its k
options are encoded as unit vectors; an option's score is its cosine with the image and
the argmax is the model's answer. Options are texts however they were built, so edited
options (forced choice) are scored like captions. An instance whose image is missing or
unreadable (decoded as dmc-features decodes one: a decompression bomb is unreadable) is
kept in the scores with ``image_found`` false and its ``image_problem``, and counted
(``evaluate/image_missing``, ``evaluate/image_unreadable``): never silently dropped.

The model is loaded once per worker process (a shared handle); instances are scored in
batches, each independently of the others in its batch (answers do not depend on how
instances are batched, scores only up to float rounding), and written in a fixed order.
"""

from dataclasses import dataclass

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared
from PIL import Image

from schemas.instance import option_set
from transforms.dataset.write import Format, WriteShards, known_shards
from transforms.progress import Progress
from transforms.trainer.metrics import EVALUATION_SPLITS
from transforms.vision.contrastive.base import ContrastiveModel, ModelSpec
from transforms.vision.contrastive.registry import load_model
from transforms.vision.features import parquet_bytes, read_image

NAMESPACE = "evaluate"
# the counters: the instances scored, and those whose image was not, by kind of problem
SCORED, MISSING, UNREADABLE = "scored", "image_missing", "image_unreadable"
NOT_FOUND = "not found"  # a missing image's image_problem; an unreadable one's is PIL's reason

SCORES_SCHEMA = pa.schema(
    [
        pa.field("example_id", pa.string()),
        pa.field("split", pa.string()),
        pa.field("image_id", pa.string()),
        pa.field("image_file", pa.string()),
        pa.field("image_found", pa.bool_()),  # the image was decoded and scored
        pa.field("image_problem", pa.string()),  # why not: NOT_FOUND or PIL's reason; "" if so
        pa.field("scores", pa.list_(pa.float64())),  # per option, in the instance's order
        pa.field("answer", pa.int64()),  # argmax of scores; -1 without an image
        pa.field("label", pa.int64()),
        pa.field("correct", pa.bool_()),
        pa.field("option_set", pa.string()),  # the instance's option caption ids, sorted
    ]
)


@dataclass(frozen=True)
class SharedModel:
    """The one contrastive model of a worker process (as ``features.SharedFeatureSpace``)."""

    shared: Shared
    spec: ModelSpec

    def acquire(self) -> ContrastiveModel:
        return self.shared.acquire(lambda: load_model(self.spec), tag=repr(self.spec))


def find_image(path: str) -> Image.Image | str:
    """The decoded image (as dmc-features decodes one), or why not: NOT_FOUND or the reason
    PIL could not read it."""
    if not FileSystems.exists(path):
        return NOT_FOUND
    return read_image(path)


def problem_kind(problem: str) -> str:
    """The counter of an instance by its ``image_problem`` ("": none, it was scored).

    >>> problem_kind(""), problem_kind(NOT_FOUND), problem_kind("not an image format PIL reads")
    ('scored', 'image_missing', 'image_unreadable')
    """
    if not problem:
        return SCORED
    return MISSING if problem == NOT_FOUND else UNREADABLE


def answer(scores: np.ndarray) -> int:
    """The option with the highest score; a tie goes to the first.

    >>> answer(np.array([0.1, 0.3, 0.3]))
    1
    """
    return int(np.argmax(scores))


def option_scores(images: np.ndarray, options: np.ndarray) -> np.ndarray:
    """Cosines of n images' unit vectors (n, d) with their k options' (n, k, d): (n, k).

    >>> option_scores(np.array([[1.0, 0.0]]), np.array([[[0.0, 1.0], [1.0, 0.0]]])).tolist()
    [[0.0, 1.0]]
    """
    return np.einsum("nd,nkd->nk", images, options)


def score_row(instance: dict, scored: np.ndarray | str) -> dict:
    """The scores file's row of an instance: ``scored`` its options' scores, or why its image
    was not scored."""
    found = not isinstance(scored, str)
    chosen = answer(scored) if found else -1
    return {
        "example_id": instance["example_id"],
        "split": instance["split"],
        "image_id": instance["image_id"],
        "image_file": instance["image_file"],
        "image_found": found,
        "image_problem": "" if found else scored,
        "scores": [float(score) for score in scored] if found else [],
        "answer": chosen,
        "label": int(instance["label"]),
        "correct": chosen == int(instance["label"]),
        "option_set": option_set(instance),
    }


def option_texts(instance: dict) -> list[str]:
    """The options as a contrastive model was trained to read them: each caption as written
    where the version keeps it (``option_originals``), else the normalised text (an edited
    option, or a version from before the field).

    >>> option_texts({"options": ["a dog", "a cat"], "option_originals": ["A dog.", ""]})
    ['A dog.', 'a cat']
    """
    originals = instance.get("option_originals") or [""] * len(instance["options"])
    return [original or text for text, original in zip(instance["options"], originals, strict=True)]


def score_instances(
    instances: list[dict], images: list[Image.Image | str], model: ContrastiveModel
) -> list[dict]:
    """Rows for a batch of instances and their decoded images (or why not)."""
    found = [k for k, image in enumerate(images) if isinstance(image, Image.Image)]
    scores: dict[int, np.ndarray] = {}
    if found:
        image_vectors = model.encode_images([images[k] for k in found])
        texts = [text for k in found for text in option_texts(instances[k])]
        num_options = len(instances[found[0]]["options"])
        option_vectors = model.encode_texts(texts).reshape(len(found), num_options, -1)
        scores = dict(zip(found, option_scores(image_vectors, option_vectors), strict=True))
    # an instance without scores gets why its image was not scored
    return [score_row(instance, scores.get(k, images[k])) for k, instance in enumerate(instances)]


class _Score(beam.DoFn):
    def __init__(self, model: SharedModel, images: str, total: int):
        self._model, self._images, self._total = model, images, total
        self._counters = {
            kind: Metrics.counter(NAMESPACE, kind) for kind in (SCORED, MISSING, UNREADABLE)
        }

    def setup(self):
        self._loaded = self._model.acquire()
        self._progress = Progress("zero-shot", "instances", self._total)

    def process(self, batch: list[dict]):
        images = [
            find_image(FileSystems.join(self._images, instance["image_file"])) for instance in batch
        ]
        rows = score_instances(batch, images, self._loaded)
        for row in rows:
            self._counters[problem_kind(row["image_problem"])].inc()
        self._progress.advance(len(rows))
        yield from rows


class ScoreInstances(beam.PTransform):
    """(file, instance) -> the scores file's row of every dev and test instance; ``total``
    of them, which its progress lines count down."""

    def __init__(self, *, model: SharedModel, images: str, batch_size: int, total: int):
        super().__init__()
        self._model, self._images, self._batch_size = model, images, batch_size
        self._total = total

    def expand(self, instances):
        return (
            instances
            | "Instances" >> beam.Values()
            | "DevAndTest" >> beam.Filter(lambda instance: instance["split"] in EVALUATION_SPLITS)
            | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=self._batch_size)
            | "Score" >> beam.ParDo(_Score(self._model, self._images, self._total))
        )


SCORES = "scores"  # the shards' name: scores-SSSSS-of-NNNNN.parquet


def scores_bytes(rows: list[dict]) -> bytes:
    return parquet_bytes(pa.Table.from_pylist(rows, schema=SCORES_SCHEMA))


def score_key(row: dict) -> str:
    """Rows by split, then example id, in each shard.

    >>> score_key({"split": "dev", "example_id": "9_0"})
    'dev/9_0'
    """
    return f"{row['split']}/{row['example_id']}"


class WriteScores(beam.PTransform):
    """Rows -> the scores folder: Parquet shards of about SHARD_CAPTIONS rows, each sorted
    (``score_key``), the same bytes whatever order the rows arrive in. ``total``: how many
    rows, which sets the shard count."""

    def __init__(self, *, folder: str, total: int):
        super().__init__()
        self._folder, self._total = folder, total

    def expand(self, rows):
        return rows | "Shards" >> WriteShards(
            output=self._folder,
            name=SCORES,
            formats=(Format("", ".parquet", scores_bytes),),
            key=score_key,
            plan=known_shards(rows.pipeline, SCORES, self._total, self._folder),
        )
