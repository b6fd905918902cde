"""The hand-labelled person/scene chunk sample is well-formed against the real val2017 captions.

The labels (tests/data/chunks_val2017.jsonl, described in chunks_val2017.md) store only caption
ids and chunk strings; the caption text is read from the shared corpus here.
"""

import json
import os

import pytest

from tests.support.versions import COCO_VAL2017
from transforms.corpus.normalize import normalize_caption
from transforms.seeds import keyed_int

LABELS = os.path.join(os.path.dirname(__file__), "data", "chunks_val2017.jsonl")
SAMPLE_SIZE = 300
KINDS = ("person", "scene")


def sampled_caption_ids(caption_ids: list[str], size: int = SAMPLE_SIZE) -> list[str]:
    """The documented sampling rule: caption ids ordered by their keyed hash, first ``size``."""
    return sorted(caption_ids, key=lambda caption_id: keyed_int(0, f"chunk sample {caption_id}"))[
        :size
    ]


def read_labels(path: str = LABELS) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def contains_span(tokens: tuple[str, ...], span: tuple[str, ...]) -> bool:
    return any(tokens[i : i + len(span)] == span for i in range(len(tokens) - len(span) + 1))


@pytest.fixture(scope="module")
def captions() -> dict[str, str]:
    with open(COCO_VAL2017, encoding="utf-8") as handle:
        annotations = json.load(handle)["annotations"]
    return {str(a["id"]): a["caption"] for a in annotations}


@pytest.fixture(scope="module")
def labels() -> list[dict]:
    return read_labels()


def test_ids_are_the_first_of_the_seeded_sample_in_order(captions, labels):
    assert [record["caption_id"] for record in labels] == sampled_caption_ids(list(captions))


def test_records_hold_only_ids_and_chunk_lists(labels):
    for line, record in enumerate(labels, start=1):
        assert set(record) == {"caption_id", *KINDS}, f"{LABELS}:{line}"
        for kind in KINDS:
            chunks = record[kind]
            assert isinstance(chunks, list), f"{LABELS}:{line} {kind}"
            assert all(isinstance(chunk, str) for chunk in chunks), f"{LABELS}:{line} {kind}"


def test_every_chunk_is_a_token_span_of_the_normalised_caption(captions, labels):
    for line, record in enumerate(labels, start=1):
        tokens = normalize_caption(captions[record["caption_id"]])
        for kind in KINDS:
            for chunk in record[kind]:
                span = tuple(chunk.split(" "))
                assert all(span), f"{LABELS}:{line} {kind} {chunk!r}: empty token"
                assert len(span) < len(tokens), f"{LABELS}:{line} {kind}: whole caption"
                assert contains_span(tokens, span), f"{LABELS}:{line} {kind} {chunk!r}"


def test_span_check_rejects_what_is_not_contiguous():
    tokens = normalize_caption("A man in a red shirt on the beach.")
    assert contains_span(tokens, ("a", "man", "in", "a", "red", "shirt"))
    assert contains_span(tokens, ("the", "beach"))
    assert not contains_span(tokens, ("a", "man", "the", "beach"))
    assert not contains_span(tokens, ("beach", "the"))
