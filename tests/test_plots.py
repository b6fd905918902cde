"""The plots show what the JSON says: one curve or bar per thing, text-only rows set apart."""

import io

import numpy as np
from matplotlib.image import imread

from schemas.records import Skip
from transforms.dataset.statistics import DECOY_MEASURES, compute_statistics, describe
from transforms.report.plots import (
    BEFORE_SPLIT,
    IMAGE_COLOUR,
    TEXT_COLOUR,
    accuracy,
    dataset_plots,
    needs_log_scale,
    similarity_curves,
    skip_bars,
    validity_bars,
)


def _statistics() -> dict:
    rng = np.random.default_rng(0)
    splits = {
        split: {
            "images": images,
            "instances": 5 * images,
            "skipped": {"decoys/in_no_closed_set": images // 10},
            "decoys": {name: describe(rng.uniform(0, 1, 4 * images)) for name in DECOY_MEASURES},
        }
        for split, images in (("train", 300), ("dev", 50), ("test", 40))
    }
    return {
        "splits": splits,
        "skipped": {"decoys/in_no_closed_set": 39},
        "validity": {"validity/same_image": 12, "validity/repeats_an_option": 0},
    }


def _pixels(png: bytes) -> np.ndarray:
    return (imread(io.BytesIO(png))[..., :3] * 255).round().astype(int).reshape(-1, 3)


def _has_colour(png: bytes, colour: str) -> bool:
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    return bool((np.abs(_pixels(png) - rgb).sum(axis=1) <= 3).any())


def test_dataset_plots_are_pngs_and_the_same_bytes_every_time():
    first, second = dataset_plots(_statistics()), dataset_plots(_statistics())
    assert set(first) == {"decoy_similarities.png", "split_sizes.png", "skipped.png"}
    for name, (caption, png) in first.items():
        assert caption and png.startswith(b"\x89PNG\r\n\x1a\n")
        assert png == second[name][1], name  # reruns write identical versions


def _metrics(*rows: tuple[str, str, float]) -> dict:
    result = {"accuracy": 0.0, "std": 0.01}
    return {
        "chance": 0.2,
        "models": [
            {"model": name, "input": kind, "dev": {**result, "accuracy": a}, "test": result}
            for name, kind, a in rows
        ],
    }


def test_accuracy_draws_text_only_rows_in_their_own_colour():
    mixed = accuracy(_metrics(("Hub by BLEU", "text", 0.3), ("FFNN", "image+text", 0.6)))
    assert _has_colour(mixed, TEXT_COLOUR) and _has_colour(mixed, IMAGE_COLOUR)
    images_only = accuracy(_metrics(("FFNN", "image+text", 0.6)))
    assert not _has_colour(images_only, TEXT_COLOUR) and _has_colour(images_only, IMAGE_COLOUR)


def test_no_similarity_plot_when_every_decoy_is_an_edit():
    statistics = _statistics()
    for split in statistics["splits"].values():
        split["decoys"] = {name: describe(np.zeros(0)) for name in DECOY_MEASURES}
    assert set(dataset_plots(statistics)) == {"split_sizes.png", "skipped.png"}
    assert "decoy_similarities.png" in dataset_plots(_statistics())


def test_every_skip_reason_has_a_bar_duplicates_before_the_split():
    skips = [
        *(Skip("normalize/duplicate_caption", f"d{n}") for n in range(7)),  # no split yet
        Skip("normalize/empty_caption", "e1"),
        *(Skip("decoys/in_no_closed_set", f"c{n}", "train") for n in range(3)),
        Skip("decoys/in_no_closed_set", "c9", "test"),
    ]
    statistics = compute_statistics({"train": None, "dev": None, "test": None}, skips, {}, {})
    reasons, stacks = skip_bars(statistics)
    assert reasons == [
        "decoys/in_no_closed_set",
        "normalize/duplicate_caption",
        "normalize/empty_caption",
    ]
    assert stacks == {
        BEFORE_SPLIT: [0, 7, 1],
        "train": [3, 0, 0],
        "dev": [0, 0, 0],
        "test": [1, 0, 0],
    }
    totals = [sum(column) for column in zip(*stacks.values(), strict=True)]
    assert totals == [statistics["skipped"][reason] for reason in reasons]


def test_validity_bars_keep_small_counts_visible():
    statistics = {"validity": {"validity/same_image": 25, "validity/repeats_an_option": 5013}}
    statistics["validity"]["validity/too_similar"] = 0
    rules = validity_bars(statistics)
    assert rules == [("same_image", 25), ("repeats_an_option", 5013)]
    assert needs_log_scale([count for _, count in rules])
    assert not needs_log_scale([25, 2500]) and not needs_log_scale([])


def test_each_histogram_spans_its_measures_range():
    statistics = _statistics()
    curves = similarity_curves(statistics)
    assert [limits for limits, _ in curves.values()] == [(-1.0, 1.0), (0.0, 1.0), (0.0, 1.0)]
    for name, ((low, high), lines) in curves.items():
        assert [label.split()[0] for label, _, _ in lines] == ["train", "dev", "test"]
        for _, edges, share in lines:
            assert (edges[0], edges[-1], len(edges)) == (low, high, len(share) + 1), name
            assert abs(share.sum() - 1) < 1e-9  # no decoy falls outside the range drawn
    dev = statistics["splits"]["dev"]["decoys"]
    dev["score"] = describe(np.array([-0.2, 0.3, 0.5]))  # a negative simPV pulls Score below 0
    (low, _), lines = similarity_curves(statistics)["score"]
    assert low == -1.0 and all(abs(share.sum() - 1) < 1e-9 for _, _, share in lines)
