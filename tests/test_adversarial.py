"""Adversarial filtering (--adversarial_rounds): its maths, the composite, and a whole run."""

import json
import os

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.options import GenerateOptions
from schemas.layout import ADVERSARIAL_FILE, build_path, dataset_path
from schemas.records import Reserved, Selection
from tests.support.dataset_checks import check_dataset
from tests.support.local import local_pipeline
from tests.support.strategies import corpus_ref, strategy
from tests.support.versions import SMALL
from transforms.errors import InputError
from transforms.strategies.adversarial import (
    MODEL,
    RULES,
    AdversarialFilter,
    accuracy,
    cross_fitted,
    folds,
    margins,
    objective,
    option_features,
    swap,
)
from transforms.strategies.adversarial import (
    fit_softmax as fit,
)


def unit_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    vectors = rng.normal(size=shape)
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def similarity(rng: np.random.Generator, n: int, items: int):
    """(cosines, simSURF-like, lengths) of ``n`` instances of ``items`` random items."""
    vectors = unit_rows(rng, (n, items, 8))
    cosines = np.einsum("bjd,bkd->bjk", vectors, vectors).astype(np.float32)
    surfaces = rng.uniform(size=(n, items, items)).astype(np.float32)
    lengths = rng.integers(5, 15, size=(n, items)).astype(np.float32)
    return cosines, surfaces, lengths, vectors


def raw_features(v: np.ndarray, b: np.ndarray, lengths: np.ndarray, j: int) -> np.ndarray:
    """Option j's hubs, length and centroid cosine, straight from their definitions."""
    others = [k for k in range(len(v)) if k != j]
    centroid = v[others].mean(0)
    return np.array(
        [
            np.mean(v[others] @ v[j]),
            np.mean(b[j, others]),
            lengths[j],
            v[j] @ centroid / np.linalg.norm(centroid),
        ]
    )


def test_features_are_each_options_hubs_length_and_centroid_relative_to_the_others():
    cosines, surfaces, lengths, vectors = similarity(np.random.default_rng(0), 3, 7)
    options = np.array([[0, 1, 2, 3, 4], [0, 5, 2, 6, 4], [0, 6, 5, 1, 2]])
    x = option_features(cosines, surfaces, lengths, np.arange(3), options)
    assert x.shape == (3, 5, 4)
    for i, columns in enumerate(options):
        v, b = vectors[i, columns], surfaces[i][np.ix_(columns, columns)]
        raws = np.stack([raw_features(v, b, lengths[i, columns], j) for j in range(5)])
        expected = raws - (raws.sum(0) - raws) / 4
        np.testing.assert_allclose(x[i], expected, rtol=1e-4, atol=1e-5)


def test_the_fit_lowers_its_loss_and_finds_a_planted_leak():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2000, 5, 4))
    x[:, 0, 2] += 1.0  # the target is "longer"
    w = fit(x)
    assert np.argmax(np.abs(w)) == 2 and w[2] > 0
    assert objective(x, w, 1e-3) < objective(x, np.zeros(4), 1e-3)
    fold = folds([str(k) for k in range(2000)], seed=0, round_=1)
    assert 0.4 < fold.mean() < 0.6
    held_out = np.einsum("nkf,nf->nk", x, cross_fitted(x, fold))
    assert accuracy(held_out) > 0.45  # chance is 0.2


def test_accuracy_shares_ties_and_margins_compare_the_target_with_the_best_decoy():
    scores = np.array([[1.0, 1.0, 0.0, 0.0, 0.0], [2.0, 0.0, 1.0, 0.0, 0.0]])
    assert accuracy(scores) == pytest.approx(0.75)
    assert margins(scores).tolist() == [0.0, 1.0]


def test_swaps_lower_the_margins_of_easy_instances_with_available_reserve_items_only():
    rng = np.random.default_rng(2)
    n, items = 200, 9
    cosines, surfaces, lengths, _ = similarity(rng, n, items)
    sim = (cosines, surfaces, lengths)
    options = np.tile(np.arange(5), (n, 1))
    available = np.ones((n, items), dtype=bool)
    available[:, :5] = False
    available[::3, 7] = False  # some reserves are shorter
    original = available.copy()
    weights = np.tile([2.0, 1.0, 0.1, 0.5], (n, 1))
    margin = margins(np.einsum("nkf,nf->nk", option_features(*sim, np.arange(n), options), weights))
    easy = np.flatnonzero(margin > 0)
    before = options.copy()
    swapped = swap(sim, options, available, easy, weights[easy], margin[easy])
    after = margins(np.einsum("nkf,nf->nk", option_features(*sim, np.arange(n), options), weights))
    changed = np.flatnonzero((options != before).any(1))
    assert swapped == len(changed) > 0
    assert set(changed) <= set(easy)
    assert np.all(after[changed] < margin[changed])
    unchanged = np.setdiff1d(np.arange(n), changed)
    np.testing.assert_allclose(after[unchanged], margin[unchanged], rtol=1e-6)
    for i in changed:
        assert (options[i] != before[i]).sum() == 1 and options[i, 0] == 0
        assert len(set(options[i].tolist())) == 5
        new = options[i][options[i] >= 5]
        assert original[i, new].all() and not available[i, new].any()
    assert (original.sum() - available.sum()) == swapped


