"""OPTIMIZE-PV / OPTIMIZE-SCORE metrics on hand-made cases, and the searches end to end."""

import dataclasses
import json
import os
import pathlib

import numpy as np
import pytest

from pipelines.generate import run
from pipelines.optimize import run_search
from pipelines.options import GenerateOptions
from tests.support.versions import COCO_VAL2017, TINY_ENCODER, TINY_THRESHOLD
from transforms.search.optimize import (
    mgs_rank,
    neighbourhoods_within,
    rerank_positions,
    same_image_partners,
    wmgs_ranks,
)


def _unit(angles_degrees):
    radians = np.radians(angles_degrees)
    return np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32)


def test_mgs_rank_by_hand():
    # On a circle: A0 at 0 deg, A1 at 30; B0 at 10, B1 at 100.
    vectors = _unit([0, 30, 10, 100])
    images = np.array([0, 0, 1, 1])
    # From A0: B0 (10) is closer than A1 (30) -> rank 2. From A1: B0 (20 away) beats
    # A0 (30) -> 2. From B0: A0 (10) beats B1 (90) and A1 (20) too -> 3.
    # From B1: A1 (70) beats B0 (90) -> 2.
    rank, pairs = mgs_rank(vectors, images)
    assert pairs == 4
    assert rank == pytest.approx((2 + 2 + 3 + 2) / 4)


def test_images_with_one_caption_give_no_pairs():
    vectors = _unit([0, 30, 60])
    rank, pairs = mgs_rank(vectors, np.array([0, 0, 1]))
    assert pairs == 2 and rank == 1.0


def test_wmgs_paper_example_ranks_4_10_16_22_give_13():
    neighbours = 25
    candidates = np.arange(100, 100 + neighbours)[None, :]
    positions = np.arange(1, neighbours + 1)[None, :]
    partners = np.array([[103, 109, 115, 121]])  # at positions 4, 10, 16, 22
    ranks = wmgs_ranks(candidates, positions, partners, neighbours)
    assert ranks.tolist() == [4, 10, 16, 22]
    assert ranks.mean() == 13


def test_wmgs_absent_same_image_caption_counts_n_plus_one():
    candidates = np.array([[5, 6, 7]])
    positions = rerank_positions(np.array([[0.1, 0.9, 0.5]]))
    assert positions.tolist() == [[3, 1, 2]]
    assert wmgs_ranks(candidates, positions, np.array([[7, 99]]), 3).tolist() == [2, 4]


def test_same_image_partners_and_exact_neighbourhoods():
    partners = same_image_partners(np.array([3, 1, 3, 3]))
    assert sorted(partners[0].tolist()) == [2, 3]
    assert partners[1].tolist() == [-1, -1]
    vectors = _unit([0, 5, 50, 90, 181])
    candidates, sims = neighbourhoods_within(vectors, 3)
    assert candidates[0].tolist() == [1, 2, 3]
    assert 0 not in candidates[0] and candidates[4, 0] == 3
    np.testing.assert_allclose(sims[0], [np.cos(np.radians(a)) for a in (5, 50, 90)], atol=1e-6)


def _search_options(corpus, output, **change):
    base = GenerateOptions(
        input=corpus,
        output=output,
        validity_model=TINY_ENCODER,
        validity_threshold=TINY_THRESHOLD,
        n_dev=60,
        n_test=40,
        neighbours=60,
        pv_dim_grid="32",
        pv_epochs_grid="1,20",
        lambda_grid="0,0.5,1",
    )
    return dataclasses.replace(base, **change)


