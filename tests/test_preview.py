"""The HTML preview: its rendering on inline instances, then a generated dataset's preview
as Debian's headless chromium renders it."""

import glob
import html
import io
import json
import os
import pathlib
import random
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

import numpy as np
import pyarrow.parquet as pq
import pytest
from google.cloud import storage
from matplotlib.image import imsave

from pipelines.options import GenerateOptions
from pipelines.preview import INDEX_FILE, main
from schemas.layout import PARQUET, shard_pattern
from tests.support.gcs_emulator import PROJECT, gcs_servers
from tests.support.versions import SMALL_MCIC
from transforms.corpus.split import SPLITS
from transforms.report.preview import (
    LOCAL,
    MISSING,
    URL,
    Image,
    image_source,
    render_instance,
    sample,
)
from transforms.seeds import keyed_int

CHROMIUM_TIMEOUT = 120  # seconds; a page of a few dozen instances renders in about one


class Element:
    def __init__(self, tag: str, attrs: list[tuple[str, str | None]]):
        self.tag, self.attrs = tag, {name: value or "" for name, value in attrs}
        self.parts: list = []  # text and child elements, in document order

    def text(self) -> str:
        return "".join(part if isinstance(part, str) else part.text() for part in self.parts)

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def find_all(self, tag: str, cls: str = "") -> list["Element"]:
        found = []
        for part in self.parts:
            if isinstance(part, Element):
                if part.tag == tag and (not cls or cls in part.classes()):
                    found.append(part)
                found += part.find_all(tag, cls)
        return found

    def cell(self, cls: str) -> str:
        [cell] = self.find_all("td", cls)
        return cell.text()


class TreeBuilder(HTMLParser):
    """Just enough of a DOM for the checks: elements, attributes, unescaped text."""

    VOID = frozenset({"meta", "img", "br", "link", "input", "hr"})

    def __init__(self):
        super().__init__()
        self.root = Element("#document", [])
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs)
        self.stack[-1].parts.append(element)
        if tag not in self.VOID:
            self.stack.append(element)

    def handle_endtag(self, tag):
        while tag not in self.VOID and self.stack[-1].tag != tag:
            self.stack.pop()
        if tag not in self.VOID:
            self.stack.pop()

    def handle_data(self, data):
        self.stack[-1].parts.append(data)


def parse(text: str) -> Element:
    builder = TreeBuilder()
    builder.feed(text)
    return builder.root


def instance(**changes) -> dict:
    """The target is caption c1 at position 2; decoys best Score first: c30, c10, c40, c20."""
    return {
        "example_id": "1_0",
        "split": "dev",
        "image_id": "1",
        "image_file": "COCO_1.jpg",
        "image_url": "",
        "options": ["a cat on a mat", "a dog in a car", "a man on a horse", "a bus", "a kite"],
        "label": 2,
        "option_caption_ids": ["c10", "c20", "c1", "c30", "c40"],
        "option_image_ids": ["10", "20", "1", "30", "40"],
        "option_edits": [""] * 5,
        "target_caption_id": "c1",
        "decoy_caption_ids": ["c30", "c10", "c40", "c20"],
        "decoy_image_ids": ["30", "10", "40", "20"],
        "decoy_sim_pv": [0.91, 0.82, 0.73, 0.64],
        "decoy_sim_surf": [0.11, 0.22, 0.33, 0.44],
        "decoy_score": [0.5, 0.45, 0.4, 0.35],
        "decoy_edits": [""] * 4,
        **changes,
    }


NO_IMAGE = Image(MISSING)


def rendered(record: dict, image: Image = NO_IMAGE) -> Element:
    [article] = parse(render_instance(record, image)).find_all("article", "instance")
    return article


