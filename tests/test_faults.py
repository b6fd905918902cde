"""Fault injection: concurrent runs, damaged versions, and bad inputs as a user meets them.

The command-line cases run the entry points' ``main(argv)`` in this process, with
stderr captured at the file descriptor, and check what a user sees: the exit code
and every line on stderr. dmc-generate and dmc-train also each run one case as a command,
in a fresh interpreter, so that what only one prints (import-time warnings, library
banners) would break a line count too; two concurrent runs are two processes.
"""

import dataclasses
import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

import pyarrow.parquet as pq
import pytest

from pipelines import generate, make_corpus, optimize, regenerate, train
from pipelines.store.lifecycle import write_version
from pipelines.store.versions import plan_version, verify_version
from schemas.layout import LOCK_FILE
from tests.support.versions import LIFECYCLE, SMALL
from transforms.errors import InputError

COCO = {
    "images": [{"id": i, "file_name": f"{i}.jpg"} for i in (1, 2)],
    "annotations": [
        {"id": 10, "image_id": 1, "caption": "a dog runs"},
        {"id": 20, "image_id": 2, "caption": "a cat sleeps"},
    ],
}


def _command(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"pipelines.{module}", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _in_process(capfd, main: Callable[[list[str]], int], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of an entry point's ``main(args)`` run in this process."""
    capfd.readouterr()  # what came before is not the run's
    code = main(list(args))
    out, err = capfd.readouterr()
    return code, out, err


def _write(path: pathlib.Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


SMALL_ARGS = [f"--{name}={value}" for name, value in SMALL.items()]


def _overlapping(tmp: pathlib.Path, corpus: str) -> str:
    """A file with one image of ``corpus`` (its id and file name), captioned anew."""
    image = json.loads(pathlib.Path(corpus).read_text())["images"][0]
    overlap = {"images": [image], "annotations": [{"id": 10**9, "image_id": image["id"]}]}
    overlap["annotations"][0]["caption"] = "a purple giraffe reads a newspaper"
    return _write(tmp / "overlap.json", json.dumps(overlap).encode())


def _one_caption_changed(tmp: pathlib.Path, corpus: str) -> str:
    """``corpus`` with as many captions, one of them reworded: a model of it is another's."""
    data = json.loads(pathlib.Path(corpus).read_text())
    data["annotations"][0]["caption"] = "a purple giraffe reads a newspaper on a bus"
    return _write(tmp / "reworded.json", json.dumps(data).encode())


def _directory(path: pathlib.Path) -> str:
    path.mkdir()
    return str(path)


@dataclasses.dataclass(frozen=True)
class Given:
    """What a bad-input case is built from. ``model``: the PV model a run on ``corpus``
    saved (``build/pv/doc2vec.model``)."""

    tmp: pathlib.Path
    corpus: str
    model: str

    @property
    def out(self) -> list[str]:
        return ["--output", str(self.tmp / "out")]


RENAMED = {**COCO, "images": [*COCO["images"], {"id": 1, "file_name": "other.jpg"}]}
NULL_ID = {**COCO, "annotations": [{"id": None, "image_id": 1, "caption": "x"}]}

# case -> (generate's arguments, what its one stderr line must contain)
BAD_INPUTS: dict[str, Callable[[Given], tuple[list[str], str]]] = {
    "directory": lambda g: (
        ["--input", _directory(g.tmp / "a_directory"), *g.out],
        f"{g.tmp / 'a_directory'}: is a directory",
    ),
    "empty_file": lambda g: (
        ["--input", f"{g.corpus},{_write(g.tmp / 'empty.json', b'')}", *g.out],
        f"{g.tmp / 'empty.json'}: the file is empty",
    ),
    "null_id": lambda g: (
        ["--input", _write(g.tmp / "null.json", json.dumps(NULL_ID).encode()), *g.out],
        "null.json: annotations[0]: 'id' is null",
    ),
    "same_content_twice": lambda g: (
        [
            "--input",
            ",".join(
                _write(g.tmp / name, json.dumps(COCO).encode()) for name in ("a.json", "b.json")
            ),
            *g.out,
        ],
        f"{g.tmp / 'b.json'}: the same content (sha256",
    ),
    "image_in_two_inputs": lambda g: (
        ["--input", f"{g.corpus},{_overlapping(g.tmp, g.corpus)}", *g.out, *SMALL_ARGS],
        # the two files in sorted order, wherever the session's and the test's folders are
        "is in {} and in {}".format(*sorted([g.corpus, str(g.tmp / "overlap.json")])),
    ),
    "image_id_renamed": lambda g: (
        ["--input", _write(g.tmp / "renamed.json", json.dumps(RENAMED).encode()), *g.out],
        f"{g.tmp / 'renamed.json'}: images[2] has id 1 like images[0], with another file "
        "name (other.jpg and 1.jpg)",
    ),
    "model_of_other_captions": lambda g: (
        [
            "--input",
            _one_caption_changed(g.tmp, g.corpus),
            *g.out,
            *SMALL_ARGS,
            "--pv_model",
            g.model,
        ],
        f"{g.model}: the model was trained on other captions (or in another order) than "
        "this corpus",
    ),
    "json_nested_too_deeply": lambda g: (
        ["--input", _write(g.tmp / "nested.json", b'{"images": ' + b"[" * 100_000), *g.out],
        f"{g.tmp / 'nested.json'}: JSON nested too deeply to read",
    ),
    "json_array": lambda g: (
        ["--input", _write(g.tmp / "array.json", b"[]"), *g.out],
        f"{g.tmp / 'array.json'}: a JSON array; a COCO captions file is a JSON object",
    ),
    "unknown_flag": lambda g: (
        ["--input", g.corpus, *g.out, "--neighbors", "20"],
        "unknown flag --neighbors (did you mean",
    ),
    "misspelt_flag": lambda g: (
        ["--input", g.corpus, *g.out, "--sead", "7"],
        "unknown flag --sead (did you mean --seed?)",
    ),
    "not_a_model": lambda g: (
        ["--input", g.corpus, *g.out, *SMALL_ARGS, "--pv_model", _write(g.tmp / "a.model", b"x\n")],
        f"{g.tmp / 'a.model'}: not a paragraph-vector model",
    ),
    "no_such_model": lambda g: (
        ["--input", g.corpus, *g.out, "--pv_model", str(g.tmp / "no.model")],
        f"--pv_model {g.tmp / 'no.model'}: no such file",
    ),
    "empty_output": lambda g: (["--input", g.corpus, "--output", ""], "--output is empty"),
    "no_word_to_train_on": lambda g: (
        ["--input", g.corpus, *g.out, *SMALL_ARGS, "--pv_min_count", "100000"],
        "--pv_min_count 100000 leaves no word to train on",
    ),
}
SUBPROCESS_CASE = "no_word_to_train_on"  # through the pipeline, as far as a bad input goes


def _model(small_dataset: tuple[str, object]) -> str:
    return str(pathlib.Path(small_dataset[0]) / "build" / "pv" / "doc2vec.model")


def _assert_refused(given: Given, args: list[str], message: str, code: int, stderr: str) -> None:
    lines = stderr.splitlines()
    assert (code, len(lines)) == (2, 1), (args, stderr[-3000:])
    assert lines[0].startswith("error: ") and message in lines[0], (args, lines)
    # nothing left behind: no version folder, files in one, an empty versions/ nor --output
    assert not (given.tmp / "out").exists(), (args, lines)


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_are_one_line_on_stderr_and_exit_code_2(
    tmp_path, synthetic_corpus, small_dataset, capfd, case
):
    given = Given(tmp_path, synthetic_corpus, _model(small_dataset))
    args, message = BAD_INPUTS[case](given)
    code, out, err = _in_process(capfd, generate.main, *args)
    _assert_refused(given, args, message, code, err)
    assert out == "", args  # no summary, no table


def test_an_input_glob_reaching_into_the_output_is_refused_naming_a_file_there(
    tmp_path, synthetic_corpus, capfd
):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "README.md").write_text("# my notes")  # no Flickr file
    shutil.copy(synthetic_corpus, tmp_path / "captions.json")
    args = ["--input", f"{tmp_path}/**", "--output", str(tmp_path / "out")]
    code, out, err = _in_process(capfd, generate.main, *args)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"error: --input matches 1 files under --output {tmp_path / 'out'} (e.g. "
        f"{tmp_path / 'out' / 'README.md'}): the versions' own files are no captions; give "
        "--input globs that leave it out"
    ]
    assert sorted(os.listdir(tmp_path / "out")) == ["README.md"]


def test_a_lease_from_the_environment_is_checked_as_a_flag_before_any_work(
    tmp_path, synthetic_corpus, small_dataset, capfd, monkeypatch
):
    given = Given(tmp_path, synthetic_corpus, _model(small_dataset))
    monkeypatch.setenv("DMC_CLAIM_LEASE_SECONDS", "inf")
    args = ["--input", synthetic_corpus, *given.out, *SMALL_ARGS]
    code, out, err = _in_process(capfd, generate.main, *args)
    assert out == ""
    _assert_refused(given, args, "DMC_CLAIM_LEASE_SECONDS=inf: give a number of seconds", code, err)


def test_a_bad_input_is_one_line_on_stderr_and_exit_code_2_from_the_command(
    tmp_path, synthetic_corpus, small_dataset
):
    """As a user meets it: a fresh interpreter, its imports and Beam's pipeline included."""
    given = Given(tmp_path, synthetic_corpus, _model(small_dataset))
    args, message = BAD_INPUTS[SUBPROCESS_CASE](given)
    result = _command("generate", *args)
    _assert_refused(given, args, message, result.returncode, result.stderr)


# entry point -> (its main, arguments with one flag misspelt)
MISSPELT_FLAGS = {
    "regenerate": (regenerate.main, ["--input", "a", "--output", "o", "--n_devv", "5"]),
    "train": (train.main, ["--dataset", "d", "--output", "o", "--epoch", "5"]),
    "optimize": (optimize.main, ["--input", "a", "--output", "o", "--pv_dim_gird", "5"]),
    "make_corpus": (make_corpus.main, ["--output", "{tmp}/c.json", "--num_image", "5"]),
}


@pytest.mark.parametrize("module", MISSPELT_FLAGS)
def test_misspelt_flags_are_refused_by_every_entry_point(tmp_path, capfd, module):
    main, args = MISSPELT_FLAGS[module]
    code, out, err = _in_process(capfd, main, *(arg.format(tmp=tmp_path) for arg in args))
    assert code == 2, (module, out, err[-2000:])
    [line] = (out + err).splitlines()  # regenerate's is its one line for the log, on stdout
    assert "(did you mean --" in line, module


def test_a_misspelt_flag_is_refused_by_the_command(tmp_path):
    result = _command("train", *MISSPELT_FLAGS["train"][1])
    assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
    assert result.stderr.splitlines() == ["error: unknown flag --epoch (did you mean --epochs?)"]


def test_bom_and_gzip_inputs_are_read(tmp_path):
    from transforms.corpus.read import parse_captions

    bom = b"\xef\xbb\xbf" + json.dumps(COCO).encode()
    flickr = "\ufeff1.jpg#0\ta dog\n".encode()
    assert [c.caption_id for c in parse_captions("c.json", bom)] == ["10", "20"]
    assert [c.image_id for c in parse_captions("f.txt", flickr)] == ["1.jpg"]
    assert [c.caption_id for c in parse_captions("c.json.gz", gzip.compress(bom))] == ["10", "20"]


def test_statistics_account_for_every_input_caption(small_dataset):
    directory, options = small_dataset
    read = len(json.loads(pathlib.Path(options.input).read_text())["annotations"])
    targets = {
        caption_id
        for path in pathlib.Path(directory).glob("dataset/parquet/*/*.parquet")
        for caption_id in pq.read_table(path).column("target_caption_id").to_pylist()
    }
    statistics = json.loads((pathlib.Path(directory) / "dataset" / "statistics.json").read_text())
    assert len(targets) + sum(statistics["skipped"].values()) == read


@pytest.fixture
def damaged(small_dataset, tmp_path) -> pathlib.Path:
    copy = tmp_path / "version"
    shutil.copytree(small_dataset[0], copy)
    return copy


def _shard(version: pathlib.Path) -> pathlib.Path:
    return sorted(version.glob("dataset/parquet/train/train-*.parquet"))[0]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda path: path.unlink(), "missing"),
        (lambda path: path.write_bytes(path.read_bytes()[:100]), "altered"),
        (lambda path: path.write_bytes(path.read_bytes()[:-1] + b"\0"), "altered"),
    ],
    ids=["deleted", "truncated", "altered"],
)
def test_a_damaged_shard_is_refused_by_verify_and_by_train(
    damaged, tmp_path, capfd, damage, message
):
    shard = _shard(damaged)
    damage(shard)
    with pytest.raises(InputError, match=f"{shard}: {message}"):
        verify_version(str(damaged))
    args = ["--dataset", str(damaged), "--output", str(tmp_path / "t")]
    code, _, err = _in_process(capfd, train.main, *args)
    assert code == 2
    [line] = err.splitlines()
    assert line.startswith(f"error: {shard}: {message}")


