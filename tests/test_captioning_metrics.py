"""CIDEr-D and ROUGE-L: the toolkit's numbers, checked against their definitions on toy cases."""

import math
from collections import Counter

import pytest
from pycocoevalcap.cider.cider import Cider

from transforms.corpus.languages.registry import LANGUAGES
from transforms.corpus.normalize import normalize_caption
from transforms.errors import InputError
from transforms.trainer.captioning_metrics import caption_scores, caption_tokens


def lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


def rouge_l(hypothesis: str, references: list[str], beta: float = 1.2) -> float:
    """Lin 2004's LCS F-measure as the toolkit takes it: best precision and best recall over
    the references, combined with beta 1.2."""
    words = hypothesis.split()
    precision = max(lcs(words, r.split()) / len(words) for r in references)
    recall = max(lcs(words, r.split()) / len(r.split()) for r in references)
    if not precision or not recall:
        return 0.0
    return (1 + beta**2) * precision * recall / (recall + beta**2 * precision)


def cider_d(hypotheses: dict[str, str], references: dict[str, list[str]]) -> float:
    """Vedantam et al. 2015's CIDEr-D from the definition: tf-idf n-gram vectors (n = 1..4; raw
    counts: the clipped min makes their scale matter),
    idf from the references' document frequencies, clipped numerator, Gaussian length
    penalty (sigma 6), mean over references and n, times 10, mean over images."""

    def grams(words: list[str], n: int) -> Counter:
        return Counter(tuple(words[k : k + n]) for k in range(len(words) - n + 1))

    images = list(hypotheses)
    log_images = math.log(len(images))
    scores = []
    for image in images:
        hyp = hypotheses[image].split()
        total = 0.0
        for n in range(1, 5):
            df = Counter(
                gram
                for other in images
                for gram in {g for r in references[other] for g in grams(r.split(), n)}
            )

            def vector(words: list[str], n: int = n, df: Counter = df) -> dict:
                return {
                    g: c * (log_images - math.log(max(1.0, df[g])))
                    for g, c in grams(words, n).items()
                }

            h = vector(hyp)
            for reference in references[image]:
                ref_words = reference.split()
                r = vector(ref_words)
                numerator = sum(min(h[g], r[g]) * r[g] for g in h if g in r)
                norms = math.sqrt(sum(v * v for v in h.values())) * math.sqrt(
                    sum(v * v for v in r.values())
                )
                penalty = math.exp(-((len(hyp) - len(ref_words)) ** 2) / (2 * 6.0**2))
                total += penalty * numerator / norms if norms else 0.0
        scores.append(total / 4 / len(references[image]) * 10)
    return sum(scores) / len(scores)


REFERENCES = {
    "1": ["a cat sat on the mat", "the cat is on a mat"],
    "2": ["a dog runs in the park", "two dogs play on grass"],
    "3": ["a man rides a horse", "a person riding a brown horse"],
}
HYPOTHESES = {"1": "a cat on a mat", "2": "a dog plays in the park", "3": "a man on a horse"}


def test_preprocessing_is_the_papers_on_the_datasets_tokens_in_any_language():
    assert caption_tokens(" ".join(normalize_caption("A Dog's 2 BALLS!"))) == [
        *("a", "dog", "s", "balls")
    ]
    japanese = normalize_caption("二人の男性が庭で", LANGUAGES["ja"])
    assert caption_tokens(" ".join(japanese)) == ["二人", "の", "男性", "が", "庭", "で"]
    assert caption_tokens("a zebra eats", frozenset({"a", "eats"})) == ["a", "<unk>", "eats"]
    assert len(caption_tokens(" ".join(["word"] * 40))) == 30
    assert caption_tokens("a <unk> cat", frozenset({"a", "cat"})) == ["a", "<unk>", "cat"]


def test_rouge_l_is_the_lcs_f_measure_against_the_best_reference():
    scores = caption_scores(HYPOTHESES, REFERENCES)
    expected = sum(rouge_l(HYPOTHESES[i], REFERENCES[i]) for i in HYPOTHESES) / 3
    assert scores["ROUGE-L"] == pytest.approx(expected)
    # "a cat on a mat" against "the cat is on a mat": LCS "cat on a mat", 4 of 5 and 4 of 6
    assert rouge_l("a cat on a mat", ["the cat is on a mat"]) == pytest.approx(
        (1 + 1.44) * 0.8 * (4 / 6) / (4 / 6 + 1.44 * 0.8)
    )


def test_cider_d_is_the_toolkits_and_its_definition():
    scores = caption_scores(HYPOTHESES, REFERENCES)
    gts = {i: refs for i, refs in REFERENCES.items()}
    res = {i: [h] for i, h in HYPOTHESES.items()}
    assert scores["CIDEr"] == pytest.approx(Cider().compute_score(gts, res)[0])
    assert scores["CIDEr"] == pytest.approx(cider_d(HYPOTHESES, REFERENCES))
    assert scores["images"] == 3


def test_better_captions_score_higher_whatever_the_order_and_empty_ones_score_zero():
    worse = {**HYPOTHESES, "2": "a horse on a mat"}
    assert (
        caption_scores(worse, REFERENCES)["CIDEr"] < caption_scores(HYPOTHESES, REFERENCES)["CIDEr"]
    )
    backwards = dict(reversed(list(HYPOTHESES.items())))
    assert caption_scores(backwards, REFERENCES) == caption_scores(HYPOTHESES, REFERENCES)
    empty = caption_scores({**HYPOTHESES, "3": ""}, REFERENCES)
    alone = caption_scores({"1": HYPOTHESES["1"], "2": HYPOTHESES["2"]}, REFERENCES)
    assert empty["ROUGE-L"] == pytest.approx(alone["ROUGE-L"] * 2 / 3)


def test_an_image_without_references_is_an_error_naming_it():
    with pytest.raises(InputError, match="'9'"):
        caption_scores({"9": "a cat"}, REFERENCES)