def check_options(article: Element, record: dict) -> None:
    """Five options in order; the label's one alone marked target; each decoy's provenance
    is its own (matched by caption id) with its rank by Score."""
    rows = article.find_all("tr", "option")
    assert [row.cell("caption") for row in rows] == record["options"]
    assert [int(row.attrs["data-position"]) for row in rows] == list(range(5))
    [target] = [row for row in rows if "target" in row.classes()]
    assert int(target.attrs["data-position"]) == record["label"] == int(article.attrs["data-label"])
    assert target.cell("caption-id") == record["target_caption_id"]
    assert "target" in target.cell("role")
    decoys = [row for row in rows if row is not target]
    assert all("decoy" in row.classes() for row in decoys)
    for row in decoys:
        k = record["decoy_caption_ids"].index(row.attrs["data-caption-id"])
        assert (
            row.attrs["data-caption-id"]
            == record["option_caption_ids"][int(row.attrs["data-position"])]
        )
        assert row.cell("role") == f"decoy {k + 1}" == f"decoy {row.attrs['data-decoy-rank']}"
        assert row.cell("image-id") == record["decoy_image_ids"][k]
        assert row.cell("caption-id") == record["decoy_caption_ids"][k]
        assert row.cell("sim-pv") == f"{record['decoy_sim_pv'][k]:.3f}"
        assert row.cell("sim-surf") == f"{record['decoy_sim_surf'][k]:.3f}"
        assert row.cell("score") == f"{record['decoy_score'][k]:.3f}"


@pytest.mark.parametrize("label", [0, 2, 4])
def test_the_labels_option_alone_is_marked_and_each_decoy_shows_its_provenance(label):
    record = instance()
    order = [*range(5)]
    order.remove(2)
    order.insert(label, 2)  # move the target to position `label`, decoys keep their order
    record = instance(
        options=[record["options"][i] for i in order],
        option_caption_ids=[record["option_caption_ids"][i] for i in order],
        option_image_ids=[record["option_image_ids"][i] for i in order],
        label=label,
    )
    article = rendered(record)
    check_options(article, record)
    heading = article.find_all("h3")[0].text()
    assert "1_0" in heading and "target caption c1" in heading


def test_a_two_option_instance_with_an_edited_decoy_of_the_targets_caption_shows_the_edit():
    edit = "switch_people: 'a man' <-> 'a woman'"
    nan = float("nan")
    record = instance(
        options=["a woman talks to a man", "a man talks to a woman"],
        label=1,
        option_caption_ids=["c1", "c1"],
        option_image_ids=["1", "1"],
        option_edits=[edit, ""],
        decoy_caption_ids=["c1"],
        decoy_image_ids=["1"],
        decoy_sim_pv=[nan],
        decoy_sim_surf=[nan],
        decoy_score=[nan],
        decoy_edits=[edit],
    )
    rows = rendered(record).find_all("tr", "option")
    assert [row.cell("caption") for row in rows] == record["options"]
    assert "target" in rows[1].classes() and rows[1].cell("scores") == "the image's own caption"
    assert rows[0].cell("role") == "decoy 1" and rows[0].cell("edit") == edit


def test_captions_and_ids_are_text_never_markup():
    script = '<script>alert("x")</script> & <b>bold</b>'
    record = instance(
        options=[script, *instance()["options"][1:]],
        example_id='1_0"><i>',
        image_file="<img onerror=x>.jpg",
    )
    page = render_instance(record, Image(MISSING))
    assert "<script>" not in page and "<b>" not in page and "<i>" not in page
    assert html.escape(script) in page
    article = rendered(record)
    assert article.find_all("tr", "option")[0].cell("caption") == script
    assert article.attrs["data-example-id"] == record["example_id"]
    assert not article.find_all("script") and not article.find_all("b")


