"""The trainer end to end on small generated datasets, checked against the dataset's files."""

import json
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.options import TrainOptions
from pipelines.train import main, run
from tests.dataset_checks import read_parquet
from transforms.trainer.models import FITTERS

SMALL_TRAINING = {"epochs": 8, "ffnn_hidden": "64,32"}


def train(dataset: str, output: str, **changes) -> dict:
    metrics = run(TrainOptions(dataset=dataset, output=output, **{**SMALL_TRAINING, **changes}))
    return {row["model"]: row for row in metrics["models"]}


@pytest.fixture(scope="module")
def mcic_results(mcic_dataset, tmp_path_factory) -> tuple[str, dict]:
    output = str(tmp_path_factory.mktemp("train_mcic"))
    return output, train(mcic_dataset, output)


@pytest.fixture(scope="module")
def random_results(random_dataset, tmp_path_factory) -> dict:
    return train(random_dataset, str(tmp_path_factory.mktemp("train_random")))


def test_models_beat_chance_on_mcic_decoys_and_do_better_on_random_ones(
    mcic_results, random_results
):
    _, mcic = mcic_results
    for name in ("Baseline-C2I", "Baseline-LinM"):
        test = mcic[name]["test"]
        assert test["accuracy"] > 0.2 + 4 * math.sqrt(0.2 * 0.8 / test["total"]), name
    for name in ("Baseline-I2C", "Baseline-C2I", "Baseline-LinM", "FFNN"):
        test = mcic[name]["test"]
        assert random_results[name]["test"]["accuracy"] > test["accuracy"] + 4 * test["std"], name


def test_text_only_audits_report_what_the_files_give(mcic_dataset, mcic_results):
    dataset = mcic_dataset
    _, results = mcic_results
    corpus = pq.read_table(os.path.join(dataset, "corpus", "captions.parquet")).to_pylist()
    row_of = {caption["caption_id"]: row for row, caption in enumerate(corpus)}
    embeddings = np.load(os.path.join(dataset, "corpus", "embeddings.npy"))
    seen = {option for row in read_parquet(dataset, "train") for option in row["options"]}
    for split in ("dev", "test"):
        rows = read_parquet(dataset, split)
        rows = [in_text_order(row) for row in rows]
        labels = np.array([row["label"] for row in rows])
        lengths = np.array([[len(o.split()) for o in row["options"]] for row in rows])
        novel = np.array([[o not in seen for o in row["options"]] for row in rows])
        hub_pv = []
        for row in rows:
            vectors = embeddings[[row_of[cid] for cid in row["option_caption_ids"]]]
            cosines = vectors @ vectors.T
            hub_pv.append((cosines.sum(axis=1) - np.diagonal(cosines)) / 4)
        expected = {
            "Longest option": lengths,
            "Novelty guess": novel,
            "Hub by PV cosine": np.array(hub_pv),
        }
        for name, scores in expected.items():
            correct = int(np.sum(np.argmax(scores, axis=1) == labels))
            assert results[name][split] == {**results[name][split], "correct": correct}
        for row in results.values():
            assert row[split]["total"] == len(rows)
    assert results["Hub by BLEU"]["input"] == results["Text-FFNN"]["input"] == "text"


def in_text_order(row: dict) -> dict:
    """The options sorted by text, as the trainer sees them: ties go to the first text."""
    order = sorted(range(5), key=row["options"].__getitem__)
    return {
        **row,
        "options": [row["options"][k] for k in order],
        "option_caption_ids": [row["option_caption_ids"][k] for k in order],
        "label": order.index(row["label"]),
    }


def test_every_trained_model_is_written(mcic_results):
    output, results = mcic_results
    for name in FITTERS:
        arrays = np.load(os.path.join(output, "models", f"{name}.npz"))
        assert all(np.all(np.isfinite(arrays[key])) for key in arrays.files)
        assert results[name]["selection"]
    text_only = np.load(os.path.join(output, "models", "Text-FFNN.npz"))
    assert text_only["w1"].shape == (2 * 64 + 3, 64)  # option, option - others, 3 relative
    assert text_only["input_mean"].shape == (2 * 64 + 3,)
    with open(os.path.join(output, "metrics.json")) as handle:
        assert json.load(handle)["image_features"] == "concept"
    with open(os.path.join(output, "table.txt")) as handle:
        assert "Baseline-LinM" in handle.read()
    with open(os.path.join(output, "accuracy.png"), "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def image_features_by_file_name(dataset: str, path: str, drop: int = 0) -> None:
    """Each image's mean PV vector, keyed by file name (an oracle stand-in for CNN features)."""
    corpus = pq.read_table(os.path.join(dataset, "corpus", "captions.parquet")).to_pylist()
    embeddings = np.load(os.path.join(dataset, "corpus", "embeddings.npy"))
    rows_of: dict[str, list[int]] = {}
    for row, caption in enumerate(corpus):
        rows_of.setdefault(caption["file_name"], []).append(row)
    names = sorted(rows_of)[drop:]
    features = [embeddings[rows_of[name]].mean(axis=0).tolist() for name in names]
    pq.write_table(pa.table({"image": names, "features": features}), path)


def test_user_image_features_are_matched_by_file_name(mcic_dataset, tmp_path):
    dataset = mcic_dataset
    image_features_by_file_name(dataset, str(tmp_path / "features.parquet"))
    results = train(
        dataset, str(tmp_path / "out"), image_features=str(tmp_path / "features.parquet"), epochs=2
    )
    assert results["Baseline-C2I"]["test"]["accuracy"] > 0.5


def test_cli_refuses_missing_image_ids_and_incomplete_datasets(mcic_dataset, tmp_path, capsys):
    dataset = mcic_dataset
    features = str(tmp_path / "features.parquet")
    image_features_by_file_name(dataset, features, drop=7)
    code = main(
        ["--dataset", dataset, "--output", str(tmp_path / "a"), "--image_features", features]
    )
    error = capsys.readouterr().err.strip()
    assert code == 2 and error.count("\n") == 0
    assert error.startswith(f"error: {features}: 7 of ") and "(e.g. image ids " in error
    empty = tmp_path / "unfinished"
    (empty / "train").mkdir(parents=True)
    assert main(["--dataset", str(empty), "--output", str(tmp_path / "b")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"error: {empty}") and error.count("\n") == 0
    assert "complete" in error.lower()
    assert not (tmp_path / "b").exists()
