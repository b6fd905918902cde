"""dmc-evaluate: zero-shot scoring with a contrastive model, through the --checkpoint path
users take, on datasets whose images the project draws (transforms/vision/drawing.py).

The model is a tiny CLIP built from a CLIPConfig with random weights and a word-level
tokenizer made here (no download): at chance as it is, above chance once fine-tuned on
the train split's image-caption pairs, which shows the scoring path carries signal.
"""

import os
import sys

import apache_beam as beam
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pipelines.evaluate import SCORES_FOLDER, TABLE_FILE, main, run
from pipelines.options import EvaluateOptions, GenerateOptions
from tests.support.local import local_pipeline
from tests.support.tiny_clip import draw_images, instances, tiny_clip, words
from tests.support.versions import SMALL
from transforms.errors import InputError
from transforms.files import read_parquet_shards
from transforms.strategies.registry import STRATEGIES
from transforms.trainer.metrics import EVALUATION_SPLITS, binomial_std
from transforms.vision.contrastive.base import ModelSpec
from transforms.vision.contrastive.open_clip_model import model_source
from transforms.vision.contrastive.registry import LIBRARIES, load_model
from transforms.vision.zero_shot import NOT_FOUND, SCORES, WriteScores, score_row

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
torch = pytest.importorskip("torch")

CHANCE_DEVIATIONS = 3.0


@pytest.fixture(scope="module")
def evaluate(tmp_path_factory):
    """version -> (metrics, scores rows) of the tiny CLIP (random weights unless a
    checkpoint is given) on the version's drawn images."""

    def evaluated(
        version: str, checkpoint: str = "", images: str = "", allow_missing: bool = False
    ) -> tuple[dict, list]:
        if not checkpoint:
            texts = [option for row in instances(version) for option in row["options"]]
            checkpoint = tiny_clip(str(tmp_path_factory.mktemp("clip")), words(texts))
        images = images or draw_images(version, str(tmp_path_factory.mktemp("images")))
        output = str(tmp_path_factory.mktemp("evaluate"))
        options = EvaluateOptions(
            dataset=version,
            images=images,
            output=output,
            allow_missing=allow_missing,
            library="transformers",
            checkpoint=checkpoint,
            batch_size=16,
        )
        metrics = run(options)
        scores = read_parquet_shards(os.path.join(output, SCORES_FOLDER), SCORES)
        return metrics, scores.to_pylist()

    return evaluated


def table_text(metrics: dict) -> str:
    with open(os.path.join(metrics["options"]["output"], TABLE_FILE), encoding="utf-8") as handle:
        return handle.read()


def model_row(metrics: dict) -> dict:
    [row] = [row for row in metrics["models"] if row["input"] == "image+text"]
    return row


def check_scores(version: str, metrics: dict, scores: list[dict]) -> None:
    """Every dev and test instance has a row whose answer is the argmax of its k scores."""
    expected = instances(version, EVALUATION_SPLITS)
    assert sorted(row["example_id"] for row in scores) == sorted(
        row["example_id"] for row in expected
    )
    labels = {row["example_id"]: row["label"] for row in expected}
    for row in scores:
        assert len(row["scores"]) == metrics["num_options"]
        assert row["answer"] == int(np.argmax(row["scores"]))
        assert row["correct"] == (row["answer"] == labels[row["example_id"]])


def test_scores_are_written_as_sorted_shards_whatever_their_order(tmp_path):
    rows = [
        score_row(
            {
                "example_id": f"{image}_0",
                "split": split,
                "image_id": str(image),
                "label": 0,
                "image_file": f"{image}.jpg",
                "option_caption_ids": ["1", "2"],
            },
            np.array([0.5, 0.25]),
        )
        for split, image in (("test", 3), ("dev", 9), ("dev", 10), ("test", 1))
    ]
    with local_pipeline() as pipeline:
        _ = pipeline | beam.Create(rows) | WriteScores(folder=str(tmp_path), total=len(rows))
    assert os.listdir(tmp_path) == ["scores-00000-of-00001.parquet"]
    written = pq.read_table(tmp_path / "scores-00000-of-00001.parquet").to_pylist()
    assert [(row["split"], row["example_id"]) for row in written] == [
        ("dev", "10_0"),
        ("dev", "9_0"),
        ("test", "1_0"),
        ("test", "3_0"),
    ]