def test_image_is_the_copied_file_else_the_url_else_a_placeholder():
    url = "http://images.cocodataset.org/val2014/COCO_1.jpg"
    local, linked, missing = Image(LOCAL, "images/COCO_1.jpg"), Image(URL, url), Image(MISSING)
    assert image_source(instance(image_url=url), {"COCO_1.jpg"}) == local
    assert image_source(instance(image_url=url), {"COCO_2.jpg"}) == linked
    assert image_source(instance(), set()) == missing
    assert image_source(instance(image_url="javascript:alert(1)"), set()) == missing
    assert image_source(instance(image_file="a b#1.jpg"), {"a b#1.jpg"}).src == (
        "images/a%20b%231.jpg"
    )
    for image in (local, linked):
        [img] = rendered(instance(), image).find_all("img")
        assert img.attrs["src"] == image.src and img.attrs["data-image-kind"] == image.kind
    article = rendered(instance(), missing)
    assert not article.find_all("img")
    [placeholder] = article.find_all("div", "placeholder")
    assert "image not available" in placeholder.text()


def test_the_sample_depends_on_the_seed_only_not_on_the_order_of_files_or_rows():
    rows = [{"example_id": f"{image}_{k}"} for image in range(200) for k in range(5)]
    chosen = sample(rows, 20, seed=0)
    assert len(chosen) == 20
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    assert sample(shuffled, 20, seed=0) == chosen
    shards = [shuffled[i::7] for i in range(7)]
    assert sample([row for shard in shards for row in sample(shard, 20, seed=0)], 20, 0) == chosen
    assert sample(rows, 20, seed=1) != chosen
    assert sample(rows[:5], 20, seed=0) == sample(rows[4::-1], 20, seed=0)
    assert len(sample(rows[:5], 20, seed=0)) == 5


def _error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert not captured.out
    [line] = captured.err.splitlines()
    return line


def test_bad_input_is_one_line_naming_it(tmp_path, capsys):
    output = str(tmp_path / "preview")
    empty = tmp_path / "empty"
    empty.mkdir()
    not_a_folder = tmp_path / "images.txt"
    not_a_folder.write_text("x")
    base = ["--dataset", str(empty), "--output", output]
    assert _error([*base, "--per_split", "0"], capsys) == (
        "error: --per_split 0: must be at least 1"
    )
    assert _error([*base, "--images", str(not_a_folder)], capsys).startswith(
        f"error: --images {not_a_folder}: not a directory"
    )
    assert _error([*base, "--images", str(tmp_path / "nowhere")], capsys).startswith(
        f"error: --images {tmp_path / 'nowhere'}: not a directory"
    )
    assert _error(base, capsys) == f"error: {empty}: no dataset there (no _COMPLETE marker, " + (
        "no latest.txt file)"
    )
    assert "takes no pipeline options" in _error([*base, "--runner", "DirectRunner"], capsys)
    assert not os.path.exists(output)


def test_help_names_the_command_and_promises_no_beam_options(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    words = " ".join(text.split())
    assert text.startswith("usage: dmc-preview --dataset DATASET --output OUTPUT [option ...]\n")
    assert "No other flag is taken" in words and "Apache Beam" not in words
    assert "--per_split PER_SPLIT instances shown per split (default: 20)" in words


# The browser test: a generated dataset whose images are partly on disk (copied), partly
# COCO-style URLs, partly nowhere (a placeholder).

PER_SPLIT = 8
URL_PREFIX = "http://images.invalid/"  # .invalid never resolves (RFC 2606)


@pytest.fixture(scope="module")
def dataset_with_urls(shared, synthetic_corpus) -> str:
    """small_dataset's corpus and options, a coco_url on every third image: the synthetic
    corpus has none, so without it no instance would show an image by URL. The corpus is in
    the shared folder, so both test workers name the same input and one makes the version."""

    def write(folder: pathlib.Path) -> None:
        with open(synthetic_corpus, encoding="utf-8") as handle:
            corpus = json.load(handle)
        for image in corpus["images"][::3]:
            image["coco_url"] = URL_PREFIX + image["file_name"]
        (folder / "captions_with_urls.json").write_text(json.dumps(corpus), encoding="utf-8")

    path = shared.made("corpus_with_urls", write) / "captions_with_urls.json"
    return shared.version(GenerateOptions(input=str(path), output="", **SMALL_MCIC))[0]


def read_split(version: str, split: str) -> list[dict]:
    paths = sorted(glob.glob(shard_pattern(version, PARQUET, split)))
    return [row for path in paths for row in pq.read_table(path).to_pylist()]


def png(colour: tuple[float, float, float]) -> bytes:
    buffer = io.BytesIO()
    imsave(buffer, np.tile(np.array(colour), (12, 16, 1)), format="png")
    return buffer.getvalue()


def chromium(*arguments: str) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail(
            "chromium is not installed: the preview is checked in a real browser; install "
            "Debian's with `apt-get install chromium` (CI's .ci/run does)"
        )
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: no name resolves
                f"--user-data-dir={profile}",
                *arguments,
            ],
            capture_output=True,
            text=True,
            timeout=CHROMIUM_TIMEOUT,
            check=True,
        )