def test_the_reserve_leaves_the_decoys_unchanged_and_the_filter_keeps_them_valid(tmp_path):
    ref = corpus_ref(str(tmp_path / "corpus"))
    chooser = strategy("mcic", decoy_pool="all", adversarial_rounds=1, adversarial_reserve=4)
    output = str(tmp_path / "out")
    with local_pipeline() as pipeline:
        refs = pipeline | beam.Create([ref])
        plain = refs | "Plain" >> strategy("mcic", decoy_pool="all")
        reserved = refs | "Reserved" >> chooser
        unwrapped = reserved["selections"] | "Unwrap" >> beam.Map(lambda r: r.selection)
        same = (
            {
                "plain": plain["selections"] | "PlainIds" >> beam.Map(decoy_ids),
                "reserved": unwrapped | "ReservedIds" >> beam.Map(decoy_ids),
            }
            | "Join" >> beam.CoGroupByKey()
            | "Same" >> beam.Map(lambda kv: list(kv[1]["plain"]) == list(kv[1]["reserved"]))
        )
        assert_that(same, equal_to([True] * 10), label="same decoys")
        filtered = reserved["selections"] | AdversarialFilter(
            corpus=chooser.corpus, ref=refs, rounds=1, reserve=4, seed=0, output=output
        )
        checked = filtered | "Check" >> beam.Map(
            lambda s: (
                isinstance(s, Selection)
                and len(s.decoys) == 4
                and len({s.target.text, *(d.text for d in s.decoys)}) == 5
                and s.target.image_id not in {d.image_id for d in s.decoys}
                and [d.score for d in s.decoys] == sorted((d.score for d in s.decoys), reverse=True)
            )
        )
        assert_that(checked, equal_to([True] * 10), label="valid selections")
        reserves = reserved["selections"] | "Reserves" >> beam.Map(reserve_is_valid)
        assert_that(reserves, equal_to([True] * 10), label="valid reserves")
    with open(os.path.join(output, ADVERSARIAL_FILE)) as handle:
        report = json.load(handle)
    assert report["splits"]["train"]["instances"] == 10
    assert set(report["splits"]["train"]["before"]) == {*RULES, MODEL}


def decoy_ids(selection: Selection) -> tuple[str, tuple[str, ...]]:
    return selection.target.caption_id, tuple(d.caption_id for d in selection.decoys)


def reserve_is_valid(reserved: Reserved) -> bool:
    texts = [reserved.selection.target.text]
    texts += [d.text for d in (*reserved.selection.decoys, *reserved.reserve)]
    images = {d.image_id for d in (*reserved.selection.decoys, *reserved.reserve)}
    return len(set(texts)) == len(texts) and reserved.selection.target.image_id not in images


def test_options_refuse_adversarial_rounds_for_unfilterable_strategies_and_negative_values():
    with pytest.raises(InputError, match="decoys of --decoys mcic or random, not closed_sets"):
        GenerateOptions(
            input="x", output="y", decoys="closed_sets", adversarial_rounds=1
        ).validate()
    with pytest.raises(InputError, match="--adversarial_reserve must be >= 0"):
        GenerateOptions(input="x", output="y", decoys="mcic", adversarial_reserve=-1).validate()
    assert GenerateOptions(input="x", output="y", decoys="mcic").strategy_config().reserve == 0
    config = GenerateOptions(
        input="x", output="y", decoys="random", adversarial_rounds=2
    ).strategy_config()
    assert config.reserve == 8


@pytest.mark.slow
def test_generate_with_adversarial_rounds_fools_its_model_and_stays_valid(shared, synthetic_corpus):
    options = GenerateOptions(
        input=synthetic_corpus, output="", decoys="mcic", adversarial_rounds=2, **SMALL
    )
    directory, options = shared.version(options)
    check_dataset(options, sample=40)  # instances, validity (nltk), positive Score, formats
    with open(dataset_path(directory, "statistics.json")) as handle:
        statistics = json.load(handle)
    with open(build_path(directory, ADVERSARIAL_FILE)) as handle:
        assert statistics["adversarial_filtering"] == json.load(handle)
    report = statistics["adversarial_filtering"]
    assert report["rounds"] == 2 and set(report["splits"]) == {"train", "dev", "test"}
    train = report["splits"]["train"]
    assert [entry["round"] for entry in train["rounds"]] == [1, 2]
    assert set(train["before"]) == set(train["after"]) == {*RULES, MODEL}
    assert train["after"][MODEL] < train["before"][MODEL]
    with open(os.path.join(directory, "manifest.json")) as handle:
        metrics = json.load(handle)["metrics"]
    replaced = sum(e["replaced_decoys"] for s in report["splits"].values() for e in s["rounds"])
    assert metrics["adversarial/replaced_decoys"] == replaced > 0
