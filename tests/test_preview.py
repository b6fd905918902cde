"""The HTML preview: its rendering on inline instances."""

import html
import random
from html.parser import HTMLParser

import pytest

from transforms.report.preview import (
    LOCAL,
    MISSING,
    URL,
    Image,
    image_source,
    render_instance,
    sample,
)


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
        "target_caption_id": "c1",
        "decoy_caption_ids": ["c30", "c10", "c40", "c20"],
        "decoy_image_ids": ["30", "10", "40", "20"],
        "decoy_sim_pv": [0.91, 0.82, 0.73, 0.64],
        "decoy_sim_surf": [0.11, 0.22, 0.33, 0.44],
        "decoy_score": [0.5, 0.45, 0.4, 0.35],
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