def smallest_keys(rows: list[dict], size: int, seed: int = 0) -> list[dict]:
    """The sample as specified: the instances with the smallest keys of (seed, example_id)."""
    return sorted(rows, key=lambda row: (keyed_int(seed, row["example_id"]), row["example_id"]))[
        :size
    ]


def test_the_preview_renders_in_chromium_as_the_dataset_says(dataset_with_urls, tmp_path, capsys):
    version = dataset_with_urls
    rows = {split: read_split(version, split) for split in SPLITS}
    expected = {split: smallest_keys(split_rows, PER_SPLIT) for split, split_rows in rows.items()}
    shown = [row for split_rows in expected.values() for row in split_rows]
    # On disk: the first two shown images without a URL and the first with one (the file
    # wins), so the screenshot's top shows every kind, and one never shown.
    with_url = [row["image_file"] for row in shown if row["image_url"]]
    without_url = list(dict.fromkeys(row["image_file"] for row in shown if not row["image_url"]))
    assert with_url and len(without_url) > 2, "the sample needs images of every kind"
    on_disk = {*without_url[:2], with_url[0]}
    images = tmp_path / "images"
    images.mkdir()
    for index, name in enumerate(sorted(on_disk)):
        (images / name).write_bytes(png((0.2 + 0.3 * index, 0.5, 0.8 - 0.3 * index)))
    (images / "never_shown.jpg").write_bytes(png((0.0, 0.0, 0.0)))
    output = tmp_path / "preview"

    argv = ["--dataset", os.path.dirname(os.path.dirname(version)), "--output", str(output)]
    assert main([*argv, "--images", str(images), "--per_split", str(PER_SPLIT)]) == 0
    index = output / INDEX_FILE
    assert capsys.readouterr().out == f"preview written to {index}\n"
    assert sorted(os.listdir(output / "images")) == sorted(on_disk)
    for name in on_disk:
        assert (output / "images" / name).read_bytes() == (images / name).read_bytes()

    document = parse(chromium("--dump-dom", index.as_uri()).stdout)
    assert not document.find_all("script") and not document.find_all("link")
    overview = document.find_all("table", "overview")[0].find_all("tr")[1:]
    assert [[cell.text() for cell in row.find_all("td")] for row in overview] == [
        [split, f"{len(rows[split]):,}", str(PER_SPLIT)] for split in SPLITS
    ]
    sections = {section.attrs["data-split"]: section for section in document.find_all("section")}
    assert list(sections) == list(SPLITS)
    kinds = set()
    for split, section in sections.items():
        articles = section.find_all("article", "instance")
        assert [article.attrs["data-example-id"] for article in articles] == [
            row["example_id"] for row in expected[split]
        ]
        for article, record in zip(articles, expected[split], strict=True):
            check_options(article, record)
            if record["image_file"] in on_disk:
                kind, src = LOCAL, f"images/{record['image_file']}"
            elif record["image_url"]:
                kind, src = URL, record["image_url"]
            else:
                kind, src = MISSING, None
            kinds.add(kind)
            images_shown = article.find_all("img")
            if src is None:
                assert not images_shown and article.find_all("div", "placeholder")
            else:
                [img] = images_shown
                assert (img.attrs["src"], img.attrs["data-image-kind"]) == (src, kind)
    assert kinds == {LOCAL, URL, MISSING}

    screenshot = tmp_path / "preview.png"
    chromium(f"--screenshot={screenshot}", "--window-size=1200,2000", index.as_uri())
    print(f"screenshot of the preview: {screenshot}")
    data = screenshot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_the_preview_reads_and_writes_gcs_as_local_files(dataset_with_urls, tmp_path, capsys):
    """A version, images and the preview in a bucket (a GCS API server on loopback) give the
    page and image copies a local run gives."""
    version = pathlib.Path(dataset_with_urls)
    [shown, *_] = smallest_keys(read_split(str(version), "dev"), 20)
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / shown["image_file"]).write_bytes(png((0.2, 0.5, 0.8)))
    local = tmp_path / "preview"
    argv = ["--images", str(photos), "--output", str(local)]
    assert main(["--dataset", str(version), *argv]) == 0
    with gcs_servers() as environment, pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            patch.setenv(name, value)
        bucket = storage.Client(project=PROJECT).create_bucket("dmc-preview")
        # to gs://dmc-preview/<output>/versions/<version> and /photos: the page names the
        # version and its output's folder, so the copy keeps both
        output = version.parent.parent
        for directory, under in ((version, output.parent), (photos, photos.parent)):
            for path in directory.rglob("*"):
                if path.is_file():
                    name = path.relative_to(under)
                    bucket.blob(str(name)).upload_from_filename(str(path))
        remote = f"gs://dmc-preview/{version.relative_to(output.parent)}"
        argv = ["--images", "gs://dmc-preview/photos", "--output", "gs://dmc-preview/preview"]
        assert main(["--dataset", remote, *argv]) == 0
        assert capsys.readouterr().out.endswith(
            "preview written to gs://dmc-preview/preview/index.html\n"
        )
        page = bucket.blob("preview/index.html").download_as_text()
        copied = bucket.blob(f"preview/images/{shown['image_file']}").download_as_bytes()
        nowhere = ["--images", "gs://dmc-preview/nowhere", "--output", str(tmp_path / "unused")]
        assert main(["--dataset", remote, *nowhere]) == 2
        assert capsys.readouterr().err == (
            "error: --images gs://dmc-preview/nowhere: not a directory; give the folder holding "
            "the images' files (named as their image_file)\n"
        )
    assert page == (local / INDEX_FILE).read_text().replace(str(version), remote)
    assert f'src="images/{shown["image_file"]}"' in page
    assert copied == (photos / shown["image_file"]).read_bytes()


