from schemas.records import Skip
from transforms.statistics import StatisticsFn, Summary, table_one


def _instance(split, image_id, scores):
    return {
        "split": split,
        "image_id": image_id,
        "decoy_sim_pv": scores,
        "decoy_sim_surf": scores,
        "decoy_score": scores,
    }


def test_counts_images_instances_and_skips_per_split_across_merges():
    combine = StatisticsFn()
    left = combine.create_accumulator()
    for element in (
        _instance("dev", "1", [0.1, 0.2, 0.3, 0.4]),
        _instance("dev", "1", [0.5, 0.5, 0.5, 0.5]),
        Skip("decoys/too_few", "c9", "dev"),
    ):
        left = combine.add_input(left, element)
    right = combine.add_input(combine.create_accumulator(), _instance("train", "2", [0.9] * 4))
    right = combine.add_input(right, Skip("normalize/empty_caption", "c1"))
    statistics = combine.extract_output(combine.merge_accumulators([left, right]))
    assert statistics["splits"]["dev"] == {
        "images": 1,
        "instances": 2,
        "skipped": {"decoys/too_few": 1},
    }
    assert statistics["splits"]["train"]["instances"] == 1
    assert statistics["total"] == {"images": 2, "instances": 3}
    assert statistics["skipped"] == {"decoys/too_few": 1, "normalize/empty_caption": 1}
    score = statistics["decoys"]["score"]
    assert score["count"] == 12
    assert abs(score["mean"] - (1.0 + 2.0 + 3.6) / 12) < 1e-12
    assert (score["min"], score["max"]) == (0.1, 0.9)
    assert "dev" in table_one(statistics)


def test_histogram_bins_include_both_ends():
    summary = Summary()
    for value in (-1.0, -0.96, 0.0, 0.99, 1.0):
        summary.add(value)
    counts = summary.describe()["histogram"]["counts"]
    assert counts[0] == 2 and counts[20] == 1 and counts[39] == 2
