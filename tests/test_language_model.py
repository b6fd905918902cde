"""The bigram LM: Kneser-Ney probabilities by hand, and what it prefers (a short chunk)."""

import json
import math

import numpy as np
import pytest

from schemas.examples import Batch
from tests.support.versions import COCO_VAL2017
from transforms.corpus.normalize import normalize_caption
from transforms.trainer.language_model import DISCOUNT, END, START, UNKNOWN, fit_bigram_lm
from transforms.trainer.models import answers
from transforms.trainer.registry import fitters
from transforms.trainer.stream import FitData, InMemoryExamples

TINY = ["a dog", "a cat", "a dog runs"]


def probability(model, context: str, word: str) -> float:
    start = len(model.vocabulary)
    context_id = start if context == START else model.vocabulary[context]
    ids = np.array([context_id]), np.array([model.vocabulary[word]])
    return float(model.probabilities(*ids)[0])


def test_kneser_ney_probabilities_of_a_tiny_corpus_by_hand():
    model = fit_bigram_lm("LM", TINY)
    assert sorted(model.vocabulary) == sorted(["a", "cat", "dog", "runs", END, UNKNOWN])
    # Seven bigram types: <s> a, a dog, a cat, dog </s>, cat </s>, dog runs, runs </s>;
    # continuation counts a 1, dog 1, cat 1, runs 1, </s> 3, <unk> 0, each + 1 over 7 + 6.
    d = DISCOUNT
    continuation = {"a": 2 / 13, "dog": 2 / 13, "cat": 2 / 13, "runs": 2 / 13, END: 4 / 13}
    continuation[UNKNOWN] = 1 / 13
    # c(a) = 3 over two types (dog twice, cat once); c(<s>) = 3, one type; c(dog) = 2, two.
    assert probability(model, "a", "dog") == pytest.approx((2 - d) / 3 + d * 2 / 3 * 2 / 13)
    assert probability(model, "a", "cat") == pytest.approx((1 - d) / 3 + d * 2 / 3 * 2 / 13)
    assert probability(model, "a", END) == pytest.approx(d * 2 / 3 * 4 / 13)
    assert probability(model, START, "a") == pytest.approx((3 - d) / 3 + d / 3 * 2 / 13)
    assert probability(model, "dog", "runs") == pytest.approx((1 - d) / 2 + d * 2 / 2 * 2 / 13)
    for word, expected in continuation.items():  # <unk> was never a context: back off
        assert probability(model, UNKNOWN, word) == pytest.approx(expected)
    total = (3 - d) / 3 + d / 3 * 2 / 13  # P(a | <s>)
    total *= (2 - d) / 3 + d * 2 / 3 * 2 / 13  # P(dog | a)
    total *= (1 - d) / 2 + d * 2 / 2 * 4 / 13  # P(</s> | dog)
    assert model.log_probabilities(["a dog"])[0] == pytest.approx(math.log(total))
    unseen = model.log_probabilities(["a zebra"])[0]  # zebra -> <unk>
    assert unseen == pytest.approx(
        math.log(probability(model, START, "a"))
        + math.log(probability(model, "a", UNKNOWN))
        + math.log(probability(model, UNKNOWN, END))
    )


def test_every_context_is_a_distribution_over_the_vocabulary_and_the_end_marker():
    with open(COCO_VAL2017) as handle:
        annotations = json.load(handle)["annotations"]
    captions = [" ".join(normalize_caption(a["caption"])) for a in annotations]
    model = fit_bigram_lm("LM", captions[:3000])
    size = len(model.vocabulary)
    for context in range(size + 1):  # every word, </s>, <unk> and <s>
        contexts = np.full(size, context)
        assert model.probabilities(contexts, np.arange(size)).sum() == pytest.approx(1.0)
    assert model.log_probabilities(captions[3000:3100]).max() < 0


def tiny_batch(texts: list[list[str]], labels: list[int]) -> Batch:
    n, k = len(texts), len(texts[0])
    array = np.empty((n, k), dtype=object)
    array[:] = texts
    zeros = np.zeros((n, k, 1))
    return Batch(np.zeros((n, 1)), zeros, zeros, np.asarray(labels), array)


def test_the_trained_lm_prefers_a_short_chunk_to_the_full_caption():
    """Hodosh et al.'s "just person": no length normalisation, so the chunk wins (0%)."""
    captions = [
        "a man rides a wave on a surfboard",
        "a man rides a horse on the beach",
        "a woman rides a bike on the street",
        "two men ride horses on a beach",
    ]
    train = tiny_batch([[c, "x"] for c in captions], [0] * len(captions))
    data = FitData(InMemoryExamples(train), InMemoryExamples(train))
    model = fitters()["Bigram LM"]("Bigram LM", data, None)
    assert model.selection["captions"] == len(captions)
    full, chunk = "a man rides a wave on the beach", "a woman"
    test = tiny_batch([[full, "a man"], [chunk, "a woman rides a horse on a surfboard"]], [0, 1])
    assert answers(model.scores(test)).tolist() == [1, 0]  # the chunks, wrong both times
    swapped = tiny_batch([["a man rides a wave", "a wave rides a man"]], [0])
    assert answers(model.scores(swapped)).tolist() == [0]  # same length: word order decides