def test_an_extra_file_and_a_missing_embedding_are_refused(damaged):
    extra = damaged / "dataset" / "parquet" / "train" / "train-00099-of-00100.parquet"
    extra.write_bytes(b"x")
    with pytest.raises(InputError, match="not part of the version"):
        verify_version(str(damaged))
    extra.unlink()
    (damaged / "build" / "corpus" / "embeddings.npy").unlink()
    with pytest.raises(InputError, match=r"corpus/embeddings\.npy: missing"):
        verify_version(str(damaged))


def test_a_version_without_a_file_list_is_refused(damaged):
    manifest = json.loads((damaged / "manifest.json").read_text())
    del manifest["files"]
    (damaged / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="lists no files"):
        verify_version(str(damaged))


def test_a_versions_folder_that_cannot_be_written_is_refused_before_any_work(
    tmp_path, synthetic_corpus, capfd
):
    # As root, permissions do not stop a write; a file where the folder should be does.
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "versions").write_text("")
    args = ["--input", synthetic_corpus, "--output", str(tmp_path / "out")]
    code, _, err = _in_process(capfd, generate.main, *args)
    assert (code, err.splitlines()) == (
        2,
        [f"error: {tmp_path / 'out' / 'versions'}: is a file; give a directory to write into"],
    )


