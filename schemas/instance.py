"""The instance record: the one definition every writer and test uses.

An instance is one image, k options (the target and k - 1 decoys, shuffled)
and the label (the target's position). k is a property of the decoy strategy
(5 for MC-IC, 4 for Visual Madlibs, 2 for forced choice) and the same for every
instance of a version. Decoy provenance is kept in the strategy's preference
order in the ``decoy_*`` fields.

An option is a corpus caption, or text built from one (forced choice edits a
caption, or keeps only a chunk of it): its ``option_caption_ids`` entry names
the caption the text comes from and its ``option_edits`` entry says what was
done ("" for the caption as it is), so every option is traceable to the corpus.

Example (Parquet row / TFRecord features / text line carry the same values)::

    {"example_id": "139_0", "split": "dev", "image_id": "139",
     "image_file": "000000000139.jpg", "image_url": "http://...",
     "options": ["a woman stands in the dining area", ...], "label": 2, ...}
"""

import re
from dataclasses import dataclass

import pyarrow as pa

MCIC_OPTIONS = 5  # the MCIC text format has exactly five answers
OPTION, DECOY = "option", "decoy"  # what a list field has one value per


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # "string", "int64" or "float64"
    per: str | None  # OPTION or DECOY: one value per option (k) or decoy (k - 1); None: a scalar
    doc: str

    @property
    def repeated(self) -> bool:
        return self.per is not None

    def length(self, num_options: int) -> int | None:
        """Values per instance in a version whose instances have ``num_options`` options."""
        return {None: None, OPTION: num_options, DECOY: num_options - 1}[self.per]


FIELDS: tuple[Field, ...] = (
    Field(
        "example_id",
        "string",
        None,
        "'<image_id>_<k>': the k-th caption of the image is the target; '.2', '.3', ... "
        "follow when that caption is the target of several instances (closed_sets' "
        "--set_memberships)",
    ),
    Field("split", "string", None, "train, dev or test"),
    Field("image_id", "string", None, "the image's id in the input corpus"),
    Field("image_file", "string", None, "the image's file name (COCO file_name, Flickr name)"),
    Field("image_url", "string", None, "COCO's coco_url; empty when the corpus has none"),
    Field("options", "string", OPTION, "k normalised option texts in shuffled order"),
    Field(
        "option_originals",
        "string",
        OPTION,
        "each option's caption as written in the input, before normalisation; '' if edited",
    ),
    Field("label", "int64", None, "position of the target in options (0 to k - 1)"),
    Field("option_caption_ids", "string", OPTION, "caption id each option's text comes from"),
    Field("option_image_ids", "string", OPTION, "image id of that caption"),
    Field("option_edits", "string", OPTION, "how the text was built from it; '' if unedited"),
    Field("target_caption_id", "string", None, "caption id of the target"),
    Field("decoy_caption_ids", "string", DECOY, "each decoy's source caption id, preferred first"),
    Field("decoy_image_ids", "string", DECOY, "the decoys' image ids, same order"),
    Field("decoy_edits", "string", DECOY, "how each decoy was built from its caption; '' if not"),
    Field("decoy_sim_pv", "float64", DECOY, "simPV(decoy, target), same order; NaN if edited"),
    Field("decoy_sim_surf", "float64", DECOY, "simSURF(decoy, target), same order; NaN if edited"),
    Field("decoy_score", "float64", DECOY, "Score(decoy, target), same order; NaN if edited"),
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


def option_set(instance: dict) -> str:
    """A closed set's identity, which its instances share: their options' caption ids, sorted.

    The instances of a set show the same captions, each the target of one of them, so
    their sorted caption ids are equal and no other instance's are (two captions of the
    same text, on different images, keep two ids). The trainer and dmc-evaluate both
    score sets by it.

    >>> option_set({"option_caption_ids": ["9", "2", "5"]})
    '2 5 9'
    """
    return " ".join(sorted(instance["option_caption_ids"]))


# The MCIC text format is tab-separated lines: a raw tab or line break in a value would shift
# every field after it. So every value is escaped: backslash, tab, LF, CR and NUL as \\ \t \n
# \r \0; every other control character (C0, DEL, C1) and U+2028/U+2029, where str.splitlines
# breaks lines, as \uXXXX. Other text is written as it is (docs/output.md).
_SHORT_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0"}
_SHORT_UNESCAPES = {escape[1]: char for char, escape in _SHORT_ESCAPES.items()}
# what no line of a text format may hold raw: C0 and C1 controls, DEL, U+2028/U+2029
CONTROL_CHARACTERS = r"\x00-\x1f\x7f-\x9f\u2028\u2029"
_NEEDS_ESCAPE = re.compile(rf"[\\{CONTROL_CHARACTERS}]")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.?)", re.DOTALL)
MCIC_KEYS = (*(f"answer_{i}" for i in range(MCIC_OPTIONS)), "image", "example_id", "reference")


def escape_text(value: str) -> str:
    r"""``value`` with nothing left in it that ends a field or a line of a text format.

    >>> escape_text("a\tb\\c\u2028")
    'a\\tb\\\\c\\u2028'
    """
    return _NEEDS_ESCAPE.sub(
        lambda found: _SHORT_ESCAPES.get(found[0], f"\\u{ord(found[0]):04x}"), value
    )


def unescape_text(value: str) -> str:
    r"""Inverse of :func:`escape_text`; an escape it never writes is a ValueError.

    >>> unescape_text(r"a\tb\\c\u2028") == "a\tb\\c\u2028"
    True
    """

    def one(found: re.Match) -> str:
        code = found[1]
        if len(code) == 5:  # u and four hex digits
            return chr(int(code[1:], 16))
        if code not in _SHORT_UNESCAPES:
            raise ValueError(f"unknown escape {found[0]!r} in {value[:80]!r}")
        return _SHORT_UNESCAPES[code]

    return _ESCAPE.sub(one, value)


def mcic_line(instance: dict) -> str:
    """The published MCIC-COCO text format (github.com/google/mcic-coco): five options only.

    ``answer_0..answer_4, image, example_id, reference``, tab-separated
    ``key=value`` pairs; ``reference`` is the label. Values are escaped
    (:func:`escape_text`): a tab or line break in a file name cannot break the line.
    """
    texts = [*instance["options"], instance["image_file"], instance["example_id"]]
    fields = [f"{key}={escape_text(text)}" for key, text in zip(MCIC_KEYS[:-1], texts, strict=True)]
    return "\t".join([*fields, f"reference={instance['label']}"])


def parse_mcic_line(line: str) -> dict:
    """Inverse of :func:`mcic_line`, for readers of the text files. A malformed line is a
    ValueError saying what is wrong; the caller names the file and line."""
    pairs = [field.partition("=") for field in line.rstrip("\n").split("\t")]
    if tuple(key for key, _, _ in pairs) != MCIC_KEYS or not all(eq for _, eq, _ in pairs):
        raise ValueError(
            f"not an MCIC line (tab-separated {', '.join(MCIC_KEYS)}, each key=value): "
            f"{line[:80]!r}"
        )
    values = {key: unescape_text(value) for key, _, value in pairs}
    return {
        "options": [values[f"answer_{i}"] for i in range(MCIC_OPTIONS)],
        "image_file": values["image"],
        "example_id": values["example_id"],
        "label": int(values["reference"]),
    }
