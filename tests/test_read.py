"""Readers: both formats, and a clear error for every kind of bad input."""

import json
import re

import pytest

from pipelines.generate import main
from transforms.corpus.read import expand_inputs, parse_captions
from transforms.errors import InputError
from transforms.files import read_file

COCO = {
    "images": [
        {"id": 7, "file_name": "COCO_val2014_000000000007.jpg", "coco_url": "http://x/7.jpg"},
        {"id": 8, "file_name": "8.jpg"},
    ],
    "annotations": [
        {"id": 70, "image_id": 7, "caption": "A dog."},
        {"id": 80, "image_id": 8, "caption": "A cat."},
    ],
}


def _parse(data: bytes, path="in.json"):
    return list(parse_captions(path, data))


def test_coco_records_carry_image_metadata():
    records = _parse(json.dumps(COCO).encode())
    assert [(r.caption_id, r.image_id, r.caption, r.file_name, r.url) for r in records] == [
        ("70", "7", "A dog.", "COCO_val2014_000000000007.jpg", "http://x/7.jpg"),
        ("80", "8", "A cat.", "8.jpg", ""),
    ]


def test_flickr_token_lines():
    data = b"1000.jpg#0\tA child in pink.\n\n1000.jpg#1\tA girl going up stairs .\n"
    records = _parse(data, "Flickr8k.token.txt")
    assert [(r.caption_id, r.image_id, r.file_name) for r in records] == [
        ("1000.jpg#0", "1000.jpg", "1000.jpg"),
        ("1000.jpg#1", "1000.jpg", "1000.jpg"),
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"images": [], "annotations": [', "in.json: malformed JSON at line 1"),
        (b'{"images": ' + b"[" * 100_000, "in.json: JSON nested too deeply to read"),
        (b"[1, 2]", "in.json: a JSON array; a COCO captions file is a JSON object"),
        (json.dumps({"images": []}).encode(), "in.json: no 'annotations' list"),
        (
            json.dumps(
                {**COCO, "annotations": [{"id": 9, "image_id": 99, "caption": "x"}]}
            ).encode(),
            "in.json: annotations[0] (id 9) refers to image_id 99, which is not in 'images'",
        ),
        (
            json.dumps({**COCO, "annotations": [{"id": 9, "image_id": 7}]}).encode(),
            "in.json: annotations[0] has no 'caption'",
        ),
        (b'{"images": [], "annotations": ["caf\xe9"]}', "in.json: line 1: not UTF-8 (byte 35"),
        (b"1000.jpg A child\n", "in.json: line 1: expected '<image file>#<k><TAB><caption>'"),
        (
            json.dumps(
                {
                    **COCO,
                    "annotations": [
                        *COCO["annotations"],
                        {**COCO["annotations"][0], "image_id": 8},
                    ],
                }
            ).encode(),
            "in.json: annotations[2] has caption id 70 like annotations[0]: caption ids must be",
        ),
        (
            b"1.jpg#0\tA dog.\n2.jpg#0\tA cat.\n\n1.jpg#0\tA cat.\n",
            "in.json: line 4 has caption id 1.jpg#0 like line 1: caption ids must be unique",
        ),
    ],
)
def test_bad_input_names_file_and_record(data, message):
    with pytest.raises(InputError) as raised:
        _parse(data)
    assert str(raised.value).startswith(message)


def _coco_with_file_name(file_name: str) -> bytes:
    images = [COCO["images"][0], {"id": 8, "file_name": file_name}]
    return json.dumps({**COCO, "images": images}).encode()


@pytest.mark.parametrize(
    ("file_name", "code"),
    [
        ("8\t.jpg", "U+0009"),
        ("8\n.jpg", "U+000A"),
        ("8.jpg\r", "U+000D"),
        ("\x008.jpg", "U+0000"),
        ("8\x1b.jpg", "U+001B"),
        ("8\x85.jpg", "U+0085"),
        ("8\u2028.jpg", "U+2028"),
        ("8\u2029.jpg", "U+2029"),
    ],
    ids=ascii,
)
def test_a_coco_file_name_with_a_control_character_is_refused_naming_file_and_image(
    file_name, code
):
    """Refused when the images are read, before any caption is, in one line naming the file
    and the image: a tab or line break would otherwise break the text files at the end."""
    with pytest.raises(InputError) as raised:
        next(parse_captions("in.json", _coco_with_file_name(file_name)))
    message = str(raised.value)
    assert message.startswith(f"in.json: images[1] (id 8): the image file name {file_name!r} ")
    assert f"holds a control character ({code})" in message
    assert len(message.splitlines()) == 1