def test_train_refuses_a_file_as_output_before_fitting(small_dataset, tmp_path, capfd):
    output = _write(tmp_path / "a_file", b"")
    code, _, err = _in_process(capfd, train.main, "--dataset", small_dataset[0], "--output", output)
    assert (code, err.strip()) == (
        2,
        f"error: {output}: is a file; give a directory to write into",
    )


@pytest.mark.slow
def test_two_runs_of_one_version_never_publish_a_broken_one(synthetic_corpus, tmp_path):
    root = tmp_path / "out"
    args = ["-m", "pipelines.generate", "--input", synthetic_corpus, "--output", str(root)]
    args += [f"--{name}={value}" for name, value in {**LIFECYCLE, "seed": 5}.items()]
    first = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not list(root.glob(f"versions/*/{LOCK_FILE}")) and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    assert second.returncode == 2
    [line] = second.stderr.splitlines()
    assert "another run is writing this version" in line and f"pid {first.pid} " in line
    assert first.wait(timeout=600) == 0
    version = root / "versions" / (root / "latest.txt").read_text().strip()
    manifest = verify_version(str(version))
    assert any(entry["path"].endswith(".parquet") for entry in manifest["files"])
    assert not (version / LOCK_FILE).exists()


@pytest.mark.parametrize("failure", [RuntimeError("a bug"), KeyboardInterrupt()])
def test_a_run_that_fails_before_writing_leaves_no_version_folder(tmp_path, failure):
    """Not only a refused input: a failed or interrupted run leaves no empty folder either
    (a reader finds versions/<name>/ and takes it for a run still going), not even the
    --output it made; files it wrote stay, for a look and for the next run to clear."""
    output = str(tmp_path / "out")
    version = plan_version(output, "v1", force=False)

    def fails(directory: str, fence) -> None:
        assert os.listdir(directory) == [LOCK_FILE]  # claimed, nothing written yet
        raise failure

    with pytest.raises(type(failure)):
        write_version(output, version, fails)
    assert os.listdir(tmp_path) == []

    def writes_then_fails(directory: str, fence) -> None:
        pathlib.Path(directory, "train-00000-of-00001.parquet").write_bytes(b"partial")
        raise failure

    with pytest.raises(type(failure)):
        write_version(output, version, writes_then_fails)
    assert os.listdir(version.directory) == ["train-00000-of-00001.parquet"]
