"""Each validity rule on a handful of captions, through the kernels the strategies call."""

import numpy as np
import pytest

from transforms.corpus.store import make_corpus
from transforms.corpus.surface import encode_ngrams
from transforms.strategies.validity import (
    RULES,
    VALID,
    ValidityRules,
    _corpus_arrays,
    _describes,
    _dot,
    _quick_dot,
    _violation,
    allowed_group,
    choose_valid,
    mutual_allowed,
    pairs_allowed,
)

IMAGE_0 = ["a man rides a red bike down a hill", "a cyclist on a steep road in the sun"]
OTHERS = [
    ("1", "a dog sleeps on a couch"),  # row 2: a fair decoy
    ("2", "a cyclist on a steep road in the sun"),  # row 3: image 0's second caption, word for word
    ("3", "a cyclist on a steep road in the rain"),  # row 4: near-copy of image 0's second caption
    ("4", "two cats play with a ball"),  # row 5
    ("5", "two cats play with a ball"),  # row 6: the same text as row 5
    ("6", "a plate of food on a table"),  # row 7
    ("7", "a bus parked by the curb"),  # row 8
    ("8", "one person cycling downhill on a scarlet bicycle"),  # row 9: image 0's first, reworded
]
REWORDED = 9
RULES_ON = ValidityRules(limit=0.5, own_caption_rule=False)
ENCODER_ON = ValidityRules(limit=0.5, own_caption_rule=False, encoder_threshold=0.9)
EVERY_RULE_SET = (RULES_ON, ValidityRules(limit=0.5, own_caption_rule=True), ENCODER_ON)


