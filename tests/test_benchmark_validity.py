"""benchmarks/validity.py on a sample of Flickr8k's judged pairs with a tiny random
encoder, so that it cannot rot unnoticed; and its AUC against scikit-learn's."""

import re
import zlib
from dataclasses import replace

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from benchmarks import validity
from tests.support.tiny_encoder import tiny_encoder
from transforms.corpus.encoders.registry import ENCODERS, compared_threshold

PAIRS = 200


@pytest.fixture(scope="module")
def captions():
    assert validity.FLICKR8K.is_dir(), f"{validity.FLICKR8K} is missing: ../shared must sit beside"
    return validity.read_captions(validity.FLICKR8K)


def table_rows(output: str, header: str) -> list[list[str]]:
    """The cells of the markdown table whose header row starts with ``header``."""
    lines = output.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def share(cell: str) -> float:
    return float(cell.rstrip("%")) / 100


def test_the_judged_pairs_are_read_as_the_readme_says(captions):
    pairs = validity.judged_pairs(validity.FLICKR8K)
    assert len(pairs) == 5822 and len(captions) == 40460
    assert sum(pair.describes for pair in pairs) == 623  # mean of the three >= 3
    own = next(pair for pair in pairs if pair.own)
    by_image = validity.captions_by_image(captions)
    compared = validity.image_captions(own, by_image)
    assert own.caption_id not in compared and len(compared) == len(by_image[own.image]) - 1


def test_the_validity_benchmark_prints_its_tables(captions, tmp_path, capsys):
    words = {word for text in captions.values() for word in text.lower().split()}
    model = tiny_encoder(tmp_path / "tiny", sorted(words))
    argv = ["--model", str(model), "--pairs", str(PAIRS), "--pv_dim", "16", "--pv_epochs", "1"]
    assert validity.main(argv) == 0
    output = capsys.readouterr().out
    assert f"{PAIRS} judged pairs" in output

    aucs = table_rows(output, "signal")
    assert [row[0] for row in aucs] == [validity.ENCODER, validity.PV_MEAN, validity.PV_MAX]
    assert all(0.0 <= float(cell) <= 1.0 for row in aucs for cell in row[1:])

    rows = table_rows(output, "threshold")
    assert [float(row[0]) for row in rows] == list(validity.THRESHOLDS)
    invalid_kept = [share(row[1]) for row in rows]
    valid_rejected = [share(row[2]) for row in rows]
    assert invalid_kept == sorted(invalid_kept) and valid_rejected == sorted(valid_rejected)[::-1]
    suggested = re.search(r"Suggested threshold: (\d\.\d\d) ", output)
    assert suggested and float(suggested.group(1)) in validity.THRESHOLDS
    assert re.search(r"Encoding: [\d,]+ captions in [\d.]+s, [\d,]+ captions/s", output)


@pytest.mark.parametrize("seed", range(5))
def test_the_auc_is_scikit_learns_with_ties(seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, 300).astype(np.float64)  # six values: many ties
    labels = rng.random(300) < 0.3
    assert validity.roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))


def test_the_matched_pv_threshold_rejects_the_same_share():
    rng = np.random.default_rng(0)
    encoder, pv, describes = rng.random(1000), rng.random(1000), rng.random(1000) < 0.2
    for encoder_row, pv_row in validity.threshold_table(encoder, pv, describes):
        assert pv_row.rejected == pytest.approx(encoder_row.rejected, abs=1e-3)


@pytest.mark.parametrize("family", ENCODERS)
def test_the_threshold_table_rejects_where_the_rule_compares_the_familys_cosines(family):
    rng = np.random.default_rng(0)
    encoder, describes = rng.random(2000), rng.random(2000) < 0.2
    for row, _ in validity.threshold_table(encoder, encoder, describes, (0.5, 0.9), family):
        compared = compared_threshold(row.threshold, family)
        assert row.rejected == np.mean(encoder >= compared)
        assert (compared < row.threshold) == (ENCODERS[family].margin > 0)


