"""The trainer end to end on small generated datasets, checked against the dataset's files."""

import glob
import itertools
import json
import math
import os
import re
import shutil
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.options import GenerateOptions, TrainOptions
from pipelines.store.versions import describe_file, read_manifest
from pipelines.train import main, run
from schemas.instance import ARROW_SCHEMA, DECOY, FIELDS, OPTION
from schemas.layout import build_path, corpus_folder, dataset_path
from tests.support.dataset_checks import in_text_order, read_parquet
from tests.support.probes import run_probe
from tests.support.versions import SMALL_TRAINING
from transforms.corpus.paragraph_vectors import infer_unit_vector, load_model
from transforms.errors import InputError
from transforms.seeds import keyed_rng
from transforms.trainer.dataset_audit import audit_dataset
from transforms.trainer.features import build_example, load_feature_space
from transforms.trainer.registry import fitters

# Whole trainings on the module's trained models (mcic_results, random_run): one worker
# trains them, for every test that reads them.
TRAINED = (pytest.mark.slow, pytest.mark.xdist_group("trained_models"))


def trained(test):
    for mark in TRAINED:
        test = mark(test)
    return test


FIT_BUFFER = 300  # the random-decoy run's: far fewer than its 3,000-odd train instances


def train(dataset: str, output: str, **changes) -> dict:
    metrics = run(TrainOptions(dataset=dataset, output=output, **{**SMALL_TRAINING, **changes}))
    return {row["model"]: row for row in metrics["models"]}


@pytest.fixture(scope="module")
def mcic_results(mcic_dataset, tmp_path_factory) -> tuple[str, dict]:
    output = str(tmp_path_factory.mktemp("train_mcic"))
    return output, train(mcic_dataset, output)


@pytest.fixture(scope="module")
def random_run(random_dataset, tmp_path_factory) -> tuple[str, dict]:
    output = str(tmp_path_factory.mktemp("train_random"))
    options = TrainOptions(
        dataset=random_dataset, output=output, fit_buffer=FIT_BUFFER, **SMALL_TRAINING
    )
    return output, run(options)


@pytest.fixture(scope="module")
def random_results(random_run) -> dict:
    return {row["model"]: row for row in random_run[1]["models"]}


@trained
def test_models_beat_chance_on_mcic_decoys_and_do_better_on_random_ones(
    mcic_results, random_results
):
    _, mcic = mcic_results
    for name in ("Baseline-C2I", "Baseline-LinM"):
        test = mcic[name]["test"]
        assert test["accuracy"] > 0.2 + 4 * math.sqrt(0.2 * 0.8 / test["total"]), name
    for name in ("Baseline-I2C", "Baseline-C2I", "Baseline-LinM", "FFNN", "Vec2seq+FFNN"):
        test = mcic[name]["test"]
        assert random_results[name]["test"]["accuracy"] > test["accuracy"] + 4 * test["std"], name


@trained
def test_vec2seq_learns_on_a_generated_corpus_and_its_captions_are_scored(
    random_results, random_dataset
):
    vec2seq = random_results["Vec2seq+FFNN"]
    test = vec2seq["test"]
    assert test["accuracy"] > 0.2 + 6 * math.sqrt(0.2 * 0.8 / test["total"])
    generation = vec2seq["selection"]["train_generation_by_epoch"]
    assert all(later < earlier for earlier, later in itertools.pairwise(generation))
    for split in ("dev", "test"):
        scores = vec2seq["captioning"][split]
        assert scores["images"] == len(
            {row["image_id"] for row in read_parquet(random_dataset, split)}
        )
        assert scores["CIDEr"] > 0 and 0 < scores["ROUGE-L"] < 1


@trained
def test_fitting_never_holds_more_examples_than_the_fit_buffer(random_run, random_dataset):
    output, metrics = random_run
    held = metrics["counters"]["train/fit_examples_held_at_most"]
    assert 0 < held <= FIT_BUFFER < len(read_parquet(random_dataset, "train"))
    assert not os.path.exists(os.path.join(output, "examples"))  # the shards are deleted


@trained
def test_text_only_audits_report_what_the_files_give(mcic_dataset, mcic_results):
    dataset = mcic_dataset
    _, results = mcic_results
    corpus = pq.read_table(os.path.join(corpus_folder(dataset), "captions.parquet")).to_pylist()
    row_of = {caption["caption_id"]: row for row, caption in enumerate(corpus)}
    embeddings = np.load(os.path.join(corpus_folder(dataset), "embeddings.npy"))
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