def test_random_weights_answer_at_chance(small_dataset, evaluate):
    version, _ = small_dataset
    metrics, scores = evaluate(version)
    check_scores(version, metrics, scores)
    row = model_row(metrics)
    for split in EVALUATION_SPLITS:
        result, chance = row[split], metrics["chance"]
        bound = CHANCE_DEVIATIONS * binomial_std(round(chance * result["total"]), result["total"])
        assert abs(result["accuracy"] - chance) <= bound, (split, result)
        best = max(r[split]["accuracy"] for r in metrics["models"] if r["input"] == "text")
        assert metrics["image_margin"][split]["margin"] == pytest.approx(result["accuracy"] - best)
    assert [r["model"] for r in metrics["models"] if r["input"] == "text"]  # the audit's rows
    table = table_text(metrics)
    assert table.startswith(f"strategy: mcic ({metrics['num_options']} options)")
    assert "set score" not in table  # mcic instances are not in sets


def test_closed_sets_report_the_set_score(small_closed_sets, evaluate):
    version, _ = small_closed_sets
    metrics, scores = evaluate(version)
    row = model_row(metrics)
    for split in EVALUATION_SPLITS:
        members = [r for r in scores if r["split"] == split]
        sets: dict[str, list[bool]] = {}
        for r in members:
            sets.setdefault(r["option_set"], []).append(r["correct"])
        assert {len(outcomes) for outcomes in sets.values()} == {metrics["num_options"]}
        right = sum(all(outcomes) for outcomes in sets.values())
        assert row["sets"][split]["total"] == len(sets)
        assert row["sets"][split]["correct"] == right
        assert row["sets"][split]["accuracy"] <= row[split]["accuracy"]
    table = table_text(metrics)
    assert "set score" in table


def image_files(version: str, split: str) -> list[str]:
    return sorted({row["image_file"] for row in instances(version, (split,))})


def instances_of(version: str, files: set[str]) -> int:
    """How many dev and test instances show one of these images."""
    return sum(row["image_file"] in files for row in instances(version, EVALUATION_SPLITS))


def test_missing_and_unreadable_images_are_counted_apart_not_dropped(
    small_dataset, evaluate, tmp_path
):
    version, _ = small_dataset
    images = draw_images(version, str(tmp_path / "images"))
    dev = image_files(version, "dev")
    for name in dev[:3]:
        os.remove(os.path.join(images, name))
    (tmp_path / "images" / dev[3]).write_bytes(b"not an image")
    Image.new("1", (20000, 20000)).save(tmp_path / "images" / dev[4], "PNG")  # a 50 KB bomb
    metrics, scores = evaluate(version, images=images)
    missing, unreadable = instances_of(version, set(dev[:3])), instances_of(version, set(dev[3:5]))
    assert metrics["images_not_found"] == {"dev": missing, "test": 0}
    assert metrics["images_unreadable"] == {"dev": unreadable, "test": 0}
    assert [image["file"] for image in metrics["unreadable_images"]] == dev[3:5]
    bytes_why, bomb_why = (image["why"] for image in metrics["unreadable_images"])
    assert bytes_why == "not an image format PIL reads" and "decompression bomb" in bomb_why
    problems = [row["image_problem"] for row in scores]  # kept in the scores, with why
    assert problems.count(NOT_FOUND) == missing
    assert problems.count(bytes_why) + problems.count(bomb_why) == unreadable
    assert sum(not row["image_found"] for row in scores) == missing + unreadable
    dev_rows = [row for row in scores if row["split"] == "dev"]
    assert model_row(metrics)["dev"]["total"] == len(dev_rows) - missing - unreadable
    counters = metrics["counters"]
    assert sum(v for k, v in counters.items() if k.endswith("image_missing")) == missing
    assert sum(v for k, v in counters.items() if k.endswith("image_unreadable")) == unreadable
    table = table_text(metrics)
    assert f"not found under --images (not scored): dev {missing}, test 0" in table
    assert f"there but unreadable (not scored): dev {unreadable}, test 0" in table
    assert f"  {dev[4]}: {bomb_why}" in table


