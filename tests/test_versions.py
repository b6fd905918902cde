"""Versioned, atomic, idempotent outputs: OUTPUT/versions/<version>/, _COMPLETE, latest."""

import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from pipelines.generate import main, run
from pipelines.options import GenerateOptions
from pipelines.regenerate import main as regenerate
from pipelines.store.claims import claim_file, holder_of
from pipelines.store.versions import (
    Version,
    check_output,
    completed_dataset,
    link_latest,
    point_latest,
    version_name,
)
from schemas.layout import COMPLETE_FILE
from tests.support.dataset_checks import check_dataset
from tests.support.version_checks import (
    failure_after_a_train_shard,
    same_but_the_name,
    version_files,
)
from tests.support.versions import LIFECYCLE, SMALL, SMALL_MCIC, copied_into
from transforms.errors import InputError
from transforms.report.card import ROOT_CARD_MARKER

CHECKSUMS = [{"sha256": "a" * 64}, {"sha256": "b" * 64}]


def _latest(root: str) -> str:
    return pathlib.Path(root, "latest.txt").read_text().strip()


def _changed_corpus(source: str, destination: pathlib.Path) -> str:
    corpus = json.loads(pathlib.Path(source).read_text())
    corpus["annotations"][0]["caption"] = "a purple giraffe reads a newspaper on a bus"
    destination.write_text(json.dumps(corpus))
    return str(destination)


def test_version_names_follow_content_not_location():
    options = GenerateOptions(input="a.json", output="out")
    name = version_name(options, CHECKSUMS)
    assert len(name) == 12
    assert version_name(options, CHECKSUMS[::-1]) == name
    moved = dataclasses.replace(options, input="b.json", output="gs://b/o", search_threads=1)
    assert version_name(moved, CHECKSUMS) == name
    assert version_name(dataclasses.replace(options, score_lambda=0.4), CHECKSUMS) != name
    assert version_name(options, [{"sha256": "c" * 64}]) != name
    labelled = version_name(dataclasses.replace(options, label="coco2014"), CHECKSUMS)
    assert labelled == f"coco2014-{name}"


def test_rerun_is_up_to_date_and_force_writes_an_identical_new_version(
    small_dataset, tmp_path, capsys
):
    first = copied_into(small_dataset[0], tmp_path)
    root = str(tmp_path)
    args = ["--input", small_dataset[1].input, "--output", root]
    args += [f"--{name}={value}" for name, value in SMALL_MCIC.items()]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith(f"up to date: {first}")
    assert completed_dataset(root) == first
    assert main([*args, "--force", "--direct_num_workers", "2"]) == 0
    second = f"{first}.2"
    assert _latest(root) == os.path.basename(second)
    assert completed_dataset(root) == second
    same_but_the_name(first, second)  # byte-identical, over two workers this time
    assert any(name.endswith(".parquet") for name in version_files(first))


@pytest.mark.slow
def test_a_failed_run_leaves_latest_alone_and_the_next_run_completes(
    small_closed_sets, synthetic_corpus, tmp_path
):
    root = str(tmp_path / "out")
    copied_into(small_closed_sets[0], tmp_path / "out")
    options = GenerateOptions(input=synthetic_corpus, output=root, **SMALL)
    old = run(options).version  # up to date: made the latest
    old_files = version_files(old.directory)
    changed = dataclasses.replace(
        options, input=_changed_corpus(synthetic_corpus, tmp_path / "changed.json")
    )
    with failure_after_a_train_shard(), pytest.raises(Exception, match="injected failure"):
        run(changed)
    versions = pathlib.Path(root, "versions")
    [failed] = [p for p in versions.iterdir() if p.is_dir() and p.name != old.name]
    assert list(failed.glob("dataset/parquet/train/*.parquet"))  # partial files are there ...
    assert not (failed / COMPLETE_FILE).exists()  # ... but never marked complete
    assert _latest(root) == old.name
    assert completed_dataset(root) == old.directory
    with pytest.raises(InputError, match="no _COMPLETE marker: the run that wrote it failed"):
        completed_dataset(str(failed))

    new = run(changed).version
    assert new.directory == str(failed)
    assert _latest(root) == new.name
    assert version_files(old.directory) == old_files  # the old version is untouched
    check_dataset(dataclasses.replace(changed, output=new.directory), sample=10)