@trained
def test_every_trained_model_is_written(mcic_results):
    output, results = mcic_results
    for name in [*fitters(), "Vec2seq+FFNN"]:
        arrays = np.load(os.path.join(output, "models", f"{name}.npz"))
        numbers = [arrays[key] for key in arrays.files if arrays[key].dtype.kind in "fiu"]
        assert numbers and all(np.all(np.isfinite(values)) for values in numbers)
        assert results[name]["selection"]
    text_only = np.load(os.path.join(output, "models", "Text-FFNN.npz"))
    assert text_only["w1"].shape == (2 * 64 + 3, 64)  # option, option - others, 3 relative
    assert text_only["input_mean"].shape == (2 * 64 + 3,)
    language_model = np.load(os.path.join(output, "models", "Bigram LM.npz"))
    assert {"</s>", "<unk>"} < set(language_model["vocabulary"].tolist())
    with open(os.path.join(output, "metrics.json")) as handle:
        metrics = json.load(handle)
    assert metrics["image_features"] == "concept"
    assert (metrics["num_options"], metrics["chance"]) == (5, 0.2)
    vec2seq = np.load(os.path.join(output, "models", "Vec2seq+FFNN.npz"))
    assert vec2seq["vocabulary"][:4].tolist() == ["<pad>", "<unk>", "<s>", "</s>"]
    assert vec2seq["decoder.weight_hh_l1"].shape == (3 * 64, 64)  # a two-layer GRU of 64
    with open(os.path.join(output, "table.txt")) as handle:
        table = handle.read()
    assert "Baseline-LinM" in table and "ROUGE-L" in table and "64:32:16" in table
    with open(os.path.join(output, "captions", "Vec2seq+FFNN test.json")) as handle:
        captions = json.load(handle)
    assert len(captions) == results["Vec2seq+FFNN"]["captioning"]["test"]["images"]
    with open(os.path.join(output, "accuracy.png"), "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def image_features_by_file_name(dataset: str, path: str, drop: int = 0) -> None:
    """Each image's mean PV vector, keyed by file name (an oracle stand-in for CNN features)."""
    corpus = pq.read_table(os.path.join(corpus_folder(dataset), "captions.parquet")).to_pylist()
    embeddings = np.load(os.path.join(corpus_folder(dataset), "embeddings.npy"))
    rows_of: dict[str, list[int]] = {}
    for row, caption in enumerate(corpus):
        rows_of.setdefault(caption["file_name"], []).append(row)
    names = sorted(rows_of)[drop:]
    features = [embeddings[rows_of[name]].mean(axis=0).tolist() for name in names]
    pq.write_table(pa.table({"image": names, "features": features}), path)


@pytest.mark.slow
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


# Versions with k = 4 and k = 2 options, some of them edited: the generated MC-IC version
# rewritten (the target and its first k - 1 decoys, the first decoy's text edited).

Edit = Callable[[dict, str], tuple[str, str] | None]  # (instance, decoy text) -> (text, edit)


def first_words(instance: dict, text: str) -> tuple[str, str]:
    """Every first decoy cut to its first three words (a "just person"-like chunk)."""
    return " ".join(text.split()[:3]), "chunk: first three words"


def reversed_words(instance: dict, text: str) -> tuple[str, str] | None:
    """The first decoy of one instance in five (each image's first caption), words reversed."""
    if instance["example_id"].endswith("_0"):
        return " ".join(reversed(text.split())), "reverse: word order"
    return None


OPTION_FIELDS, DECOY_FIELDS = ([f.name for f in FIELDS if f.per == per] for per in (OPTION, DECOY))


def fewer_options(instance: dict, k: int, edit: Edit) -> dict:
    """The instance with its target and first k - 1 decoys in their shuffled order."""
    kept = {instance["target_caption_id"], *instance["decoy_caption_ids"][: k - 1]}
    positions = [p for p, cid in enumerate(instance["option_caption_ids"]) if cid in kept]
    row = {**instance, "label": positions.index(instance["label"])}
    for name in OPTION_FIELDS:
        row[name] = [instance[name][p] for p in positions]
    for name in DECOY_FIELDS:
        row[name] = instance[name][: k - 1]
    at = row["option_caption_ids"].index(row["decoy_caption_ids"][0])
    edited = edit(row, row["options"][at])
    if edited is not None:
        row["options"][at], row["option_edits"][at] = edited
        row["decoy_edits"][0] = edited[1]
        for name in ("decoy_sim_pv", "decoy_sim_surf", "decoy_score"):
            row[name][0] = math.nan
    return row


def rewrite_shards(version: str, rewrite: Callable[[list[dict], str], list[dict]]) -> None:
    """Rewrites every Parquet shard with the instance schema and updates the manifest."""
    manifest = read_manifest(version)
    entries = {entry["path"]: entry for entry in manifest["files"]}
    for path in sorted(glob.glob(dataset_path(version, "parquet", "*", "*.parquet"))):
        rows = rewrite(pq.read_table(path).to_pylist(), path)
        pq.write_table(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA), path)
        relative = os.path.relpath(path, version)
        entries[relative] = describe_file(version, relative)
    manifest["files"] = list(entries.values())
    with open(os.path.join(version, "manifest.json"), "w") as handle:
        json.dump(manifest, handle)