def refusal(argv: list[str], capsys) -> str:
    """What dmc-evaluate says when it refuses: one line on stderr, exit 2."""
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "Traceback" not in error
    return error


def test_an_images_folder_with_none_of_the_images_is_refused_before_any_work(
    small_dataset, tmp_path, capsys
):
    version, _ = small_dataset
    output = tmp_path / "out"
    flags = ["--dataset", version, "--output", str(output), "--library", "transformers"]
    flags += ["--checkpoint", str(tmp_path / "no-model")]  # never loaded: refused before
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "README.txt").write_text("not the images")
    for folder in ("nonexistent", "empty"):
        error = refusal([*flags, "--images", str(tmp_path / folder)], capsys)
        assert (
            error
            == f"error: --images {tmp_path / folder}: no files match (a missing or empty folder)"
        )
    error = refusal([*flags, "--images", str(tmp_path / "other"), "--allow_missing"], capsys)
    wanted = len(instances(version, EVALUATION_SPLITS))
    assert f"none of the {wanted} instances' images is there (e.g. {tmp_path / 'other'}/" in error
    assert not output.exists()


def test_most_images_missing_is_refused_naming_one_unless_allowed(
    small_dataset, evaluate, tmp_path, capsys
):
    version, _ = small_dataset
    images = draw_images(version, str(tmp_path / "images"))
    files = sorted(set(image_files(version, "dev")) | set(image_files(version, "test")))
    gone = files[: len(files) * 3 // 4]
    for name in gone:
        os.remove(os.path.join(images, name))
    missing, wanted = instances_of(version, set(gone)), len(instances(version, EVALUATION_SPLITS))
    assert 2 * missing > wanted
    output = tmp_path / "out"
    flags = ["--dataset", version, "--images", images, "--output", str(output)]
    error = refusal([*flags, "--library", "transformers", "--checkpoint", "no-model"], capsys)
    first = next(
        r["image_file"] for r in instances(version, EVALUATION_SPLITS) if r["image_file"] in gone
    )
    assert error == (
        f"error: --images {images}: {missing} of {wanted} instances' images are missing "
        f"(e.g. {os.path.join(images, first)}); --allow_missing scores the others"
    )
    assert not output.exists()

    metrics, scores = evaluate(version, images=images, allow_missing=True)
    assert sum(metrics["images_not_found"].values()) == missing
    assert sum(row["image_found"] for row in scores) == wanted - missing
    assert (
        sum(model_row(metrics)[split]["total"] for split in EVALUATION_SPLITS) == wanted - missing
    )


def test_images_none_of_which_decodes_are_refused(small_dataset, evaluate, tmp_path):
    version, _ = small_dataset
    images = draw_images(version, str(tmp_path / "images"))
    for name in os.listdir(images):
        (tmp_path / "images" / name).write_bytes(b"not an image")
    with pytest.raises(
        InputError,
        match=r"no instance.s image could be scored \(e.g. .*: not an image format PIL reads\)$",
    ):
        evaluate(version, images=images)


@pytest.mark.slow
@pytest.mark.parametrize("decoys", list(STRATEGIES))
def test_every_strategy_evaluates(decoys, strategy_dataset, evaluate):
    version, _ = strategy_dataset(decoys)
    metrics, scores = evaluate(version)
    check_scores(version, metrics, scores)
    assert metrics["strategy"] == decoys
    assert metrics["num_options"] == STRATEGIES[decoys].num_options
    assert ("sets" in model_row(metrics)) == STRATEGIES[decoys].answered_in_sets


def fine_tune(checkpoint: str, version: str, images: str, steps: int) -> str:
    """A few steps of CLIP's contrastive loss over the train split's image-target pairs."""
    model = transformers.CLIPModel.from_pretrained(checkpoint)
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    processor = transformers.AutoImageProcessor.from_pretrained(checkpoint)
    pairs = sorted(
        {
            (row["image_file"], row["options"][row["label"]])
            for row in instances(version, ("train",))
        }
    )
    pixels = processor(
        images=[Image.open(os.path.join(images, name)).convert("RGB") for name, _ in pairs],
        return_tensors="pt",
    )["pixel_values"]
    tokens = tokenizer([text for _, text in pairs], padding=True, return_tensors="pt")
    torch.manual_seed(0)
    optimiser = torch.optim.Adam(model.parameters(), lr=2e-3)
    model.train()
    rng = np.random.default_rng(0)
    for _ in range(steps):
        batch = torch.as_tensor(rng.choice(len(pairs), size=64, replace=False))
        loss = model(
            input_ids=tokens["input_ids"][batch],
            attention_mask=tokens["attention_mask"][batch],
            pixel_values=pixels[batch],
            return_loss=True,
        ).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.save_pretrained(checkpoint)
    return checkpoint


def test_fine_tuned_clip_beats_chance(shared, synthetic_corpus, tmp_path_factory, evaluate):
    options = GenerateOptions(input=synthetic_corpus, output="", decoys="random", **SMALL)
    version, _ = shared.version(options)
    texts = [option for row in instances(version) for option in row["options"]]
    checkpoint = tiny_clip(str(tmp_path_factory.mktemp("tuned")), words(texts))
    images = draw_images(version, str(tmp_path_factory.mktemp("tuned_images")))
    metrics, _ = evaluate(version, fine_tune(checkpoint, version, images, 150), images)
    result, chance = model_row(metrics)["test"], metrics["chance"]
    bound = CHANCE_DEVIATIONS * binomial_std(round(chance * result["total"]), result["total"])
    assert result["accuracy"] > chance + bound, result


@pytest.mark.parametrize("library", list(LIBRARIES))
def test_a_missing_package_is_one_line_naming_the_extra(library, monkeypatch):
    monkeypatch.setitem(sys.modules, library, None)  # each library is its module
    with pytest.raises(InputError, match=r"pip install -e '\.\[vision\]'") as raised:
        load_model(ModelSpec(library=library, model="m", pretrained="p", checkpoint=""))
    assert "\n" not in str(raised.value) and f"--library {library}" in str(raised.value)


def test_the_open_clip_source_follows_the_checkpoint(tmp_path):
    folder = ModelSpec("open_clip", checkpoint=str(tmp_path))
    assert model_source(folder) == (f"local-dir:{tmp_path}", None)
    with pytest.raises(InputError, match="--model"):
        model_source(ModelSpec("open_clip", checkpoint=str(tmp_path / "weights.pt")))


def test_a_run_shows_its_progress_and_quiet_shows_nothing(small_dataset, tmp_path, capfd):
    """Off a terminal (a scheduler's log): the scoring's progress lines, and no library's
    "Loading weights" bar, which --quiet let through."""
    version, _ = small_dataset
    texts = [option for row in instances(version) for option in row["options"]]
    argv = ["--dataset", version, "--images", draw_images(version, str(tmp_path / "images"))]
    argv += ["--library", "transformers", "--batch_size", "16", "--progress_interval", "0"]
    argv += ["--checkpoint", tiny_clip(str(tmp_path / "clip"), words(texts))]
    capfd.readouterr()
    assert main([*argv, "--output", str(tmp_path / "shown")]) == 0
    shown = capfd.readouterr().err
    total = sum(row["split"] in EVALUATION_SPLITS for row in instances(version))
    assert f"zero-shot: instances {total} of {total} done by this worker" in shown
    assert "Loading weights" not in shown
    assert main([*argv, "--output", str(tmp_path / "quiet"), "--quiet"]) == 0
    assert capfd.readouterr().err == ""