def test_the_suggested_threshold_is_the_largest_keeping_few_invalid_decoys():
    rows = [
        validity.ThresholdRow(0.5, 0.01, 0.30, 0.3),
        validity.ThresholdRow(0.6, 0.05, 0.10, 0.1),
        validity.ThresholdRow(0.7, 0.20, 0.02, 0.05),
    ]
    assert validity.suggested(rows)[0].threshold == 0.6
    none_within = [rows[2], validity.ThresholdRow(0.8, 0.50, 0.0, 0.0)]
    assert validity.suggested(none_within)[0] == rows[2]  # Youden's J: 0.78 against 0.5


def instance(example_id, image, decoys, sim_pv=None):
    return {
        "example_id": example_id,
        "split": "train",
        "image_id": image,
        "decoy_caption_ids": decoys,
        "decoy_sim_pv": sim_pv if sim_pv is not None else [0.5] * len(decoys),
    }


JUDGED = [
    validity.JudgedPair("a.jpg", "b.jpg#0", (4, 3, 3)),  # describes a.jpg
    validity.JudgedPair("a.jpg", "c.jpg#1", (1, 1, 2)),
    validity.JudgedPair("b.jpg", "a.jpg#2", (2, 2, 2)),
    validity.JudgedPair("c.jpg", "a.jpg#0", (4, 4, 4)),  # not chosen below
]


def test_the_chosen_decoys_are_joined_with_the_judged_pairs():
    instances = [
        instance("a.jpg#0", "a.jpg", ["b.jpg#0", "c.jpg#1", "d.jpg#0"]),
        instance("a.jpg#1", "a.jpg", ["b.jpg#0", "d.jpg#3"]),  # (a, b#0) again: counted once
        instance("b.jpg#0", "b.jpg", ["a.jpg#2", "c.jpg#1"]),
        instance("d.jpg#0", "d.jpg", ["a.jpg#0"]),  # judged for c.jpg, not for d.jpg
    ]
    assert validity.judged_decoys(instances, JUDGED) == (3, 1)
    assert validity.judged_decoys([], JUDGED) == (0, 0)


def test_the_replaced_share_counts_the_baselines_decoys_missing_from_the_same_example():
    baseline = [
        instance("x", "a.jpg", ["1", "2", "3"]),
        instance("y", "b.jpg", ["4", "5"]),
        instance("z", "c.jpg", ["6", "7", "8"]),
    ]
    rule = [
        instance("x", "a.jpg", ["3", "1", "9"]),  # 2 replaced; the order does not matter
        instance("y", "b.jpg", ["4", "5"]),
        instance("w", "d.jpg", ["6", "7", "8"]),  # z is gone: its 3 decoys count as replaced
    ]
    assert validity.replaced_share(baseline, rule) == pytest.approx(4 / 8)
    assert validity.replaced_share(baseline, baseline) == 0.0


def test_the_run_rows_compare_each_run_with_the_none_run():
    def result(threshold, instances, coverage):
        estimated = None if threshold is None else validity.Estimate(0.02, 0.01, 0.03)
        as_judged = None if threshold is None else validity.Estimate(0.04, 0.03, 0.06)
        float32 = (None, 0.61) if threshold is None else (3, 0.512)
        return validity.RunResult(
            threshold, instances, coverage, 0 if threshold is None else 7, 1.0, estimated,
            as_judged, float32,
        )  # fmt: skip

    none = [
        instance("a.jpg#0", "a.jpg", ["b.jpg#0", "c.jpg#1"], [0.6, 0.4]),
        instance("b.jpg#0", "b.jpg", ["a.jpg#2", "c.jpg#0"], [0.5, float("nan")]),
    ]
    rule = [
        instance("a.jpg#0", "a.jpg", ["d.jpg#0", "c.jpg#1"], [0.3, 0.4]),
        instance("b.jpg#0", "b.jpg", ["a.jpg#2", "c.jpg#0"], [0.5, 0.4]),
    ]
    rows = validity.run_rows(
        [result(None, none, {"train": 1.0, "test": 0.99}), result(0.5, rule, {"train": 0.9})],
        JUDGED,
    )
    assert [row.label for row in rows] == ["none", "0.50"]
    assert (rows[0].judged, rows[0].judged_describing, rows[1].judged) == (3, 1, 2)
    assert rows[0].describing_share == pytest.approx(1 / 3) and rows[1].describing_share == 0.0
    assert (rows[0].replaced, rows[1].replaced) == (0.0, 0.25)
    assert rows[0].closeness == pytest.approx(0.5) and rows[1].closeness == pytest.approx(0.4)
    assert rows[1].closeness_ratio == pytest.approx(0.8)
    assert (rows[0].min_coverage, rows[1].min_coverage) == (0.99, 0.9)
    assert not rows[1].meets_targets  # closeness down 20%, coverage 90%
    assert validity.chosen_run(rows).startswith("No threshold meets every target")
    table = validity.run_lines(rows, "none")
    assert len(table) == 4 and table[2].startswith("| none | 3 | 1 (33.3%) | - | - | 0.0% |")
    assert table[2].endswith("| 0 | - | 1s |") and table[3].endswith("| 7 | 3 (0.512) | 1s |")
    assert table[3].startswith(
        "| 0.50 | 2 | 0 (0.0%) | 2.0% (1.0%-3.0%) | 4.0% (3.0%-6.0%) | 25.0% | 90.0% | 2 |"
    )


