"""simSURF kernel against nltk itself."""

import json
import warnings
from collections import Counter

import numpy as np
import pytest
from nltk.translate.bleu_score import brevity_penalty, sentence_bleu

from tests.support.versions import COCO_VAL2017
from transforms.corpus.normalize import normalize_caption
from transforms.corpus.surface import (
    encode_ngrams,
    load_reference,
    loaded_surface_close,
    sim_surf_batch,
    unload_reference,
)


def nltk_reference(candidate, target):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bleu = sentence_bleu([list(target)], list(candidate))
    return bleu / brevity_penalty(len(target), len(candidate))


def kernel(captions, targets, candidates):
    table = encode_ngrams(captions)
    return sim_surf_batch(table, np.array(targets), np.array(candidates), table.scratch())


def test_hand_made_cases_equal_nltk():
    captions = [
        ("a", "dog", "on", "a", "dog", "bed"),  # repeated n-grams: clipping
        ("a", "dog", "on", "a", "bed"),
        ("a", "dog"),  # too short for 3-grams: 0
        ("a", "dog", "on", "a", "dog", "bed"),  # identical to 0: 1
        ("the", "the", "the", "the"),
        ("the", "cat", "sat", "on", "the", "mat", "the", "end"),
    ]
    pairs = [(t, c) for t in range(len(captions)) for c in range(len(captions))]
    out = kernel(captions, [t for t, _ in pairs], [[c] for _, c in pairs])
    for (t, c), value in zip(pairs, out[:, 0], strict=True):
        assert value == pytest.approx(nltk_reference(captions[c], captions[t]), abs=1e-12)
    assert out[3 * len(captions), 0] == pytest.approx(1.0)


def test_missing_candidates_score_zero_and_scratch_is_left_clean():
    captions = [("a", "dog", "runs", "fast"), ("a", "dog", "runs", "fast")]
    table = encode_ngrams(captions)
    scratch = table.scratch()
    out = sim_surf_batch(table, np.array([0]), np.array([[1, -1]]), scratch)
    assert out.tolist() == [[1.0, 0.0]]
    assert not scratch.any()


def _real_captions() -> list[tuple[str, ...]]:
    with open(COCO_VAL2017, encoding="utf-8") as handle:
        annotations = json.load(handle)["annotations"]
    annotations.sort(key=lambda a: (a["image_id"], a["id"]))
    captions = [normalize_caption(a["caption"]) for a in annotations]
    return [c for c in captions if c]


def test_the_encoding_follows_its_definition_on_real_captions():
    """Order-n n-grams are numbered in sorted order after the lower orders' ids, and each
    occurrence is ranked among the equal n-grams of its caption: in plain Python."""
    captions = [tuple(caption) for caption in _real_captions()[:3000]] + [()]
    table = encode_ngrams(captions)
    number, first = {}, 0
    for n in range(1, 5):
        grams = sorted({c[i : i + n] for c in captions for i in range(len(c) - n + 1)})
        number.update((gram, first + k) for k, gram in enumerate(grams))
        first += len(grams)
    assert table.vocab_size == first
    for row, caption in enumerate(captions):
        assert table.lengths[row] == len(caption)
        for n in range(1, 5):
            seen = Counter()
            expected = []
            for i in range(len(caption) - n + 1):
                seen[caption[i : i + n]] += 1
                expected.append((number[caption[i : i + n]], seen[caption[i : i + n]]))
            block = slice(table.offsets[row, n - 1], table.offsets[row, n])
            encoded = zip(table.ids[block].tolist(), table.ranks[block].tolist(), strict=True)
            assert list(encoded) == expected


def test_equals_nltk_on_many_real_coco_pairs():
    captions = _real_captions()
    rng = np.random.default_rng(7)
    targets = rng.integers(0, len(captions), size=300)
    # Neighbouring rows are mostly captions of the same image: many nonzero BLEUs.
    near = np.clip(targets[:, None] + np.arange(-4, 5)[None, :], 0, len(captions) - 1)
    far = rng.integers(0, len(captions), size=(300, 11))
    candidates = np.concatenate([near, far], axis=1)
    out = kernel(captions, targets, candidates)
    reference = np.array(
        [
            [nltk_reference(captions[c], captions[t]) for c in row]
            for t, row in zip(targets, candidates, strict=True)
        ]
    )
    np.testing.assert_allclose(out, reference, rtol=0, atol=1e-9)
    assert (reference > 0).sum() > 1000  # the comparison covers real overlaps, not just zeros


def test_the_bounded_check_decides_as_the_value_does_even_at_the_limit():
    """The validity rules' test stops early on a bound; it must agree with ``simSURF >=
    limit`` everywhere, including limits equal to a pair's own value."""
    captions = _real_captions()
    table = encode_ngrams(captions)
    rng = np.random.default_rng(3)
    targets = rng.integers(0, len(captions), size=200)
    near = np.clip(targets[:, None] + np.arange(-4, 5)[None, :], 0, len(captions) - 1)
    candidates = np.concatenate([near, rng.integers(0, len(captions), (200, 6))], axis=1)
    values = kernel(captions, targets, candidates)
    scratch = table.scratch()
    exact_limits = rng.choice(values[values > 0], 5, replace=False).tolist()
    for limit in [0.05, 0.3, 0.5, 0.8, 1.0, *exact_limits]:
        decided = np.zeros(candidates.shape, bool)
        for b, target in enumerate(targets):
            load_reference(table.ids, table.offsets, target, scratch)
            for j, candidate in enumerate(candidates[b]):
                decided[b, j] = loaded_surface_close(
                    table.ids, table.ranks, table.offsets, candidate,
                    table.lengths[candidate], scratch, limit,
                )  # fmt: skip
            unload_reference(table.ids, table.offsets, target, scratch)
        np.testing.assert_array_equal(decided, values >= limit)
    assert (values >= 0.5).sum() > 100 and (values >= 1.0).sum() > 0