def test_a_flickr_file_name_with_a_control_character_is_refused_naming_file_and_line():
    data = b"1.jpg#0\tA dog.\n2\x00.jpg#0\tA cat.\n"
    with pytest.raises(InputError, match=r"^in\.txt: line 2: the image file name '2\\x00\.jpg'"):
        _parse(data, "in.txt")


def test_cli_refuses_a_tab_in_a_coco_file_name_in_one_line_before_any_work(tmp_path, capsys):
    bad = tmp_path / "captions_bad.json"
    bad.write_bytes(_coco_with_file_name("8\t.jpg"))
    output = tmp_path / "out"
    code, err = _run_cli(capsys, "--input", str(bad), "--output", str(output))
    assert code == 2
    assert err == (
        f"error: {bad}: images[1] (id 8): the image file name '8\\t.jpg' holds a control "
        "character (U+0009); file names cannot hold tabs, line breaks or other control "
        "characters: rename the image\n"
    )
    assert not list(output.glob("versions/*"))  # refused before a version was begun


def test_missing_input_names_the_pattern(tmp_path):
    with pytest.raises(InputError, match=r"nothing_here\.json: no such file"):
        expand_inputs(str(tmp_path / "nothing_here.json"))


def test_globs_and_commas_expand_to_distinct_sorted_files(tmp_path):
    for name in ("b.json", "a.json"):
        (tmp_path / name).write_text("{}")
    spec = f"{tmp_path}/*.json,{tmp_path}/a.json"
    assert expand_inputs(spec) == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    assert read_file(str(tmp_path / "a.json")) == b"{}"


def _run_cli(capsys, *args):
    code = main(list(args))
    return code, capsys.readouterr().err


def test_cli_reports_bad_json_in_one_line_without_a_traceback(tmp_path, capsys):
    bad = tmp_path / "captions_bad.json"
    bad.write_text('{"images": [], "annotations": [}')
    code, err = _run_cli(capsys, "--input", str(bad), "--output", str(tmp_path / "out"))
    assert code == 2
    assert err.startswith(f"error: {bad}: malformed JSON at line 1, column 32")
    assert "Traceback" not in err


def test_cli_reports_an_empty_corpus(tmp_path, capsys):
    empty = tmp_path / "captions_empty.json"
    empty.write_text(
        json.dumps(
            {
                "images": [{"id": 1, "file_name": "1.jpg"}],
                "annotations": [{"id": 1, "image_id": 1, "caption": "!!"}],
            }
        )
    )
    code, err = _run_cli(
        capsys,
        "--input",
        str(empty),
        "--output",
        str(tmp_path / "out"),
        "--n_dev",
        "0",
        "--n_test",
        "0",
    )
    assert code == 2
    assert "no captions left after normalisation" in err


@pytest.mark.parametrize(
    "runner_args",
    [
        pytest.param([], id="in-process"),
        pytest.param(
            ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"],
            id="worker-processes",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_cli_reports_a_corpus_too_small_for_n_in_one_line(
    tmp_path, capsys, synthetic_corpus, runner_args
):
    args = ["--input", synthetic_corpus, "--output", str(tmp_path / "out"), "--n_dev", "10"]
    args += ["--n_test", "10", "--neighbours", "5000", *runner_args]
    code, err = _run_cli(capsys, *args)
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert re.match(r"error: the (corpus|train split) has \d+ captions, so image \d+ has", last)
    assert last.endswith("fewer than --neighbours 5000: lower --neighbours or add captions")


def test_cli_reports_too_few_images_for_the_splits(tmp_path, capsys, synthetic_corpus):
    code, err = _run_cli(capsys, "--input", synthetic_corpus, "--output", str(tmp_path / "out"))
    assert code == 2
    assert "the corpus has 300 images, fewer than n_dev + n_test = 2000 + 2000" in err


def test_coco_captions_in_utf8_read_intact_in_any_language():
    captions = [
        "Zwei Männer schauen auf die Straße.",
        "L\u2019homme d\u2019affaires",
        "二人の男性が庭にいる",
    ]
    document = {
        "images": [{"id": 1, "file_name": "1.jpg"}],
        "annotations": [
            {"id": k, "image_id": 1, "caption": caption} for k, caption in enumerate(captions)
        ],
    }
    for data in (json.dumps(document).encode(), json.dumps(document, ensure_ascii=False).encode()):
        assert [r.caption for r in _parse(data)] == captions


def test_flickr_captions_in_utf8_read_intact_in_any_language():
    data = "\ufeff1.jpg#0\tŽena s deštníkem.\n1.jpg#1\t一个男人在骑自行车 。\n".encode()
    records = _parse(data, "captions.token")
    assert [r.caption for r in records] == ["Žena s deštníkem.", "一个男人在骑自行车 。"]