@pytest.mark.slow
def test_a_killed_run_is_never_published(synthetic_corpus, tmp_path):
    root = tmp_path / "out"
    args = [sys.executable, "-m", "pipelines.generate", "--input", synthetic_corpus]
    args += ["--output", str(root), *(f"--{name}={value}" for name, value in LIFECYCLE.items())]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while (
        not list(root.glob("versions/*/build/corpus/embeddings.npy"))
        and time.monotonic() < deadline
    ):
        assert process.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    [killed] = list((root / "versions").iterdir())
    assert not (killed / COMPLETE_FILE).exists()
    assert not (root / "latest.txt").exists() and not (root / "latest").exists()
    with pytest.raises(InputError, match="no _COMPLETE marker"):
        completed_dataset(str(root))

    finished = subprocess.run(args, capture_output=True, text=True, check=True)
    assert finished.stdout.strip().endswith(f"dataset written to {killed}")
    assert (killed / COMPLETE_FILE).exists()
    assert completed_dataset(str(root)) == str(killed)


def test_readers_get_a_clear_error_where_there_is_no_dataset(tmp_path):
    with pytest.raises(InputError, match="no dataset there"):
        completed_dataset(str(tmp_path))


def test_after_a_repair_with_force_the_plain_command_and_regenerate_are_up_to_date(
    small_closed_sets, synthetic_corpus, tmp_path, capsys
):
    """The scheduler's loop: damage -> plain (refused) -> --force -> plain -> regenerate."""
    root = str(tmp_path / "out")
    copied_into(small_closed_sets[0], tmp_path / "out")
    args = ["--input", synthetic_corpus, "--output", root]
    args += [f"--{name}={value}" for name, value in SMALL.items()]
    assert main(args) == 0
    first = completed_dataset(root)
    next(pathlib.Path(first).glob("dataset/parquet/train/*.parquet")).unlink()
    capsys.readouterr()
    assert main(args) == 2
    assert "missing (the version's manifest.json lists it)" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0
    repaired = f"{first}.2"
    assert completed_dataset(root) == repaired
    capsys.readouterr()
    for _ in range(2):  # the plain command, again and again: never --force twice
        assert main(args) == 0
        assert capsys.readouterr().out.startswith(f"up to date: {repaired}")
    assert regenerate(args) == 0
    line = capsys.readouterr().out
    assert f"regenerate {root}: up to date: {os.path.basename(repaired)}" in line
    assert sorted(os.listdir(pathlib.Path(root, "versions"))) == sorted(
        os.path.basename(path) for path in (first, repaired)
    )


@pytest.mark.parametrize("latest", ["directory", "file", "dangling link", "link"])
def test_latest_is_pointed_at_the_version_whatever_it_was(tmp_path, latest, caplog):
    output = tmp_path / "out"
    (output / "versions" / "v2").mkdir(parents=True)
    link = output / "latest"
    if latest == "directory":  # what cp -rL makes of the link
        link.mkdir()
        (link / "kept.txt").write_text("someone's file")
    elif latest == "file":
        link.write_text("v1")
    else:
        link.symlink_to("versions/gone" if latest == "dangling link" else "versions/v2")
    stale, fresh = output / "latest.tmp-old", output / "latest.tmp-new"
    stale.symlink_to("versions/v1")
    fresh.symlink_to("versions/v1")
    os.utime(stale, (time.time() - 3600,) * 2, follow_symlinks=False)
    link_latest(str(output), "v2")
    assert os.readlink(link) == os.path.join("versions", "v2", "dataset")
    assert not stale.is_symlink() and fresh.is_symlink()  # a live run's is left alone
    aside = list(output.glob("latest.replaced-*"))
    if latest == "directory":
        assert [path.read_text() for path in aside[0].iterdir()] == ["someone's file"]
        assert "was a directory, not the link to the latest version" in caplog.text
    else:
        assert aside == []


@pytest.mark.parametrize("before", ["none", "ours", "the user's"])
def test_the_root_card_never_replaces_a_readme_of_the_users(tmp_path, before, caplog):
    output = tmp_path / "out"
    (output / "versions" / "v2").mkdir(parents=True)
    readme = output / "README.md"
    if before != "none":
        readme.write_text(f"{ROOT_CARD_MARKER}\nv1's card" if before == "ours" else "# My notes")
    card = f"---\n---\n{ROOT_CARD_MARKER}\nv2's card"
    point_latest(str(output), Version("v2", str(output / "versions" / "v2"), True), card)
    assert readme.read_text() == card
    aside = list(output.glob("README.md.replaced-*"))
    if before == "the user's":
        assert [path.read_text() for path in aside] == ["# My notes"]
        assert "was not a card this tool wrote" in caplog.text
    else:
        assert aside == []


