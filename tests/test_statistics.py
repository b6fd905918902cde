import pyarrow as pa

from schemas.records import Skip
from transforms.dataset.statistics import compute_statistics, describe, table_one


def _table(image_ids, scores, edits=None):
    return pa.table(
        {
            "image_id": image_ids,
            "decoy_edits": edits or [[""] * len(s) for s in scores],
            "decoy_sim_pv": [s for s in scores],
            "decoy_sim_surf": [s for s in scores],
            "decoy_score": [s for s in scores],
        }
    )


def test_counts_images_instances_and_skips_per_split():
    instances = {
        "dev": _table(["1", "1"], [[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.5, 0.5]]),
        "test": None,
        "train": _table(["2"], [[0.9] * 4]),
    }
    skips = [Skip("decoys/too_few", "c9", "dev"), Skip("normalize/empty_caption", "c1")]
    statistics = compute_statistics(instances, skips, {}, {"validity/same_image": 3})
    dev = statistics["splits"]["dev"]
    assert (dev["images"], dev["instances"], dev["skipped"]) == (1, 2, {"decoys/too_few": 1})
    assert dev["decoys"]["sim_pv"]["count"] == 8
    assert abs(dev["decoys"]["sim_pv"]["mean"] - 3.0 / 8) < 1e-12
    test = statistics["splits"]["test"]
    assert (test["images"], test["instances"], test["skipped"]) == (0, 0, {})
    assert test["decoys"]["score"] == {"count": 0}
    assert statistics["splits"]["train"]["decoys"]["sim_surf"]["max"] == 0.9
    assert statistics["total"] == {"images": 2, "instances": 3}
    assert statistics["skipped"] == {"decoys/too_few": 1, "normalize/empty_caption": 1}
    score = statistics["decoys"]["score"]
    assert score["count"] == 12
    assert abs(score["mean"] - (1.0 + 2.0 + 3.6) / 12) < 1e-12
    assert (score["min"], score["max"]) == (0.1, 0.9)
    assert statistics["validity"]["validity/same_image"] == 3
    assert statistics["validity"]["validity/repeats_an_option"] == 0
    assert "dev" in table_one(statistics)
    assert statistics["options_per_instance"] == 5


def test_edited_decoys_are_counted_and_left_out_of_the_distributions():
    nan = float("nan")
    instances = {
        "dev": _table(["1", "2"], [[0.4], [nan]], edits=[[""], ["switch_people: swapped"]]),
        "test": None,
        "train": None,
    }
    statistics = compute_statistics(instances, [], {}, {})
    dev = statistics["splits"]["dev"]
    assert dev["edited_decoys"] == 1
    assert (dev["decoys"]["sim_pv"]["count"], dev["decoys"]["sim_pv"]["mean"]) == (1, 0.4)
    assert statistics["options_per_instance"] == 2


def test_histogram_includes_both_ends_and_deciles_are_ordered():
    import numpy as np

    summary = describe(np.array([-1.0, -0.96, 0.0, 0.99, 1.0]))
    counts = summary["histogram"]["counts"]
    assert counts[0] == 2 and counts[20] == 1 and counts[39] == 2
    assert summary["deciles"] == sorted(summary["deciles"])
    assert describe(np.zeros(0)) == {"count": 0}


def test_coverage_is_the_share_of_a_splits_captions_that_are_targets():
    dev = _table(["1", "1", "2"], [[0.5] * 4] * 3).append_column(
        "target_caption_id", pa.array(["10", "10", "20"])
    )
    instances = {"dev": dev, "test": None, "train": None}
    skips = [Skip("closed_sets/no_5_clique", "30", "dev")]
    statistics = compute_statistics(instances, skips, {"dev": 3, "test": 2, "train": 0}, {})
    splits = statistics["splits"]
    assert splits["dev"]["coverage"] == {"captions": 3, "targets": 2, "share": 2 / 3}
    assert splits["dev"]["skipped"] == {"closed_sets/no_5_clique": 1}
    assert splits["test"]["coverage"] == {"captions": 2, "targets": 0, "share": 0.0}
    assert "66.7%" in table_one(statistics)
    without = compute_statistics(instances, skips, {}, {})
    assert "coverage" not in without["splits"]["dev"]