def with_k_options(version: str, directory: str, k: int, edit: Edit) -> str:
    shutil.copytree(version, directory)
    rewrite_shards(directory, lambda rows, path: [fewer_options(row, k, edit) for row in rows])
    return directory


@pytest.fixture(scope="module")
def two_options(mcic_dataset, tmp_path_factory) -> str:
    return with_k_options(mcic_dataset, str(tmp_path_factory.mktemp("k2") / "v"), 2, first_words)


@pytest.fixture(scope="module")
def four_options(mcic_dataset, tmp_path_factory) -> str:
    directory = str(tmp_path_factory.mktemp("k4") / "v")
    return with_k_options(mcic_dataset, directory, 4, reversed_words)


def longest_option_correct(version: str, split: str) -> int:
    rows = [in_text_order(row) for row in read_parquet(version, split)]
    lengths = np.array([[len(option.split()) for option in row["options"]] for row in rows])
    return int(np.sum(np.argmax(lengths, axis=1) == [row["label"] for row in rows]))


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 4])
def test_k_option_versions_train_end_to_end_against_chance_one_in_k(
    k, two_options, four_options, tmp_path
):
    version = {2: two_options, 4: four_options}[k]
    metrics = run(TrainOptions(dataset=version, output=str(tmp_path), **SMALL_TRAINING))
    assert (metrics["num_options"], metrics["chance"]) == (k, 1 / k)
    results = {row["model"]: row for row in metrics["models"]}
    assert set(results) > set(fitters()) | {"Longest option"}
    for split in ("dev", "test"):
        total = len(read_parquet(version, split))
        assert all(row[split]["total"] == total for row in results.values())
        # Lengths of the texts in the files, edited ones included.
        assert results["Longest option"][split]["correct"] == longest_option_correct(version, split)
    test = results["Baseline-LinM"]["test"]
    assert test["accuracy"] > 1 / k + 4 * math.sqrt((1 / k) * (1 - 1 / k) / test["total"])
    with open(os.path.join(str(tmp_path), "table.txt")) as handle:
        [chance] = [line for line in handle.read().splitlines() if line.startswith("chance")]
    assert chance.split()[1:] == [f"{100 / k:.1f}"] * 2
    if k == 2:  # every decoy a three-word chunk of a caption: the LM picks the chunk
        assert results["Bigram LM"]["test"]["accuracy"] < 0.1
        assert results["Longest option"]["test"]["accuracy"] > 0.9


def test_the_generate_audit_fits_the_bigram_lm_and_reads_chance_as_one_in_k(two_options):
    config = GenerateOptions(input="", output=two_options).audit_config(two_options)
    audit = audit_dataset(two_options, config)
    names = [row["model"] for row in audit["models"]]
    assert names[-2:] == ["Text-FFNN", "Bigram LM"] and audit["chance"] == 0.5
    assert audit["verdict"]["accuracy"] > 0.9 and not audit["verdict"]["at_chance"]
    assert "chance 50%" in audit["verdict"]["line"]


def edited_instances(version: str) -> list[dict]:
    rows = read_parquet(version, "dev") + read_parquet(version, "test")
    return [row for row in rows if any(row["option_edits"])]


