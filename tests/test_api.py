"""The Python API as a notebook uses it (docs/api.md): generate, load each split, evaluate.

No run of its own: the shared small closed-sets version is copied into the notebook's
output, so generate() with its corpus and options finds it complete, as a rerun does. The
evaluation is the tiny CLIP of tests/test_evaluate.py on the version's drawn images.
"""

import dataclasses
import fnmatch
import json
import os

import datasets
import pytest

import dmc_datasets
from pipelines import evaluate as evaluate_command
from pipelines import generate as generate_command
from pipelines.api import command_errors, parsed
from pipelines.cli.commands import GENERATE
from pipelines.evaluate import METRICS_FILE
from pipelines.options import GenerateOptions
from pipelines.store.versions import read_manifest
from schemas.layout import DATASET, PARQUET, relative_shard_pattern
from tests.support.tiny_clip import draw_images, tiny_clip, words
from tests.support.versions import SMALL, copied_into
from transforms.corpus.split import SPLITS
from transforms.errors import InputError


def test_a_notebook_generates_loads_each_split_and_evaluates(
    small_closed_sets, synthetic_corpus, tmp_path
):
    version, _ = small_closed_sets
    output = tmp_path / "out"
    copied_into(version, output)

    generated = dmc_datasets.generate(input=synthetic_corpus, output=output, **SMALL)
    assert generated.up_to_date and generated.name == os.path.basename(version)
    assert generated.path == str(output / "versions" / generated.name)
    assert "statistics" not in repr(generated) and "up to date" in generated.summary

    files = read_manifest(generated.path)["files"]
    frames = {}
    for split in SPLITS:
        frames[split] = dmc_datasets.load(output, split)  # the output root: its latest
        shards = f"{DATASET}/{relative_shard_pattern(PARQUET, split)}"
        records = sum(f["records"] for f in files if fnmatch.fnmatch(f["path"], shards))
        assert len(frames[split]) == records == generated.statistics["splits"][split]["instances"]
        assert records > 0
    dev = dmc_datasets.load(generated.path, "dev", columns=["options", "label"])
    assert list(dev.columns) == ["options", "label"] and len(dev) == len(frames["dev"])
    assert {len(options) for options in dev["options"]} == {5}
    assert dev["label"].between(0, 4).all()
    as_dataset = datasets.Dataset.from_pandas(frames["dev"])  # docs/api.md's route
    assert as_dataset.num_rows == len(frames["dev"]) and len(as_dataset[0]["options"]) == 5

    texts = [text for frame in frames.values() for options in frame["options"] for text in options]
    checkpoint = tiny_clip(str(tmp_path / "clip"), words(texts))
    metrics = dmc_datasets.evaluate(
        dataset=output,
        images=draw_images(generated.path, str(tmp_path / "images")),
        output=tmp_path / "evaluation",
        library="transformers",
        checkpoint=checkpoint,
        batch_size=16,
    )
    with open(tmp_path / "evaluation" / METRICS_FILE, encoding="utf-8") as handle:
        assert json.loads(json.dumps(metrics)) == json.load(handle)
    assert metrics["dataset"] == generated.path and metrics["strategy"] == "closed_sets"


def test_an_unknown_keyword_is_one_line_naming_the_closest_option_before_any_work(tmp_path):
    output = tmp_path / "out"
    with pytest.raises(InputError) as raised:
        dmc_datasets.generate(input="captions.json", output=output, sead=7)
    assert str(raised.value) == "generate(): unknown option sead (did you mean seed?)"
    with pytest.raises(InputError) as raised:
        dmc_datasets.evaluate(dataset=output, images="i", output="e", runner="DataflowRunner")
    assert str(raised.value).startswith("evaluate(): runner is a Beam pipeline option")
    with pytest.raises(InputError, match="did you mean --runner"):
        dmc_datasets.generate(input="c.json", output=output, beam_args=["--runer", "X"])
    with pytest.raises(InputError, match=r"no split 'validation' \(one of: train, dev, test\)"):
        dmc_datasets.load(output, "validation")
    assert not output.exists()


@pytest.mark.parametrize(
    ("command", "keywords", "flags"),
    [
        pytest.param(generate_command, {"n_dev": "many"}, ["--n_dev", "many"], id="type"),
        pytest.param(generate_command, {"decoys": "best"}, ["--decoys", "best"], id="choice"),
        pytest.param(generate_command, {"score_lambda": 3}, ["--score_lambda", "3"], id="check"),
        pytest.param(
            generate_command, {"verbose": True, "quiet": True}, ["--verbose", "--quiet"], id="log"
        ),
        pytest.param(
            evaluate_command,
            {"batch_size": 0, "checkpoint": "c"},
            ["--batch_size=0", "--checkpoint=c"],
            id="evaluate",
        ),
    ],
)
def test_a_bad_value_is_refused_with_the_line_the_command_prints(
    command, keywords, flags, tmp_path, capsys
):
    """The keywords go through the command's own parser and checks, before any work."""
    required = {"input": "c.json", "output": tmp_path / "out"}
    if command is evaluate_command:
        required = {"dataset": tmp_path / "d", "images": "i", "output": tmp_path / "out"}
    function = getattr(dmc_datasets, command.__name__.removeprefix("pipelines."))
    with pytest.raises(InputError) as raised:
        function(**required, **keywords)
    argv = [f"--{name}={value}" for name, value in required.items()]
    assert command.main([*argv, *flags]) == 2
    assert capsys.readouterr().err == f"error: {raised.value}\n"
    assert not (tmp_path / "out").exists()


RENAMED = [
    (old, option)
    for option in dataclasses.fields(GenerateOptions)
    for old in option.metadata.get("renamed_from", ())
]
VALUES = {str: "x", int: 7, float: 0.5, bool: True}


@pytest.mark.parametrize(("old", "option"), RENAMED, ids=[old for old, _ in RENAMED])
def test_an_earlier_option_name_is_taken_as_the_command_takes_it(old, option, capsys):
    keywords = {"input": "c.json", "output": "out"}
    (options, _), _ = parsed(GENERATE, {**keywords, old: VALUES[option.type]})
    assert getattr(options, option.name) == VALUES[option.type]
    assert f"--{old} is renamed --{option.name}" in capsys.readouterr().err


def test_an_input_error_a_worker_process_raised_surfaces_as_an_input_error():
    """Beam re-raises a worker's InputError inside a RuntimeError carrying its traceback."""
    worker = "Traceback ...\ntransforms.errors.InputError: captions.json: not COCO json\n"
    with pytest.raises(InputError) as raised, command_errors():
        raise RuntimeError(worker)
    assert str(raised.value) == "captions.json: not COCO json"
    with pytest.raises(InputError) as raised, command_errors():
        raise InputError("x.json: empty [while running 'PrepareCaptions/Read']")
    assert str(raised.value) == "x.json: empty"
    with pytest.raises(KeyError), command_errors():
        raise KeyError("not an input error: as it is")
