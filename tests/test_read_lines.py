"""The parallel-lines reader (--input_format lines): Multi30k's layout, and its errors."""

import dataclasses

import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.generate import input_checksums, main
from pipelines.options import GenerateOptions
from pipelines.store.manifest import read_inputs
from pipelines.store.versions import version_name
from schemas.records import RawCaption
from tests.support.local import local_pipeline
from transforms.corpus.read import LINES, ReadCaptions, parse_image_list, parse_lines
from transforms.errors import InputError

IMAGES = "1000092795.jpg\n10002456.jpg\n"


def _write(tmp_path, files: dict[str, bytes | str]) -> dict[str, str]:
    paths = {}
    for name, content in files.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths[name] = str(path)
    return paths


def _raw(caption_id: str, image: str, caption: str, source: str) -> RawCaption:
    return RawCaption(caption_id, image.split(".")[0], caption, image, "", source)


def test_each_caption_file_is_read_in_parallel_with_the_image_list(tmp_path):
    paths = _write(
        tmp_path,
        {
            "images.txt": IMAGES,
            "captions.1.de": "Zwei Männer im Garten.\nEin Mädchen springt.\n",
            "captions.2.de": "Männer schauen.\r\nEin Kind im Schwimmbecken\r\n",
        },
    )
    first, second = paths["captions.1.de"], paths["captions.2.de"]
    with local_pipeline() as pipeline:
        captions = pipeline | ReadCaptions([first, second], images=paths["images.txt"])
        assert_that(
            captions,
            equal_to(
                [
                    _raw("1000092795#0", "1000092795.jpg", "Zwei Männer im Garten.", first),
                    _raw("10002456#0", "10002456.jpg", "Ein Mädchen springt.", first),
                    _raw("1000092795#1", "1000092795.jpg", "Männer schauen.", second),
                    _raw("10002456#1", "10002456.jpg", "Ein Kind im Schwimmbecken", second),
                ]
            ),
        )


def test_empty_lines_are_captions_and_a_byte_order_mark_is_ignored():
    data = "\ufeffL\u2019homme court.\n\nUn chien\u2028noir.\n".encode()
    images = ["a.jpg", "b.jpg", "c.jpg"]
    captions = list(parse_lines(3, "captions.fr", data, images, "images.txt"))
    assert [(c.caption_id, c.caption) for c in captions] == [
        ("a#3", "L\u2019homme court."),
        ("b#3", ""),
        ("c#3", "Un chien\u2028noir."),
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b"Eins.\nZwei.\nDrei.\n",
            "captions.1.de: 3 lines, but the image list images.txt has 2; line i of a caption "
            "file describes the image on line i",
        ),
        (b"Eins.\n", "captions.1.de: 1 lines, but the image list images.txt has 2"),
        ("Männer.\n".encode() + b"M\xe4nner.\n", "captions.1.de: line 2: not UTF-8 (byte 10"),
    ],
)
def test_bad_caption_files_are_named_in_one_line(data, message):
    with pytest.raises(InputError) as raised:
        list(parse_lines(0, "captions.1.de", data, ["a.jpg", "b.jpg"], "images.txt"))
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"a.jpg\n\nb.jpg\n", "images.txt: line 2: empty; one image file name a line"),
        (b"a.jpg\nb.jpg\na.png\n", "images.txt: line 3: a.png has the image id a of line 1"),
        (b"a.jpg\n\xff.jpg\n", "images.txt: line 2: not UTF-8"),
        (b"a.jpg\nb\rc.jpg\n", r"images.txt: line 2: the image file name 'b\rc.jpg' holds a"),
        (b"a.jpg\rb.jpg\r", r"images.txt: line 1: the image file name 'a.jpg\rb.jpg' holds"),
        (b"a.jpg\nb\tc.jpg\n", r"images.txt: line 2: the image file name 'b\tc.jpg' holds a"),
        ("a.jpg\nb\u2028.jpg\n".encode(), "images.txt: line 2: the image file name 'b\\u2028"),
    ],
)
def test_bad_image_lists_are_named_in_one_line(data, message):
    with pytest.raises(InputError) as raised:
        parse_image_list("images.txt", data)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_cli_refuses_a_cr_in_an_image_list_in_one_line_before_any_work(tmp_path, capsys):
    paths = _write(tmp_path, {"images.txt": "a.jpg\nb\r.jpg\n", "captions.de": "Eins.\nZwei.\n"})
    output = tmp_path / "out"
    argv = ["--input", paths["captions.de"], "--output", str(output), "--input_format", LINES]
    assert main([*argv, "--image_list", paths["images.txt"]]) == 2
    assert capsys.readouterr().err == (
        f"error: {paths['images.txt']}: line 2: the image file name 'b\\r.jpg' holds a control "
        "character (U+000D); file names cannot hold tabs, line breaks or other control "
        "characters: rename the image\n"
    )
    assert not list(output.glob("versions/*"))  # refused before a version was begun


def test_a_wrong_line_count_fails_the_pipeline_naming_both_files(tmp_path):
    paths = _write(tmp_path, {"images.txt": IMAGES, "captions.1.cs": "Pes běží.\n"})
    expected = r"captions\.1\.cs: 1 lines, but the image list .*has 2"
    with pytest.raises(Exception, match=expected), local_pipeline() as pipeline:
        _ = pipeline | ReadCaptions([paths["captions.1.cs"]], images=paths["images.txt"])


def test_the_option_needs_its_image_list_and_the_list_needs_the_option():
    options = GenerateOptions(input="a", output="b")
    with pytest.raises(InputError, match="--input_format lines needs --image_list"):
        dataclasses.replace(options, input_format=LINES).validate()
    with pytest.raises(InputError, match="--image_list is read with --input_format lines only"):
        dataclasses.replace(options, image_list="images.txt").validate()
    dataclasses.replace(options, input_format=LINES, image_list="images.txt").validate()


def test_the_image_list_names_the_version_by_its_content_not_its_path(tmp_path):
    paths = _write(
        tmp_path,
        {"captions.1.de": "Ein Hund.\nEine Katze.\n", "a.txt": IMAGES, "b.txt": IMAGES},
    )
    other = _write(tmp_path / "..", {"c.txt": "1.jpg\n2.jpg\n"})["c.txt"]
    options = GenerateOptions(
        input=paths["captions.1.de"], output="out", input_format=LINES, image_list=paths["a.txt"]
    )

    def name(images: str) -> str:
        changed = dataclasses.replace(options, image_list=images)
        corpus, _ = read_inputs([paths["captions.1.de"]], images)
        return version_name(changed, input_checksums(changed, corpus))

    assert name(paths["b.txt"]) == name(paths["a.txt"])
    assert name(other) != name(paths["a.txt"])
    with pytest.raises(InputError, match=r"--image_list .*nothing\.txt: no such file"):
        name(str(tmp_path / "nothing.txt"))


def test_the_default_format_leaves_existing_version_names_alone():
    checksums = [{"sha256": "a" * 64}]
    default = GenerateOptions(input="a", output="b")
    before = dataclasses.make_dataclass(  # the options before --input_format and --image_list
        "GenerateOptions",
        [
            (f.name, f.type, dataclasses.field(default=f.default))
            for f in dataclasses.fields(GenerateOptions)
            if f.name not in ("input_format", "image_list")
        ],
    )
    assert version_name(before(input="a", output="b"), checksums) == version_name(
        default, checksums
    )
    lines = dataclasses.replace(default, input_format=LINES, image_list="i.txt")
    assert version_name(lines, checksums) != version_name(default, checksums)