def test_checking_an_output_creates_nothing(tmp_path):
    check_output(str(tmp_path / "new" / "out"))
    assert list(tmp_path.iterdir()) == []  # a refused run leaves no empty --output behind
    (tmp_path / "a_file").write_text("")
    with pytest.raises(InputError, match=r"a_file is a file; give a directory"):
        check_output(str(tmp_path / "a_file" / "out"))


def test_a_run_writes_the_root_card_with_its_marker(small_dataset):
    version, _ = small_dataset
    root_card = pathlib.Path(version).parent.parent / "README.md"
    assert ROOT_CARD_MARKER in root_card.read_text(encoding="utf-8").split("\n# ", 1)[0]


def _snapshot(root: pathlib.Path) -> dict[str, bytes]:
    """Every file under ``root`` (links followed to their target's name) and its bytes."""
    return {
        str(path.relative_to(root)): os.readlink(path).encode()
        if path.is_symlink()
        else path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_symlink() or path.is_file()
    }


@pytest.mark.slow
def test_a_run_paused_past_its_lease_and_taken_over_deletes_and_publishes_nothing(
    synthetic_corpus, tmp_path
):
    root = tmp_path / "out"
    args = [sys.executable, "-m", "pipelines.generate", "--input", synthetic_corpus]
    args += ["--output", str(root), *(f"--{name}={value}" for name, value in LIFECYCLE.items())]
    env = {**os.environ, "DMC_CLAIM_LEASE_SECONDS": "5"}  # the shortest: renewed every 0.5 s
    paused = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    # Paused after its corpus and model, before its shards: once its index is written
    # (a write in flight at the pause would complete; the indexes are the same bytes).
    while (
        not list(root.glob("versions/*/build/corpus/index-*.faiss")) and time.monotonic() < deadline
    ):
        assert paused.poll() is None, "the run ended before it could be paused"
        time.sleep(0.05)
    paused.send_signal(signal.SIGSTOP)
    try:
        [claim] = root.glob("versions/*/_LOCK")
        lease_until = holder_of(claim_file(str(claim.parent))).lease_until
        while time.time() <= lease_until:  # the condition: its lease has run out
            time.sleep(0.05)
        taker = subprocess.run(args, env=env, capture_output=True, text=True)
        assert taker.returncode == 0, taker.stderr[-2000:]
        published = _snapshot(root)
        assert not claim.exists()  # the taker released its claim
    finally:
        paused.send_signal(signal.SIGCONT)
    _, stderr = paused.communicate(timeout=300)
    assert paused.returncode == 2, stderr.decode()[-2000:]
    assert "this run no longer holds the version's claim (now released)" in stderr.decode()
    assert _snapshot(root) == published  # nothing deleted, rewritten or published
    check_dataset(
        dataclasses.replace(
            GenerateOptions(input=synthetic_corpus, output=str(root), **LIFECYCLE),
            output=completed_dataset(str(root)),
        ),
        sample=5,
    )


def test_a_latest_txt_that_is_not_utf8_is_refused_naming_it(tmp_path):
    (tmp_path / "versions" / "v1").mkdir(parents=True)
    (tmp_path / "latest.txt").write_bytes(b"\xff\xfev1\n")
    with pytest.raises(InputError, match=r"latest.txt: not UTF-8 \(byte 0\), so it names no"):
        completed_dataset(str(tmp_path))


def test_the_driver_reads_each_input_once_before_the_pipeline(
    small_closed_sets, synthetic_corpus, tmp_path, monkeypatch
):
    """Its checksum and --language's sample come from one read (a rerun finds the version
    complete, so nothing else reads it)."""
    from apache_beam.io.filesystems import FileSystems

    version, _ = small_closed_sets
    copied_into(version, tmp_path / "out")
    opened = []
    real_open = FileSystems.open

    def counted_open(path, *args, **kwargs):
        opened.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(FileSystems, "open", counted_open)
    options = GenerateOptions(input=synthetic_corpus, output=str(tmp_path / "out"), **SMALL)
    assert run(options).up_to_date
    assert opened.count(synthetic_corpus) == 1


def test_a_gzipped_input_is_named_by_its_bytes_and_known_as_synthetic(synthetic_corpus, tmp_path):
    import gzip

    from pipelines.store.manifest import file_checksum, read_inputs

    compressed = tmp_path / "captions.json.gz"
    compressed.write_bytes(gzip.compress(pathlib.Path(synthetic_corpus).read_bytes()))
    [checksum], sample = read_inputs([str(compressed)])
    assert checksum == {**file_checksum(str(compressed)), "synthetic": True}
    plain = read_inputs([synthetic_corpus])[1]
    assert sample and [c.caption for c in plain] == [c.caption for c in sample]
