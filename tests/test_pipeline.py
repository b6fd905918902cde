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


def test_random_decoys_are_drawn_uniformly_from_other_images(
    random_dataset, mcic_dataset, training_corpus
):
    from pipelines.options import GenerateOptions
    from tests.support.dataset_checks import read_corpus, read_parquet, written_dataset
    from tests.support.versions import TRAINING
    from transforms.corpus.neighbours import load_searchable
    from transforms.strategies.invariants import describing, image_captions, valid_decoy
    from transforms.strategies.random_decoys import DRAWN, draw

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
    # the written decoys are the first drawn that the validity rules allow, in drawing order
    options = GenerateOptions(
        input=training_corpus, output=random_dataset, decoys="random", **TRAINING
    )
    captions = read_corpus(random_dataset)
    describes = describing(written_dataset(options, captions, {}, 0))
    own = image_captions(captions)
    row_of = {caption["caption_id"]: r for r, caption in enumerate(captions)}
    by_caption = {row["target_caption_id"]: row for row in rows}
    drawn = draw(searchable.corpus, searchable.pools["all"], targets, DRAWN, seed=0)[0]
    np.testing.assert_array_equal(drawn[:, :4], first[0])  # the same draws, more of them
    passed_over = 0
    for target, candidates in zip(targets, drawn, strict=True):
        instance = by_caption[captions[target]["caption_id"]]
        ids = [captions[c]["caption_id"] for c in candidates if c >= 0]
        written = instance["decoy_caption_ids"]
        reached = max(ids.index(caption_id) for caption_id in written)
        for caption_id in ids[:reached]:
            if caption_id not in written:
                passed_over += 1
                caption = captions[row_of[caption_id]]
                assert describes(row_of[caption_id], instance["image_id"]) or not valid_decoy(
                    caption["text"], own[instance["image_id"]], options.surf_limit
                ), caption_id
    assert passed_over < len(targets) // 5  # mostly the first four drawn
