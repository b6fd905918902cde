"""Fault injection: concurrent runs, damaged versions, and bad inputs as a user meets them.

The command-line cases run the real entry points in subprocesses, so what is
checked is what a user sees: the exit code and every line on stderr.
"""

import gzip
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from pipelines.claims import LOCK_FILE
from pipelines.lifecycle import write_version
from pipelines.versions import plan_version, verify_version
from tests.conftest import SMALL
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


def _bad_inputs(tmp: pathlib.Path, corpus: str, model: str) -> list[tuple[list[str], str]]:
    """(generate's arguments, what its one stderr line must contain).

    ``model``: the PV model a run on ``corpus`` saved (``build/pv/doc2vec.model``).
    """
    coco = json.dumps(COCO).encode()
    renamed = {**COCO, "images": [*COCO["images"], {"id": 1, "file_name": "other.jpg"}]}
    null_id = json.dumps({**COCO, "annotations": [{"id": None, "image_id": 1, "caption": "x"}]})
    (tmp / "a_directory").mkdir()
    out = ["--output", str(tmp / "out")]
    return [
        (["--input", str(tmp / "a_directory"), *out], f"{tmp / 'a_directory'}: is a directory"),
        (
            ["--input", f"{corpus},{_write(tmp / 'empty.json', b'')}", *out],
            f"{tmp / 'empty.json'}: the file is empty",
        ),
        (
            ["--input", _write(tmp / "null.json", null_id.encode()), *out],
            "null.json: annotations[0]: 'id' is null",
        ),
        (
            ["--input", f"{_write(tmp / 'a.json', coco)},{_write(tmp / 'b.json', coco)}", *out],
            f"{tmp / 'b.json'}: the same content (sha256",
        ),
        (
            ["--input", f"{corpus},{_overlapping(tmp, corpus)}", *out, *SMALL_ARGS],
            f"is in {corpus} and in {tmp / 'overlap.json'}",
        ),
        (
            ["--input", _write(tmp / "renamed.json", json.dumps(renamed).encode()), *out],
            f"{tmp / 'renamed.json'}: images[2] has id 1 like images[0], with another file "
            "name (other.jpg and 1.jpg)",
        ),
        (
            ["--input", _one_caption_changed(tmp, corpus), *out, *SMALL_ARGS, "--pv_model", model],
            f"{model}: the model was trained on other captions (or in another order) than "
            "this corpus",
        ),
        (
            ["--input", _write(tmp / "nested.json", b'{"images": ' + b"[" * 100_000), *out],
            f"{tmp / 'nested.json'}: JSON nested too deeply to read",
        ),
        (
            ["--input", _write(tmp / "array.json", b"[]"), *out],
            f"{tmp / 'array.json'}: a JSON array; a COCO captions file is a JSON object",
        ),
        (["--input", corpus, *out, "--neighbors", "20"], "unknown flag --neighbors (did you mean"),
        (["--input", corpus, *out, "--sead", "7"], "unknown flag --sead (did you mean --seed?)"),
        (
            ["--input", corpus, *out, *SMALL_ARGS, "--pv_model", _write(tmp / "a.model", b"x\n")],
            f"{tmp / 'a.model'}: not a paragraph-vector model",
        ),
        (
            ["--input", corpus, *out, "--pv_model", str(tmp / "no.model")],
            f"--pv_model {tmp / 'no.model'}: no such file",
        ),
        (["--input", corpus, "--output", ""], "--output is empty"),
        (
            [
                "--input",
                corpus,
                *out,
                *SMALL_ARGS,
                "--pv_min_count",
                "100000",
            ],
            "--pv_min_count 100000 leaves no word to train on",
        ),
    ]


def test_bad_inputs_are_one_line_on_stderr_and_exit_code_2(
    tmp_path, synthetic_corpus, small_dataset
):
    model = str(pathlib.Path(small_dataset[0]) / "build" / "pv" / "doc2vec.model")
    for args, message in _bad_inputs(tmp_path, synthetic_corpus, model):
        result = _command("generate", *args)
        lines = result.stderr.splitlines()
        assert (result.returncode, len(lines)) == (2, 1), (args, result.stderr[-3000:])
        assert lines[0].startswith("error: ") and message in lines[0], (args, lines)
        assert not (tmp_path / "out" / "latest.txt").exists()
        # nothing left behind: no version folder, files in one, nor an empty versions/
        assert not (tmp_path / "out" / "versions").exists(), (args, lines)


def test_misspelt_flags_are_refused_by_every_entry_point(tmp_path):
    for module, args in [
        ("regenerate", ["--input", "a", "--output", "o", "--n_devv", "5"]),
        ("train", ["--dataset", "d", "--output", "o", "--epoch", "5"]),
        ("optimize", ["--input", "a", "--output", "o", "--pv_dim_gird", "5"]),
        ("make_corpus", ["--output", str(tmp_path / "c.json"), "--num_image", "5"]),
    ]:
        result = _command(module, *args)
        assert result.returncode == 2, (module, result.stderr[-2000:])
        assert "(did you mean --" in (result.stdout + result.stderr), module


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
def test_a_damaged_shard_is_refused_by_verify_and_by_train(damaged, tmp_path, damage, message):
    shard = _shard(damaged)
    damage(shard)
    with pytest.raises(InputError, match=f"{shard}: {message}"):
        verify_version(str(damaged))
    result = _command("train", "--dataset", str(damaged), "--output", str(tmp_path / "t"))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
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
    tmp_path, synthetic_corpus
):
    # As root, permissions do not stop a write; a file where the folder should be does.
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "versions").write_text("")
    result = _command("generate", "--input", synthetic_corpus, "--output", str(tmp_path / "out"))
    assert (result.returncode, result.stderr.splitlines()) == (
        2,
        [f"error: {tmp_path / 'out' / 'versions'}: is a file; give a directory to write into"],
    )


def test_train_refuses_a_file_as_output_before_fitting(small_dataset, tmp_path):
    output = _write(tmp_path / "a_file", b"")
    result = _command("train", "--dataset", small_dataset[0], "--output", output)
    assert (result.returncode, result.stderr.strip()) == (
        2,
        f"error: {output}: is a file; give a directory to write into",
    )


def test_two_runs_of_one_version_never_publish_a_broken_one(synthetic_corpus, tmp_path):
    root = tmp_path / "out"
    args = ["-m", "pipelines.generate", "--input", synthetic_corpus, "--output", str(root)]
    args += [f"--{name}={value}" for name, value in {**SMALL, "seed": 5}.items()]
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
    (a reader finds versions/<name>/ and takes it for a run still going); files it
    wrote stay, for a look and for the next run to clear."""
    output = str(tmp_path / "out")
    version = plan_version(output, "v1", force=False)

    def fails(directory: str, fence) -> None:
        assert os.listdir(directory) == [LOCK_FILE]  # claimed, nothing written yet
        raise failure

    with pytest.raises(type(failure)):
        write_version(output, version, fails)
    assert os.listdir(output) == []

    def writes_then_fails(directory: str, fence) -> None:
        pathlib.Path(directory, "train-00000-of-00001.parquet").write_bytes(b"partial")
        raise failure

    with pytest.raises(type(failure)):
        write_version(output, version, writes_then_fails)
    assert os.listdir(version.directory) == ["train-00000-of-00001.parquet"]
