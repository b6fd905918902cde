"""The whole pipeline on the DirectRunner, checked on what it wrote."""

import json
import os
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest

from schemas.layout import corpus_folder, dataset_path
from tests.support.dataset_checks import check_dataset


def test_synthetic_dataset_invariants(small_dataset):
    rows = check_dataset(small_dataset[1], sample=40)
    assert sum(len(r) for r in rows.values()) > 1000


@pytest.mark.slow
def test_split_pool_draws_decoys_from_the_targets_split_on_two_workers(small_dataset_split_pool):
    check_dataset(small_dataset_split_pool[1], sample=40)


def test_statistics_count_every_caption(small_dataset):
    output, _ = small_dataset
    with open(dataset_path(output, "statistics.json")) as handle:
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


def test_random_decoys_are_drawn_uniformly_from_other_images(random_dataset, mcic_dataset):
    from pipelines.options import GenerateOptions
    from tests.support.dataset_checks import read_parquet
    from transforms.corpus.neighbours import load_searchable
    from transforms.strategies.random_decoys import draw

    rows = [
        row for split in ("train", "dev", "test") for row in read_parquet(random_dataset, split)
    ]
    for row in rows:
        assert row["option_caption_ids"][row["label"]] == row["target_caption_id"]
        assert row["image_id"] not in row["decoy_image_ids"]
        target_text = row["options"][row["label"]]
        assert all(
            option != target_text for k, option in enumerate(row["options"]) if k != row["label"]
        )
        assert len(set(row["decoy_caption_ids"])) == 4
        assert row["decoy_score"] == sorted(row["decoy_score"], reverse=True)
    corpus = pq.read_table(os.path.join(corpus_folder(random_dataset), "captions.parquet"))
    split_of = dict(zip(*corpus.select(["caption_id", "split"]).to_pydict().values(), strict=True))
    decoy_splits = Counter(split_of[cid] for row in rows for cid in row["decoy_caption_ids"])
    caption_splits = Counter(split_of.values())
    for split, count in caption_splits.items():  # uniform over the pool: shares match
        assert abs(decoy_splits[split] / (4 * len(rows)) - count / len(split_of)) < 0.02
    random_pv = np.mean([pv for row in rows for pv in row["decoy_sim_pv"]])
    mcic_pv = np.mean(
        [pv for row in read_parquet(mcic_dataset, "dev") for pv in row["decoy_sim_pv"]]
    )
    assert random_pv < mcic_pv - 0.3
    config = GenerateOptions(input="", output="").index_config()
    searchable = load_searchable(corpus_folder(random_dataset), "all", config)
    targets = np.arange(50)
    first = draw(searchable.corpus, searchable.pools["all"], targets, 4, seed=0)
    again = draw(searchable.corpus, searchable.pools["all"], targets, 4, seed=0)
    other = draw(searchable.corpus, searchable.pools["all"], targets, 4, seed=1)
    np.testing.assert_array_equal(first[0], again[0])
    assert (first[0] != other[0]).mean() > 0.9
    by_caption = {row["target_caption_id"]: row for row in rows}
    caption_ids = corpus.column("caption_id").to_pylist()
    for target, candidates in zip(targets, first[0], strict=True):
        written = by_caption[caption_ids[target]]["decoy_caption_ids"]
        assert sorted(written) == sorted(caption_ids[c] for c in candidates)