def test_the_chosen_run_is_the_largest_threshold_meeting_every_target():
    def row(threshold, high, ratio, coverage):
        as_judged = validity.Estimate(high - 0.01, high - 0.02, high)
        # the judged decoys (0 of 100 describing) are too few to decide, and the estimate
        # over all decoys (1%) is not what the target counts: the estimate as judged decides
        return validity.RunRow(
            validity.run_label(threshold), threshold, 100, 0, 0.1, coverage, 10, 0.5 * ratio,
            ratio, 0, 1.0, validity.Estimate(0.01, 0.0, 0.02), as_judged, (0, 0.4),
        )  # fmt: skip

    rows = [
        row(None, 0.25, 1.0, 1.0),
        row(0.5, 0.02, 0.95, 0.99),
        row(0.6, 0.04, 0.97, 0.98),
        row(0.7, 0.06, 0.99, 0.99),  # the interval reaches 6%
        row(0.65, 0.03, 0.99, 0.9),  # coverage 90%
    ]
    assert validity.chosen_run(rows).startswith("Chosen threshold: 0.60 ")
    assert not replace(rows[2], as_judged=None).meets_targets
    assert validity.parse_runs("none,0.45,0.5") == [None, 0.45, 0.5]


def test_the_instances_are_read_from_every_splits_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for split, example in (("train", "a.jpg_0"), ("test", "b.jpg_1")):
        folder = tmp_path / "dataset" / "parquet" / split
        folder.mkdir(parents=True)
        row = instance(example, example.split("_")[0], ["c.jpg#0"], [0.25])
        table = pa.Table.from_pylist([{**row, "split": split, "label": 0}])
        pq.write_table(table, folder / "part-0.parquet")
    rows = validity.read_instances(str(tmp_path))
    assert sorted(row["example_id"] for row in rows) == ["a.jpg_0", "b.jpg_1"]
    assert set(rows[0]) == set(validity.RUN_FIELDS) and rows[0]["decoy_sim_pv"] == [0.25]


def test_the_calibration_rises_with_the_cosine_and_its_interval_holds_the_estimate():
    rng = np.random.default_rng(0)
    scores = rng.random(4000)
    describes = rng.random(4000) < scores**3  # P(describes | s) = s^3
    calibration = validity.calibrated(scores, describes, resamples=50)
    fitted = calibration.fit.predict(np.linspace(0.0, 1.0, 101))
    assert np.all(np.diff(fitted) >= 0) and fitted[0] < 0.05 < 0.8 < fitted[-1]
    near_threshold = np.full(1000, 0.9)  # decoys pushed up to a threshold of 0.9
    far_below = rng.random(1000) * 0.5
    high, low = calibration.estimate(near_threshold), calibration.estimate(far_below)
    assert high.low <= high.share <= high.high and low.low <= low.share <= low.high
    assert high.share == pytest.approx(0.9**3, abs=0.06)
    assert low.share == pytest.approx(np.mean(far_below**3), abs=0.02)
    assert np.isnan(calibration.estimate(np.array([])).share)
    # weighing the decoys near the threshold ten times as much moves the estimate to them
    both = np.concatenate([near_threshold, far_below])
    weights = np.where(both > 0.5, 10.0, 1.0)
    weighted = calibration.estimate(both, weights)
    assert weighted.share == pytest.approx((10 * high.share + low.share) / 11, abs=1e-9)


