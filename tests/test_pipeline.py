"""The whole pipeline on the DirectRunner, checked on what it wrote."""

import json
import os

from tests.dataset_checks import check_dataset


def test_synthetic_dataset_invariants(small_dataset):
    rows = check_dataset(small_dataset[1], sample=40)
    assert sum(len(r) for r in rows.values()) > 1000


def test_split_pool_draws_decoys_from_the_targets_split_on_two_workers(small_dataset_split_pool):
    check_dataset(small_dataset_split_pool[1], sample=40)


def test_statistics_count_every_caption(small_dataset):
    output, _ = small_dataset
    with open(os.path.join(output, "statistics.json")) as handle:
        statistics = json.load(handle)
    with open(os.path.join(output, "manifest.json")) as handle:
        manifest = json.load(handle)
    assert manifest["statistics"]["splits"] == statistics["splits"]
    metrics = manifest["metrics"]
    assert (
        metrics["normalize/duplicate_caption"]
        == statistics["skipped"]["normalize/duplicate_caption"]
    )
    assert (
        metrics["corpus/captions"]
        == metrics["decoys/targets"]
        == (
            statistics["total"]["instances"]
            + statistics["skipped"].get("decoys/fewer_than_4_candidates_with_positive_score", 0)
        )
    )
    assert statistics["total"]["instances"] + sum(statistics["skipped"].values()) == 1500
    assert statistics["decoys"]["score"]["count"] == 4 * statistics["total"]["instances"]
    assert (
        sum(statistics["decoys"]["sim_surf"]["histogram"]["counts"])
        == (statistics["decoys"]["sim_surf"]["count"])
    )