def test_every_path_into_a_version_gives_the_same_page_naming_no_local_path(
    dataset_with_urls, tmp_path, monkeypatch, capsys
):
    """OUTPUT, OUTPUT/latest, a folder inside it, the version and a folder inside that, given
    absolute or relative: one version read, one page, which names the version and the
    output's name, not where this machine keeps them (the page is shared)."""
    version = pathlib.Path(dataset_with_urls)
    output = version.parent.parent
    monkeypatch.chdir(output.parent)
    relative = pathlib.Path(output.name)
    paths = [
        output,
        output / "latest",
        output / "latest" / PARQUET,
        relative / "latest" / PARQUET / "dev",
        version,
        relative / "versions" / version.name / "dataset" / PARQUET,
    ]
    pages = []
    for number, path in enumerate(paths):
        written = tmp_path / str(number)
        assert main(["--dataset", str(path), "--output", str(written), "--per_split", "2"]) == 0
        pages.append((written / INDEX_FILE).read_text(encoding="utf-8"))
    capsys.readouterr()
    assert all(page == pages[0] for page in pages[1:])
    [meta] = parse(pages[0]).find_all("p", "meta")
    assert meta.text().startswith(f"output {output.name} · decoys ")
    assert f"<h1>Dataset preview: <code>{version.name}</code></h1>" in pages[0]
    assert str(output.parent) not in pages[0]
