"""The instance record: the one definition every writer and test uses.

An instance is one image, five options (the target caption and four decoys,
shuffled) and the label (the target's position). Decoy provenance is kept in
best-Score-first order in the ``decoy_*`` fields.

Example (Parquet row / TFRecord features / text line carry the same values)::

    {"example_id": "139_0", "split": "dev", "image_id": "139",
     "image_file": "000000000139.jpg", "image_url": "http://...",
     "options": ["a woman stands in the dining area", ...], "label": 2, ...}
"""

from dataclasses import dataclass

import pyarrow as pa

NUM_OPTIONS = 5


NUM_DECOYS = NUM_OPTIONS - 1


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # "string", "int64" or "float64"
    length: int | None  # values per instance of a list field; None: a scalar
    doc: str

    @property
    def repeated(self) -> bool:
        return self.length is not None


FIELDS: tuple[Field, ...] = (
    Field(
        "example_id",
        "string",
        None,
        "'<image_id>_<k>': the k-th caption of the image is the target",
    ),
    Field("split", "string", None, "train, dev or test"),
    Field("image_id", "string", None, "the image's id in the input corpus"),
    Field("image_file", "string", None, "the image's file name (COCO file_name, Flickr name)"),
    Field("image_url", "string", None, "COCO's coco_url; empty when the corpus has none"),
    Field("options", "string", NUM_OPTIONS, "5 normalised captions in shuffled order"),
    Field("label", "int64", None, "position of the target in options (0-4)"),
    Field("option_caption_ids", "string", NUM_OPTIONS, "caption id of each option"),
    Field("option_image_ids", "string", NUM_OPTIONS, "image id of each option's caption"),
    Field("target_caption_id", "string", None, "caption id of the target"),
    Field("decoy_caption_ids", "string", NUM_DECOYS, "the 4 decoys' caption ids, best Score first"),
    Field("decoy_image_ids", "string", NUM_DECOYS, "the 4 decoys' image ids, same order"),
    Field("decoy_sim_pv", "float64", NUM_DECOYS, "simPV(decoy, target), same order"),
    Field("decoy_sim_surf", "float64", NUM_DECOYS, "simSURF(decoy, target), same order"),
    Field("decoy_score", "float64", NUM_DECOYS, "Score(decoy, target), same order"),
)

_ARROW_TYPES = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64()}

ARROW_SCHEMA = pa.schema(
    [
        pa.field(
            f.name,
            pa.list_(_ARROW_TYPES[f.kind]) if f.repeated else _ARROW_TYPES[f.kind],
            nullable=False,
        )
        for f in FIELDS
    ]
)


def mcic_line(instance: dict) -> str:
    """The published MCIC-COCO text format (github.com/google/mcic-coco).

    ``answer_0..answer_4, image, example_id, reference``, tab-separated
    ``key=value`` pairs; ``reference`` is the label.
    """
    fields = [f"answer_{i}={option}" for i, option in enumerate(instance["options"])]
    fields += [
        f"image={instance['image_file']}",
        f"example_id={instance['example_id']}",
        f"reference={instance['label']}",
    ]
    return "\t".join(fields)


def parse_mcic_line(line: str) -> dict:
    """Inverse of :func:`mcic_line`, for readers of the text files."""
    values = dict(field.split("=", 1) for field in line.rstrip("\n").split("\t"))
    return {
        "options": [values[f"answer_{i}"] for i in range(NUM_OPTIONS)],
        "image_file": values["image"],
        "example_id": values["example_id"],
        "label": int(values["reference"]),
    }