def test_search_prefers_enough_epochs_on_a_generated_corpus(synthetic_corpus, tmp_path):
    report = run_search(_search_options(synthetic_corpus, str(tmp_path)), [])
    grid = {(p["dim"], p["epochs"]): p["mgs_rank"] for p in report["optimize_pv"]["grid"]}
    assert grid[(32, 20)] < 0.7 * grid[(32, 1)]
    assert report["optimize_pv"]["winner"]["epochs"] == 20
    assert [p["lambda"] for p in report["optimize_score"]["grid"]] == [0.0, 0.5, 1.0]
    written = tmp_path / "search"
    assert json.loads((written / "report.json").read_text()) == report
    assert sorted(os.listdir(written)) == ["pv-dim32-epochs20.model", "report.json"]


@pytest.mark.slow
def test_generate_optimize_uses_and_records_the_winners(synthetic_corpus, tmp_path):
    options = _search_options(
        synthetic_corpus, str(tmp_path), optimize=True, pv_epochs_grid="2,15", lambda_grid="0.2,0.6"
    )
    version = pathlib.Path(run(options).version.directory)
    manifest = json.loads((version / "manifest.json").read_text())
    report = json.loads((version / "build" / "search" / "report.json").read_text())
    chosen = manifest["search"]["chosen"]
    assert chosen["pv_epochs"] == report["optimize_pv"]["winner"]["epochs"]
    assert chosen["score_lambda"] == report["optimize_score"]["winner"]["lambda"]
    assert manifest["options"]["pv_epochs"] == chosen["pv_epochs"]
    assert chosen["pv_model"].endswith(f"pv-dim32-epochs{chosen['pv_epochs']}.model")
    assert manifest["metrics"]["corpus/captions"] > 0
    card = (version / "dataset" / "README.md").read_text(encoding="utf-8")
    assert "| `--pv_epochs_grid` | `2,15` |" in card  # a run that searched lists its grids


@pytest.mark.slow
def test_coco_val2017_search_beats_the_papers_setting(tmp_path):
    options = GenerateOptions(
        input=COCO_VAL2017,
        output=str(tmp_path),
        pv_dim_grid="256,1024",
        pv_epochs_grid="5,10",
        pv_workers=2,
        lambda_grid="0,0.3,0.7,1",
    )
    report = run_search(
        options, ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"]
    )
    grid = {(p["dim"], p["epochs"]): p["mgs_rank"] for p in report["optimize_pv"]["grid"]}
    winner = report["optimize_pv"]["winner"]
    assert len(grid) == 4
    assert winner["mgs_rank"] == min(grid.values()) < grid[(1024, 5)]
    assert report["evaluation"]["captions"] > 9000  # the dev split's ~10k captions
    assert all(1 <= p["wmgs_rank"] <= 501 for p in report["optimize_score"]["grid"])


def test_a_sampled_search_keeps_the_smallest_key_images_and_is_not_reused():
    from pipelines.generate import with_search_winners
    from schemas.records import Caption
    from transforms.corpus.split import image_key
    from transforms.search.optimize import search_corpus

    captions = [
        Caption(
            str(10 * i + k),
            str(i),
            f"{i}_{k}",
            f"a dog number {k}",
            f"{i}.jpg",
            "",
            "dev" if i < 3 else "train",
        )
        for i in range(10)
        for k in range(2)
    ]
    sampled = search_corpus(captions, split="dev", sample_images=4, seed=1)
    kept = sorted(range(10), key=lambda i: image_key(1, str(i)))[:4]
    assert not sampled.full
    assert len(sampled.documents) == 8 and len(set(sampled.image_of.tolist())) == 4
    assert len(sampled.evaluation) == 2 * len([i for i in kept if i < 3])
    assert search_corpus(captions, split="dev", sample_images=0, seed=1).full

    report = {
        "optimize_pv": {"winner": {"dim": 64, "epochs": 20, "model": "m.model"}},
        "optimize_score": {"winner": {"lambda": 0.4}},
        "evaluation": {"full_corpus": False},
    }
    options = with_search_winners(GenerateOptions(input="i", output="o"), report)
    assert (options.pv_dim, options.pv_epochs, options.score_lambda) == (64, 20, 0.4)
    assert options.pv_model == ""  # trained on a sample: retrain on the whole corpus
