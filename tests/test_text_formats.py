"""Text formats cannot be broken by their content: every field of the MCIC text lines, the
rating job's CSV files and the skipped-records JSON lines reads back as it was written,
whatever characters it holds."""

import csv
import io
import random

import pytest

from pipelines.rate import answers_csv, crowd_csv
from schemas.instance import MCIC_OPTIONS, escape_text, mcic_line, parse_mcic_line
from schemas.records import Skip
from transforms.dataset.statistics import parse_skip_lines, skip_line
from transforms.report.ratings import Answer, read_answers

# What splits a field or a line somewhere: tab, CR, LF, NUL, the line and paragraph
# separators, other C0 and C1 controls, DEL, and the escape character itself, alone and
# as the text of an escape.
HOSTILE = ["\t", "\r", "\n", "\r\n", "\0", "\u2028", "\u2029", "\x0b", "\x1e", "\x85", "\x7f"]
HOSTILE += ["\\", "\\t", "\\u2028", "\\\\n", "=", '"', ",", "'"]
ORDINARY = [*"ab =.#_", "ü", "二", "\u200f", "😀"]
MCIC_FIELDS = [*(f"option {i}" for i in range(MCIC_OPTIONS)), "image_file", "example_id"]


def _instance(values: dict[str, str]) -> dict:
    """An instance of the MCIC text format's fields, ``values`` replacing the plain ones."""
    plain = {field: f"plain {field}" for field in MCIC_FIELDS} | values
    return {
        "options": [plain[f"option {i}"] for i in range(MCIC_OPTIONS)],
        "image_file": plain["image_file"],
        "example_id": plain["example_id"],
        "label": 3,
    }


def _one_line(line: str) -> str:
    """The line as a file holds it, checked to stay one line for any line splitter."""
    assert line.splitlines() == [line] and line.count("\t") == len(MCIC_FIELDS)
    assert "\0" not in line
    return f"{line}\n"


@pytest.mark.parametrize("field", MCIC_FIELDS)
@pytest.mark.parametrize("text", HOSTILE, ids=ascii)
def test_every_mcic_field_round_trips_whatever_it_holds(field, text):
    instance = _instance({field: f"a{text}b{text}"})
    assert parse_mcic_line(_one_line(mcic_line(instance))) == instance


def test_random_mcic_instances_round_trip():
    rng = random.Random(0)
    alphabet = HOSTILE + ORDINARY
    for _ in range(500):
        values = {
            field: "".join(rng.choices(alphabet, k=rng.randrange(12))) for field in MCIC_FIELDS
        }
        instance = _instance(values)
        assert parse_mcic_line(_one_line(mcic_line(instance))) == instance


def test_ordinary_text_is_written_as_it_is():
    """Only what would break a line is escaped: the published format's files are unchanged."""
    text = "a man = 2 dogs # L\u2019homme 二人 \u200f."
    assert escape_text(text) == text
    assert mcic_line(_instance({"option 0": text})).split("\t")[0] == f"answer_0={text}"


def test_the_escapes_are_the_documented_ones():
    assert escape_text("\\ \t \n \r \0 \x01 \x85 \u2028 \u2029") == (
        r"\\ \t \n \r \0 \u0001 \u0085 \u2028 \u2029"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("answer_0=a\tanswer_1=b\n", "not an MCIC line"),
        (mcic_line(_instance({})).replace("\timage=", "\ta\tb\timage="), "not an MCIC line"),
        (mcic_line(_instance({})).replace("image=", "image"), "not an MCIC line"),
        (mcic_line(_instance({"image_file": "a.jpg"})).replace("a.jpg", r"a\q.jpg"), r"\\q"),
        (mcic_line(_instance({"image_file": "a.jpg"})).replace("a.jpg", "a.jpg\\"), "escape"),
        (mcic_line(_instance({"image_file": "a.jpg"})).replace("a.jpg", r"\u12"), r"\\u"),
    ],
)
def test_a_malformed_mcic_line_is_refused_saying_why(line, message):
    with pytest.raises(ValueError, match=message):
        parse_mcic_line(line)


def _item(example_id: str, options: list[str], image_file: str) -> dict:
    return {"example_id": example_id, "options": options, "image_file": image_file}


@pytest.mark.parametrize("text", HOSTILE, ids=ascii)
def test_crowd_csv_reads_back_every_field(text):
    items = [
        _item(f"1_0{text}", [f"x{text}y", "plain", text, "b", "c"], f"1{text}.jpg"),
        _item("2_0", ["d", "e", "f", "g", "h"], "2.jpg"),
    ]
    data, no_image = crowd_csv(items, seed=0, image_base_url=f"http://x/{text}/")
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))
    assert no_image == 0 and len(rows) == len(items)
    for row, item in zip(rows, items, strict=True):
        order = [int(row[f"option_{i}_index"]) for i in range(1, 6)]
        assert row["example_id"] == item["example_id"]
        assert row["image_url"] == f"http://x/{text}/{item['image_file']}"
        assert [row[f"option_{i}"] for i in range(1, 6)] == [item["options"][i] for i in order]


@pytest.mark.parametrize("text", HOSTILE, ids=ascii)
def test_answers_csv_reads_back_as_the_answers_it_holds(text):
    answers = [
        Answer(f"rater{text}", f"1_0{text}", 2, 3.5, "a.json: row 1"),
        Answer("r", "2_0", 0, 1.0, f"b{text}.csv: row 2"),
    ]
    read, malformed = read_answers("answers.csv", answers_csv(answers))
    assert malformed == []
    assert [(a.rater, a.example_id, a.option, a.seconds) for a in read] == [
        (a.rater, a.example_id, a.option, a.seconds) for a in answers
    ]
    rows = list(csv.DictReader(io.StringIO(answers_csv(answers).decode(), newline="")))
    assert [row["source"] for row in rows] == [a.where for a in answers]


@pytest.mark.parametrize("text", HOSTILE, ids=ascii)
def test_the_rating_apps_csv_reads_back(text):
    """The app's CSV download as rating_app.js writes it: every value quoted, quotes doubled,
    lines ended by LF."""
    values = [f"rater{text}", f"1_0{text}", "2", f"a{text}caption", "3.5"]
    line = ",".join('"{}"'.format(value.replace('"', '""')) for value in values)
    data = f"rater,example_id,option,option_text,seconds\n{line}\n".encode()
    [answer], malformed = read_answers("answers-j-r.csv", data)
    assert malformed == []
    assert (answer.rater, answer.example_id, answer.option_text) == (
        values[0],
        values[1],
        values[3],
    )


@pytest.mark.parametrize("text", HOSTILE, ids=ascii)
def test_skipped_records_round_trip(text):
    skips = [
        Skip(f"normalize/{text}", f"caption{text}", f"dev{text}"),
        Skip("decoys/x", "7", ""),
    ]
    data = "".join(f"{skip_line(skip)}\n" for skip in skips).encode("utf-8")
    assert data.count(b"\n") == len(skips) and data.isascii()
    assert parse_skip_lines("skipped-00000-of-00001.jsonl", data) == skips


def test_a_malformed_skipped_line_is_named_by_file_and_line():
    data = f"{skip_line(Skip('a', 'b'))}\n{{\n".encode()
    with pytest.raises(ValueError, match=r"^s\.jsonl: line 2: malformed JSON"):
        parse_skip_lines("s.jsonl", data)
