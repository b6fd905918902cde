"""The plots show what the JSON says: one curve or bar per thing, text-only rows set apart."""

import io

import numpy as np
from matplotlib.image import imread

from transforms.dataset.statistics import DECOY_MEASURES, describe
from transforms.report.plots import IMAGE_COLOUR, TEXT_COLOUR, accuracy, dataset_plots


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