def test_an_edited_instances_vectors_are_all_inferred_and_features_come_from_texts(four_options):
    config = TrainOptions(dataset=four_options, output="").feature_config(four_options)
    space = load_feature_space(config)
    model = load_model(build_path(four_options, "pv", "doc2vec.model"))
    instances = edited_instances(four_options)
    assert len(instances) > 50
    for instance in instances[:20]:
        example = build_example(instance, space, frozenset(), space.corpus.ngrams.scratch())
        edits = zip(instance["options"], instance["option_edits"], strict=True)
        [text] = [option for option, edit in edits if edit]
        edited = example.texts.index(text)
        for k, option in enumerate(example.texts):  # every option's: inferred alike
            rng = keyed_rng(config.seed, f"infer {option}")
            inferred = infer_unit_vector(model, option.split(), rng)
            np.testing.assert_allclose(example.options[k], inferred @ space.caption_projection)
        vector = infer_unit_vector(model, text.split(), keyed_rng(config.seed, f"infer {text}"))
        assert example.text[edited, 0] == len(text.split())
        # PV-DBOW is a bag of words: reversing a caption keeps close to its vector.
        source = instance["option_caption_ids"][instance["options"].index(text)]
        caption_vector = space.corpus.embeddings[space.row_of[source]]
        cosines = space.corpus.embeddings @ vector
        assert vector @ caption_vector > np.quantile(cosines, 0.99)


def test_unedited_options_features_are_the_same_from_their_texts(four_options):
    """An instance with an edit computes BLEU on its texts; the corpus table agrees."""
    config = TrainOptions(dataset=four_options, output="").feature_config(four_options)
    space = load_feature_space(config)
    scratch = space.corpus.ngrams.scratch()
    instance = next(
        row for row in read_parquet(four_options, "dev") if not any(row["option_edits"])
    )
    from_corpus = build_example(instance, space, frozenset(), scratch)
    marked = {**instance, "option_edits": ["", "", "", "unchanged text, marked edited"]}
    from_texts = build_example(marked, space, frozenset(), scratch)
    hub_bleu = 1  # TEXT_FEATURES' column
    np.testing.assert_array_equal(from_corpus.text[:, hub_bleu], from_texts.text[:, hub_bleu])
    np.testing.assert_array_equal(from_corpus.text[:, 0], from_texts.text[:, 0])


@pytest.mark.slow
def test_inferred_vectors_do_not_depend_on_the_process(four_options):
    """gensim seeds inference with Python's salted str hash; the trainer must not."""
    text = edited_instances(four_options)[0]["options"][0]
    vectors = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        vectors.add(run_probe("inferred_vector_probe", four_options, text, env=env).stdout)
    assert len(vectors) == 1 and len(vectors.pop()) > 0  # one vector, and not an empty one


def test_a_version_mixing_numbers_of_options_is_an_error_naming_the_file(mcic_dataset, tmp_path):
    version = str(tmp_path / "mixed")
    shutil.copytree(mcic_dataset, version)
    [shard, *_] = sorted(glob.glob(dataset_path(version, "parquet", "test", "*.parquet")))

    def four_in_one_shard(rows: list[dict], path: str) -> list[dict]:
        return [fewer_options(row, 4, reversed_words) for row in rows] if path == shard else rows

    rewrite_shards(version, four_in_one_shard)
    with pytest.raises(InputError, match=f"^{re.escape(shard)}: instance .* has 4 options .* 5"):
        run(TrainOptions(dataset=version, output=str(tmp_path / "out"), epochs=1))
    config = GenerateOptions(input="", output=version).audit_config(version)
    with pytest.raises(InputError, match=f"^{re.escape(shard)}: instance"):
        audit_dataset(version, config)


def test_closed_sets_report_a_set_score_no_text_only_row_can_earn(closed_sets_dataset, tmp_path):
    """A text-only function picks the same text in a set's five instances, so it is right on
    exactly one of them: its set score is 0 however good the model."""
    dataset, _ = closed_sets_dataset
    output = str(tmp_path / "train")
    results = train(dataset, output, epochs=1, vec2seq_epochs=1)
    for name, row in results.items():
        for split in ("dev", "test"):
            sets = row["sets"][split]
            assert sets["total"] * 5 == row[split]["total"], name
            if row["input"] == "text":
                assert sets["correct"] == 0, name
    with open(os.path.join(output, "table.txt"), encoding="utf-8") as handle:
        assert "set score" in handle.read()
