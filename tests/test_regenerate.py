"""pipelines.regenerate: runs only when something changed, one line for the scheduler's log."""

import json
import os
import pathlib
import re
from functools import partial

import pytest

from pipelines import regenerate
from pipelines.generate import main as generate
from pipelines.options import TrainOptions
from pipelines.regenerate import changes, main
from pipelines.store.versions import verify_version
from tests.support.version_checks import failure_after_a_train_shard
from tests.support.versions import SMALL, SMALL_TRAINING

MANIFEST = {"inputs": [{"path": "a.json", "sha256": "1"}], "options": {"seed": 0, "output": "x"}}


def test_changes_name_inputs_and_content_options():
    assert changes(None, MANIFEST) == "first run"
    assert changes(MANIFEST, MANIFEST) == "no change (--force)"
    current = {
        "inputs": [{"path": "a.json", "sha256": "2"}, {"path": "b.json", "sha256": "3"}],
        "options": {"seed": 1, "output": "elsewhere"},
    }
    assert changes(MANIFEST, current) == "new input b.json; input changed a.json; options seed"


def _regenerate(capsys, corpus: str, root: pathlib.Path, *extra: str) -> tuple[int, str]:
    args = ["--input", corpus, "--output", str(root), *extra]
    code = main([*args, *(f"--{name}={value}" for name, value in SMALL.items())])
    [line] = capsys.readouterr().out.splitlines()
    assert re.match(rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 regenerate {root}: ", line)
    return code, line.split(": ", 1)[1]


@pytest.mark.slow
def test_regenerates_only_when_an_input_changes(synthetic_corpus, tmp_path, capsys):
    corpus = tmp_path / "captions.json"
    corpus.write_bytes(pathlib.Path(synthetic_corpus).read_bytes())
    root = tmp_path / "out"
    code, first = _regenerate(capsys, str(corpus), root)
    assert code == 0
    name = (root / "latest.txt").read_text().strip()
    assert re.fullmatch(
        rf"generated {name} in \d+s \(first run\): [\d,]+ instances, latest set to {name}", first
    )
    code, again = _regenerate(capsys, str(corpus), root)
    assert (code, again.split(" (")[0]) == (0, f"up to date: {name}")
    assert again.endswith(f"instances), latest left at {name}")

    data = json.loads(corpus.read_text())
    data["annotations"][0]["caption"] = "a purple giraffe reads a newspaper on a bus"
    corpus.write_text(json.dumps(data))
    code, changed = _regenerate(capsys, str(corpus), root)
    new = (root / "latest.txt").read_text().strip()
    assert code == 0 and new != name
    assert changed.startswith(f"generated {new} in ")
    assert f"(input changed {corpus}): " in changed
    assert changed.endswith(f"latest moved from {name} to {new}")
    assert (root / "versions" / name / "_COMPLETE").exists()

    # Reverted: the first version is complete, so nothing is generated, but latest moves back.
    corpus.write_bytes(pathlib.Path(synthetic_corpus).read_bytes())
    code, reverted = _regenerate(capsys, str(corpus), root)
    assert code == 0 and (root / "latest.txt").read_text().strip() == name
    assert reverted.startswith(f"up to date: {name} (")
    assert reverted.endswith(f"instances), latest moved from {new} to {name}")
    assert "nothing to do" not in reverted


def test_a_failure_is_one_line_and_exit_code_1(synthetic_corpus, tmp_path, capsys):
    with failure_after_a_train_shard():
        code, line = _regenerate(capsys, synthetic_corpus, tmp_path / "out")
    assert code == 1
    assert line.startswith("FAILED: RuntimeError: injected failure")
    assert not (tmp_path / "out" / "latest.txt").exists()


def test_bad_options_are_one_line_and_exit_code_2(synthetic_corpus, tmp_path, capsys):
    code, line = _regenerate(capsys, str(tmp_path / "missing.json"), tmp_path / "out")
    assert code == 2
    assert (
        line
        == f"error: {tmp_path / 'missing.json'}: no such file (check the path or glob in --input)"
    )


@pytest.mark.slow
def test_the_audit_gate_holds_a_leaking_version_back_run_after_run(
    synthetic_corpus, tmp_path, capsys
):
    """MC-IC's decoys give the target away on this corpus (a BLEU hub finds it), so under
    --audit_gate fail its version is written complete but never becomes the latest."""
    root = tmp_path / "out"
    assert _regenerate(capsys, synthetic_corpus, root, "--audit_gate", "fail")[0] == 0
    # closed sets: at chance, published
    published = [(root / name).read_bytes() for name in ("latest.txt", "README.md")]
    link = os.readlink(root / "latest")
    for attempt in ("written", "found complete"):
        code, line = _regenerate(
            capsys, synthetic_corpus, root, "--decoys", "mcic", "--audit_gate", "fail"
        )
        assert code == 3, attempt
        match = re.fullmatch(
            rf"NOT PUBLISHED: {root}/versions/(\w+): text-only furthest from chance: "
            r"[\d.]+% on test \(.+; chance 20%\): ABOVE CHANCE: the options give the target "
            r"away; the version is complete but not published as the latest "
            r"\(--audit_gate fail\)",
            line,
        )
        assert match, line
        verify_version(str(root / "versions" / match[1]))  # complete, every file listed
        assert [(root / name).read_bytes() for name in ("latest.txt", "README.md")] == published
        assert os.readlink(root / "latest") == link

    arguments = ["--input", synthetic_corpus, "--output", str(root), "--decoys", "mcic"]
    arguments += [f"--{name}={value}" for name, value in SMALL.items()]
    assert generate([*arguments, "--audit_gate", "fail"]) == 3
    error = capsys.readouterr().err.splitlines()[-1]  # after the run's progress lines
    assert error.startswith(f"error: {root}/versions/{match[1]}: text-only")
    assert generate(arguments) == 0  # warn, the default: published, the verdict printed
    out = capsys.readouterr().out
    assert "ABOVE CHANCE: the options give the target away" in out
    assert (root / "latest.txt").read_text().strip() == match[1]


@pytest.mark.slow
def test_train_evaluates_each_version_once(synthetic_corpus, tmp_path, capsys, monkeypatch):
    # the trainer at test_train's small sizes: what is checked is that it runs once per version
    monkeypatch.setattr(regenerate, "TrainOptions", partial(TrainOptions, **SMALL_TRAINING))
    root = tmp_path / "out"
    args = ["--train", "--input", synthetic_corpus, "--output", str(root), "--seed", "3"]
    args += [f"--{name}={value}" for name, value in SMALL.items()]
    assert main(args) == 0
    first = capsys.readouterr().out.strip()
    version = root / "versions" / (root / "latest.txt").read_text().strip()
    assert first.endswith(f"; evaluated into {version / 'evaluation'}")
    metrics = json.loads((version / "evaluation" / "metrics.json").read_text())
    assert metrics["dataset"] == str(version)
    assert metrics["options"] == {**metrics["options"], **SMALL_TRAINING}
    assert main(args) == 0
    assert (
        capsys.readouterr().out.strip().endswith(f"; evaluated before, in {version / 'evaluation'}")
    )
