"""The person and scene chunker on inline captions, and against the hand-labelled sample."""

import json
import os

import pytest

from tests.support.versions import COCO_VAL2017
from transforms.corpus.normalize import normalize_caption
from transforms.english.chunker import PERSON, SCENE, chunk, chunk_text
from transforms.english.evaluate import Scores, evaluate, read_captions, read_labels, table
from transforms.errors import InputError

LABELS = os.path.join(os.path.dirname(__file__), "data", "chunks_val2017.jsonl")


def chunks_of(caption: str, kind: str | None = None) -> list[str]:
    tokens = normalize_caption(caption)
    return [chunk_text(tokens, c) for c in chunk(tokens) if kind in (None, c.kind)]


@pytest.mark.parametrize(
    ("caption", "people"),
    [
        ("A young man riding a skateboard.", ["a young man"]),
        ("Two little girls playing.", ["two little girls"]),
        ("A tennis player swings his racket.", ["a tennis player"]),
        ("young men playing frisbee", ["young men"]),
        ("A man in a red shirt holding an umbrella", ["a man in a red shirt"]),
        (
            "a woman wearing a white hat and sunglasses sits",
            ["a woman wearing a white hat and sunglasses"],
        ),
        (
            "two men in black and white shirts and ties",
            ["two men in black and white shirts and ties"],
        ),
        ("a team in blue running", ["a team in blue"]),
        ("A group of people standing around", ["a group of people"]),
        ("a large crowd of young people", ["a large crowd of young people"]),
        ("a man on a skateboard", ["a man"]),
        ("a man holding an umbrella", ["a man"]),
        ("A man holding a child", ["a man", "a child"]),
        ("a dog chasing kids", ["kids"]),
        ("a smiling woman", ["a smiling woman"]),
    ],
)
def test_person_chunks_with_their_modifiers(caption, people):
    assert chunks_of(caption, PERSON) == people


@pytest.mark.parametrize(
    "caption",
    [
        "a baby elephant next to a tree",  # a noun modifier of an animal
        "a man s hat on a hook",  # a possessive
        "a group of elephants walking",  # "NP1 of NP2" takes NP2's head
        "a clown suit on a hanger",
        "he is riding a wave",  # pronouns are not chunks
        "an elephant walking with its mother",
    ],
)
def test_no_person_chunk(caption):
    assert chunks_of(caption, PERSON) == []


def test_a_group_of_people_is_headed_by_people_and_plural():
    tokens = normalize_caption("A group of people on the beach")
    group = chunk(tokens)[0]
    assert (group.kind, group.head, group.lemma, group.plural) == (PERSON, "people", "person", True)


def test_lemma_is_the_singular_of_the_head_as_written():
    men, woman = chunk(normalize_caption("two men and a woman"))
    assert (men.head, men.lemma, men.plural) == ("men", "man", True)
    assert (woman.head, woman.lemma, woman.plural) == ("woman", "woman", False)


@pytest.mark.parametrize(
    ("caption", "scenes"),
    [
        ("a man riding a skateboard on a busy city street", ["a busy city street"]),
        ("kids playing in the park near the water", ["the park", "the water"]),
        ("a living room with a couch", ["a living room"]),
        ("skiers on a snow covered mountain", ["a snow covered mountain"]),
        ("a kitchen with a stove and a sink", ["a kitchen"]),
        ("a baseball player on the field", ["the field"]),
        ("a stop sign on a street corner", ["a street corner"]),
    ],
)
def test_scene_chunks_after_prepositions_without_them(caption, scenes):
    assert chunks_of(caption, SCENE) == scenes


@pytest.mark.parametrize(
    "caption",
    [
        "a plate of food on a table",  # objects and furniture are not scenes
        "a cat sleeping on a bed",
        "a street sign on a pole",  # "street" modifies "sign"
        "a glass of water next to a bench",  # a substance in a container
        "a bowl of ice cream",
        "a kitchen counter with a toaster",
    ],
)
def test_objects_are_not_scenes(caption):
    assert chunks_of(caption, SCENE) == []


def test_chunks_are_ordered_and_disjoint_on_real_captions():
    with open(COCO_VAL2017, encoding="utf-8") as handle:
        annotations = json.load(handle)["annotations"][:2000]
    for annotation in annotations:
        tokens = normalize_caption(annotation["caption"])
        found = chunk(tokens)
        ends = [0] + [c.end for c in found]
        assert all(c.start >= end for c, end in zip(found, ends, strict=False)), tokens
        assert all(c.head in tokens[c.start : c.end] for c in found), tokens


def test_evaluate_counts_exact_and_head_matches(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        '{"caption_id": "1", "person": ["a man in a red shirt"], "scene": ["the street"]}\n'
        '{"caption_id": "2", "person": ["a woman", "a dog walker"], "scene": []}\n'
    )
    captions = {
        "1": normalize_caption("A man in a red shirt on the street."),
        "2": normalize_caption("A woman talks to a dog walker in a park."),
    }
    scores = evaluate(read_labels(str(labels)), captions)
    # predicted: "a man in a red shirt", "the street"; "a woman", "a park" (no label)
    assert scores[PERSON] == Scores(predicted=2, labelled=3, exact=2, head=2)
    assert scores[SCENE] == Scores(predicted=2, labelled=1, exact=1, head=1)
    assert "| person | 3 | 2 | 100.0% | 66.7% | 100.0% |" in table(scores)


def test_a_malformed_label_names_the_file_and_line(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"caption_id": "1", "person": [], "scene": []}\n{"caption_id": "2"}\n')
    with pytest.raises(InputError, match=r"labels.jsonl: line 2"):
        read_labels(str(labels))


def test_precision_and_recall_on_the_hand_labelled_sample():
    """300 val2017 captions labelled by hand (tests/data/chunks_val2017.jsonl, branch
    chunk-labels) without seeing the chunker, which was measured once, unchanged since:

    person: 118 labelled, 117 predicted, exact precision 94.9%, recall 94.1%, head 98.3%
    scene:  178 labelled, 153 predicted, exact precision 86.3%, recall 74.2%, head 94.8%

    The floors sit a few points below, so a change that loses accuracy fails here.
    """
    scores = evaluate(read_labels(LABELS), read_captions(COCO_VAL2017))
    person, scene = scores[PERSON], scores[SCENE]
    assert (person.labelled, scene.labelled) == (118, 178)
    assert person.precision >= 0.90 and person.recall >= 0.88 and person.head_precision >= 0.95
    assert scene.precision >= 0.80 and scene.recall >= 0.68 and scene.head_precision >= 0.90