def corpus():
    images = ["0", "0"] + [image for image, _ in OTHERS]
    texts = IMAGE_0 + [text for _, text in OTHERS]
    n = len(texts)
    vectors = np.random.default_rng(0).normal(size=(n, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    columns = {
        "caption_id": [str(i) for i in range(n)],
        "image_id": images,
        "example_id": [f"{image}_{i}" for i, image in enumerate(images)],
        "text": texts,
        "file_name": [f"{image}.jpg" for image in images],
        "url": [""] * n,
        "split": ["train"] * n,
        "original": texts,
    }
    # sentence vectors: unrelated captions' far apart, the reworded caption's beside the one
    # it rewords, as a sentence encoder's are and BLEU's and PV's need not be
    sentences = np.random.default_rng(1).normal(size=(n, 16)).astype(np.float32)
    sentences[REWORDED] = sentences[0] + 0.05 * sentences[REWORDED]
    sentences /= np.linalg.norm(sentences, axis=1, keepdims=True)
    ngrams = encode_ngrams([text.split() for text in texts])
    return make_corpus(columns, vectors, ngrams, sentences=sentences)


def violation(data, decoy, target, sim_pv, rules) -> int:
    """The first rule ``decoy`` breaks as a decoy of ``target`` (VALID if none): choose_valid's."""
    return _violation(
        decoy, target, sim_pv, *_corpus_arrays(data), rules.limit, rules.threshold,
        rules.own_caption_rule, data.ngrams.scratch(),
    )  # fmt: skip


def choose(corpus, candidates, rules=RULES_ON, sim_pv=None, need=4):
    candidates = np.array([candidates])
    sim_pv = np.zeros(candidates.shape) if sim_pv is None else np.array([sim_pv])
    preference = np.arange(candidates.shape[1])[None, :]
    chosen, rejected = choose_valid(
        corpus, np.array([0]), candidates, sim_pv, preference, need, rules, corpus.ngrams.scratch()
    )
    return candidates[0, chosen[0][chosen[0] >= 0]].tolist(), dict(
        zip(RULES, rejected.tolist(), strict=True)
    )


def test_each_rule_turns_away_its_candidate_and_counts_it():
    chosen, rejected = choose(corpus(), [1, 2, 3, 4, 5, 6, 7, 8])
    assert chosen == [2, 5, 7, 8]
    assert rejected == {
        "same_image": 1,  # row 1
        "copies_a_caption_of_the_image": 1,  # row 3
        "surface_close_to_the_image": 1,  # row 4: close to image 0's other caption, not the target
        "closer_than_own_captions": 0,
        "repeats_an_option": 1,  # row 6 repeats row 5's text
        "describes_the_image": 0,
    }


def test_a_reworded_caption_of_the_image_is_turned_away_by_the_encoder_rule_only():
    data = corpus()
    assert choose(data, [REWORDED, 2], RULES_ON)[0] == [REWORDED, 2]  # BLEU and PV miss it
    chosen, rejected = choose(data, [REWORDED, 2], ENCODER_ON)
    assert chosen == [2] and rejected["describes_the_image"] == 1
    assert violation(data, REWORDED, 1, 0.0, ENCODER_ON) == RULES.index("describes_the_image")
    assert violation(data, 1, REWORDED, 0.0, ENCODER_ON) == VALID  # not of the other's image
    assert violation(data, 0, 9, 0.0, ENCODER_ON) != VALID  # either way round (image 8's: 0)


def test_the_encoder_rule_decides_at_its_threshold_as_the_reference_sum_does():
    """The quick cosine (summed in SIMD order) differs from the reference one in its last
    bits; a cosine exactly at the threshold must still describe, one ulp below must not."""
    sentences = np.random.default_rng(3).normal(size=(400, 384)).astype(np.float32)
    sentences /= np.linalg.norm(sentences, axis=1, keepdims=True)
    pairs = np.random.default_rng(4).integers(0, 400, size=(300, 2))
    reference = np.array([_dot(sentences, a, b) for a, b in pairs])
    quick = np.array([_quick_dot(sentences, a, b) for a, b in pairs])
    assert (quick != reference).any() and np.abs(quick - reference).max() < 1e-13
    for (a, b), cosine in zip(pairs, reference, strict=True):
        image = np.array([b])
        assert _describes(sentences, a, image, 0, 1, cosine)
        assert not _describes(sentences, a, image, 0, 1, np.nextafter(cosine, np.inf))


def test_too_few_valid_candidates_leave_the_row_short():
    chosen, _ = choose(corpus(), [3, 4, 2, 5, 6])
    assert chosen == [2, 5]


def test_the_own_caption_rule_rejects_decoys_closer_than_the_images_captions():
    data = corpus()
    own = float(data.own_closeness[0])
    sim_pv = [own + 0.1, own - 0.1, own, own - 0.2]
    on = ValidityRules(limit=0.5, own_caption_rule=True)
    chosen, rejected = choose(data, [2, 5, 7, 8], on, sim_pv)
    assert chosen == [5, 8] and rejected["closer_than_own_captions"] == 2
    assert choose(data, [2, 5, 7, 8], RULES_ON, sim_pv)[0] == [2, 5, 7, 8]


def test_pairs_are_allowed_only_when_valid_both_ways_round():
    data = corpus()
    targets = np.arange(10)
    candidates = np.tile(np.arange(10), (10, 1))
    allowed, _ = pairs_allowed(
        data, targets, candidates, np.zeros((10, 10)), RULES_ON, data.ngrams.scratch()
    )
    np.testing.assert_array_equal(allowed, allowed.T)
    assert not allowed[np.arange(9), np.arange(9)].any()
    assert not allowed[0, 1] and not allowed[0, 3] and not allowed[0, 4] and not allowed[5, 6]
    assert allowed[0, 2] and allowed[3, 2] and allowed[5, 7]
    assert not allowed[3, 4]  # near-copies of each other
    assert allowed[0, REWORDED] and allowed[REWORDED, 1]
    with_encoder, _ = pairs_allowed(
        data, targets, candidates, np.zeros((10, 10)), ENCODER_ON, data.ngrams.scratch()
    )
    assert not with_encoder[0, REWORDED] and not with_encoder[REWORDED, 0]
    assert not with_encoder[1, REWORDED] and not with_encoder[REWORDED, 1]  # 1 is image 0's too
    assert (with_encoder <= allowed).all() and allowed.sum() - with_encoder.sum() == 4


def test_mutual_allowed_is_pairs_allowed_on_every_pair_of_every_row_with_every_rule_set():
    """Rows share captions, and answers kept from one row for the next change none."""
    data = corpus()
    rows = [
        np.array([8, 0, 3, 5, 2, 4, 9, 1, 7]),
        np.array([3, 5, 0, 9]),
        np.array([7, 1, 2, 8, 4]),
    ]
    nodes = np.full((len(rows), 9), -1)
    for b, row in enumerate(rows):
        nodes[b, : len(row)] = row
    sim_pv = np.random.default_rng(0).uniform(-1, 1, size=(len(rows), 9, 9)).astype(np.float32)
    sim_pv = (sim_pv + sim_pv.transpose(0, 2, 1)) / 2
    for rules in EVERY_RULE_SET:
        mutual = mutual_allowed(data, nodes, rules, data.ngrams.scratch(), sim_pv)
        for b, row in enumerate(rows):
            n = len(row)
            pairwise, _ = pairs_allowed(
                data, row, np.tile(row, (n, 1)), sim_pv[b, :n, :n], rules, data.ngrams.scratch()
            )
            np.testing.assert_array_equal(mutual[b, :n, :n], pairwise)
            assert not mutual[b, n:].any() and not mutual[b, :, n:].any()
        assert mutual[0].any() and not mutual[0].all()
    with pytest.raises(ValueError, match="own-caption rule needs the cosines"):
        mutual_allowed(data, nodes, EVERY_RULE_SET[1], data.ngrams.scratch())


def test_pairs_allowed_applies_each_rule_both_ways_round_as_choose_valid_does():
    """The pair kernel loads each n-gram table once; the answer is the per-decoy rule's."""
    data = corpus()
    rows = np.arange(10)
    sim_pv = np.random.default_rng(1).uniform(-1, 1, size=(10, 10))
    for rules in EVERY_RULE_SET:
        allowed, rejected = pairs_allowed(
            data, rows, np.tile(rows, (10, 1)), sim_pv, rules, data.ngrams.scratch()
        )
        expected = np.zeros(len(RULES), dtype=np.int64)
        for target in rows:
            for decoy in rows:
                forward = violation(data, decoy, target, sim_pv[target, decoy], rules)
                reason = (
                    forward
                    if forward != VALID
                    else violation(data, target, decoy, sim_pv[target, decoy], rules)
                )
                assert allowed[target, decoy] == (reason == VALID)
                if reason != VALID:
                    expected[reason] += 1
        np.testing.assert_array_equal(rejected, expected)


@pytest.mark.parametrize("need", [1, 3, 9])
def test_a_row_that_needs_only_its_first_allowed_candidates_gets_the_same_ones(need):
    """``need`` leaves candidates after a row's first allowed ones unchecked (not allowed,
    counted nowhere), never changes which come first: those are what closed sets keep."""
    data = corpus()
    rows = np.arange(9)
    candidates = np.array([np.roll(np.tile(rows, 3), -shift) for shift in range(9)])
    sim_pv = np.zeros(candidates.shape)
    full, all_rejected = pairs_allowed(
        data, rows, candidates, sim_pv, RULES_ON, data.ngrams.scratch()
    )
    needed, rejected = pairs_allowed(
        data, rows, candidates, sim_pv, RULES_ON, data.ngrams.scratch(), need=need
    )
    assert not (needed & ~full).any()
    for got, every in zip(needed, full, strict=True):
        first = np.flatnonzero(every)[:need]
        np.testing.assert_array_equal(np.flatnonzero(got)[: len(first)], first)
    assert needed.sum() < full.sum() and (rejected <= all_rejected).all()


@pytest.mark.parametrize("rules", EVERY_RULE_SET)
def test_a_group_is_the_first_allowed_candidates_that_are_allowed_with_each_other(rules):
    """The walk allows what ``pairs_allowed`` allows, trusts ``known`` pairs unchecked, and
    admits a candidate to the group only if it may share a set with every earlier member."""
    data = corpus()
    targets = np.array([2, 7])
    candidates = np.array([[5, 6, 3, 4, 0, 9, 8, -1], [0, 1, 2, 3, 4, 5, 6, 8]])
    sim_pv = np.random.default_rng(2).uniform(-1, 1, size=candidates.shape)
    scratch = data.ngrams.scratch()
    known = np.zeros(candidates.shape, bool)
    allowed, members = allowed_group(
        data, targets, candidates, sim_pv, known, rules, scratch, need=8, group=3
    )
    expected, _ = pairs_allowed(data, targets, candidates, sim_pv, rules, scratch)
    np.testing.assert_array_equal(allowed, expected)
    for b, row in enumerate(candidates):
        group: list[int] = []
        for j in np.flatnonzero(allowed[b]):
            if len(group) < 3 and all(
                violation(data, row[j], row[m], np.nan, rules) == VALID
                and violation(data, row[m], row[j], np.nan, rules) == VALID
                for m in group
            ):
                group.append(j)
        assert members[b].tolist() == group + [-1] * (3 - len(group))
    assert (members[:, 1] >= 0).all()  # groups form: row 5 and row 6 (one text) never share one
    refused = np.array([[1, 3, 4]])  # image 0's own caption, a copy of it, a near-copy
    none = np.zeros(refused.shape)
    assert not pairs_allowed(data, np.array([0]), refused, none, rules, scratch)[0].any()
    trusted, _ = allowed_group(
        data, np.array([0]), refused, none, ~np.zeros(refused.shape, bool), rules, scratch,
        need=3, group=0,
    )  # fmt: skip
    assert trusted.all()
    first, _ = allowed_group(
        data, targets, candidates, sim_pv, known, rules, scratch, need=1, group=0
    )
    assert (first.sum(axis=1) == 1).all()  # the walk stops once it has what it needs