def test_the_judged_selection_is_the_judged_share_of_all_pairs_band_by_band():
    captions = {f"{image}.jpg#{k}": "" for image in "abcd" for k in range(2)}
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(len(captions), 6))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    space = validity.CaptionSpace(
        vectors,
        {caption_id: row for row, caption_id in enumerate(sorted(captions))},
        validity.captions_by_image(captions),
    )
    # every pair of a.jpg or b.jpg and another image's caption: 2 x 6; judged: two of them
    every = np.concatenate(
        [(space.of([c for c in captions if not c.startswith(i)]) @ space.of(
            space.by_image[i]).T).max(axis=1) for i in ("a.jpg", "b.jpg")]
    )  # fmt: skip
    judged = every[[0, 7]]
    selection = validity.judged_selection(judged, ["a.jpg", "b.jpg"], space, bands=4)
    edges = np.linspace(-1.0, 1.0, 5)
    expected = np.histogram(judged, edges)[0] / np.maximum(np.histogram(every, edges)[0], 1)
    assert selection.likelihood.tolist() == pytest.approx(expected.tolist())
    assert selection.weights(np.array([-1.0, 0.99, 1.0])).tolist() == pytest.approx(
        [expected[0], expected[3], expected[3]]
    )


def test_each_chosen_decoy_is_scored_by_its_closest_caption_of_the_target_image():
    captions = {"a.jpg#0": "x", "a.jpg#1": "y", "b.jpg#0": "z", "c.jpg#0": "w"}
    vectors = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0]])
    space = validity.CaptionSpace(
        vectors,
        {caption_id: row for row, caption_id in enumerate(sorted(captions))},
        validity.captions_by_image(captions),
    )
    instances = [
        instance("a.jpg#0", "a.jpg", ["b.jpg#0", "c.jpg#0"]),
        instance("a.jpg#1", "a.jpg", ["b.jpg#0"]),  # (a, b#0) again: scored once
        instance("b.jpg#0", "b.jpg", ["a.jpg#1"]),
    ]
    # sorted pairs: (a, b#0) max(0.6, 0.8); (a, c#0) 0; (b, a#1) 0.8
    assert validity.decoy_cosines(instances, space).tolist() == pytest.approx([0.8, 0.0, 0.8])


class HashedEncoder:
    """Unit vectors from each text's CRC (the same in every process, unlike ``hash``): a
    stand-in for an encoder's ``encode``."""

    def encode(self, texts):
        rngs = [np.random.default_rng(zlib.crc32(t.encode())) for t in texts]
        vectors = np.array([rng.normal(size=8) for rng in rngs])
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_the_judged_calibration_leaves_out_the_images_own_captions(captions):
    pairs = validity.judged_pairs(validity.FLICKR8K)[:300]
    by_image = validity.captions_by_image(captions)
    needed = validity.needed_captions(pairs, by_image)
    space = validity.caption_space(HashedEncoder(), {c: captions[c] for c in needed})
    assert space.vectors.dtype == np.float64 and len(space.rows) == len(needed)
    assert np.allclose(space.of(needed[:2]), HashedEncoder().encode(
        [captions[c] for c in needed[:2]]
    ))  # fmt: skip
    calibration, selection, lines = validity.judged_calibration(pairs, space)
    others = sum(not pair.own for pair in pairs)
    assert 0 < others < len(pairs)
    assert lines[0].startswith(f"P(describes | encoder cosine), from the {others:,} judged")
    rows = table_rows("\n".join(lines), "encoder cosine")
    assert len(rows) == len(validity.BANDS) - 1
    assert sum(int(row[1].replace(",", "")) for row in rows) == others
    assert len(calibration.resampled) == validity.BOOTSTRAP
    # at most 300 judged pairs among the pairs of 300 images' and all captions
    assert 0 < selection.likelihood.max() <= 1 and selection.likelihood.min() >= 0
