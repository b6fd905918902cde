"""generate against a GCS API server on loopback: gs:// in, gs:// out, read back.

What the emulator does not cover is listed in the README (cloud runs).
"""

import dataclasses
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest
from apache_beam.testing.util import assert_that, equal_to
from google.cloud import storage

from pipelines.generate import main, run
from pipelines.options import GenerateOptions
from pipelines.store.versions import completed_dataset, verify_version
from schemas.layout import LOCK_FILE
from tests.support.dataset_checks import check_dataset
from tests.support.gcs_emulator import PROJECT, gcs_servers
from tests.support.local import local_pipeline
from tests.support.version_checks import failure_after_a_train_shard, version_files
from tests.support.versions import LIFECYCLE, SMALL, SMALL_MCIC
from transforms.corpus.read import ReadCaptions, expand_inputs, parse_image_list, parse_lines
from transforms.files import read_file

BUCKET = "dmc-test"


@pytest.fixture(scope="module")
def gcs():
    with gcs_servers() as environment, pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            patch.setenv(name, value)
        client = storage.Client(project=PROJECT)
        client.create_bucket(BUCKET)
        yield client, environment


@pytest.fixture(scope="module")
def corpus_in_bucket(gcs, synthetic_corpus) -> str:
    client, _ = gcs
    client.bucket(BUCKET).blob("corpus/captions_synthetic.json").upload_from_filename(
        synthetic_corpus
    )
    return f"gs://{BUCKET}/corpus/*.json"


def _download(client: storage.Client, prefix: str, destination: pathlib.Path) -> None:
    """With the storage client itself, so the read-back shares nothing with Beam's writer."""
    for blob in client.list_blobs(BUCKET, prefix=prefix):
        target = destination / blob.name[len(prefix) :]
        target.parent.mkdir(parents=True, exist_ok=True)
        blob.download_to_filename(str(target))


def test_a_client_stopped_mid_upload_does_not_stall_the_others(gcs):
    """A run stopped by SIGSTOP can be mid-request; the server must still answer the rest."""
    client, environment = gcs
    host, port = environment["STORAGE_EMULATOR_HOST"].removeprefix("http://").split(":")
    upload = f"/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name=stalled"
    with socket.create_connection((host, int(port))) as stalled:
        stalled.sendall(f"POST {upload} HTTP/1.1\r\nHost: {host}\r\n".encode())
        stalled.sendall(b"Content-Length: 1000\r\n\r\n" + b"x" * 10)  # 990 bytes never come
        blob = client.bucket(BUCKET).blob("answered")
        blob.upload_from_string(b"yes", timeout=10, retry=None)
        assert blob.download_as_bytes(timeout=10, retry=None) == b"yes"
        assert "answered" in {b.name for b in client.list_blobs(BUCKET, timeout=10, retry=None)}


@pytest.mark.slow
def test_generate_reads_gcs_and_writes_the_local_runs_bytes_to_gcs(
    gcs, corpus_in_bucket, small_dataset, tmp_path
):
    client, _ = gcs
    options = GenerateOptions(input=corpus_in_bucket, output=f"gs://{BUCKET}/mcic", **SMALL_MCIC)
    version = run(options).version
    local_directory, _ = small_dataset
    assert version.name == pathlib.Path(local_directory).name  # same content, same version
    assert version.directory == f"gs://{BUCKET}/mcic/versions/{version.name}"
    latest = client.bucket(BUCKET).blob("mcic/latest.txt").download_as_text()
    assert latest.strip() == version.name
    assert completed_dataset(options.output) == version.directory

    copy = tmp_path / "copy"
    _download(client, f"mcic/versions/{version.name}/", copy)
    assert version_files(str(copy)) == version_files(local_directory)
    check_dataset(dataclasses.replace(options, output=str(copy)), sample=10)
    assert run(options).up_to_date


def _error(capsys, *args: str) -> str:
    assert main(list(args)) == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_parallel_caption_lines_and_their_image_list_read_from_gcs(gcs):
    client, _ = gcs
    local = pathlib.Path(__file__).parent / "data" / "languages"
    files = ["images.txt", *(f"de/captions.{k}.de" for k in (1, 2))]
    for name in files:
        client.bucket(BUCKET).blob(f"lines/{name}").upload_from_filename(str(local / name))
    images = parse_image_list("images.txt", (local / "images.txt").read_bytes())
    expected = [
        caption._replace(source=f"gs://{BUCKET}/lines/de/captions.{position + 1}.de")
        for position in (0, 1)
        for caption in parse_lines(
            position, "local", read_file(str(local / files[position + 1])), images, "images.txt"
        )
    ]
    inputs = expand_inputs(f"gs://{BUCKET}/lines/de/captions.*.de")
    with local_pipeline() as pipeline:
        captions = pipeline | ReadCaptions(inputs, images=f"gs://{BUCKET}/lines/images.txt")
        assert_that(captions, equal_to(expected))
    assert len(expected) == 160 and any("ß" in caption.caption for caption in expected)


def test_missing_buckets_and_malformed_paths_are_named(gcs, corpus_in_bucket, capsys):
    assert _error(
        capsys, "--input", "gs://no-such-bucket/c.json", "--output", "gs://dmc-test/o"
    ) == ("error: gs://no-such-bucket/c.json: the bucket no-such-bucket does not exist")
    assert _error(capsys, "--input", corpus_in_bucket, "--output", "gs://no-such-bucket/o") == (
        "error: gs://no-such-bucket/o: cannot write there: the bucket does not exist"
    )
    assert _error(capsys, "--input", corpus_in_bucket, "--output", "gs:///mcic") == (
        "error: --output gs:///mcic: GCS paths look like gs://BUCKET/PATH"
    )


def test_missing_permissions_are_named(gcs, corpus_in_bucket, capsys, monkeypatch):
    _, environment = gcs
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", environment["REFUSING_STORAGE_HOST"])
    assert "permission denied for the credentials in use" in _error(
        capsys, "--input", corpus_in_bucket, "--output", "/tmp/unused"
    )
    assert _error(capsys, "--input", __file__, "--output", f"gs://{BUCKET}/refused") == (
        f"error: gs://{BUCKET}/refused: cannot write there: permission denied for the "
        "credentials in use"
    )


@pytest.mark.slow
def test_a_failed_gcs_run_is_not_published_and_the_next_one_clears_it(gcs, corpus_in_bucket):
    client, _ = gcs
    options = GenerateOptions(
        input=corpus_in_bucket, output=f"gs://{BUCKET}/failing", **{**SMALL, "seed": 1}
    )
    with failure_after_a_train_shard(), pytest.raises(Exception, match="injected failure"):
        run(options)
    left = {blob.name for blob in client.list_blobs(BUCKET, prefix="failing/")}
    assert any(name.endswith(".parquet") for name in left)
    assert not any(name.endswith(("_COMPLETE", "latest.txt")) for name in left)
    failed = next(iter(left)).split("/")[2]
    stale = f"failing/versions/{failed}/dataset/parquet/train/train-00000-of-00009.parquet"
    client.bucket(BUCKET).blob(stale).upload_from_string(b"a shard of another shard count")

    version = run(options).version
    names = {blob.name for blob in client.list_blobs(BUCKET, prefix="failing/")}
    assert f"failing/versions/{version.name}/_COMPLETE" in names
    assert stale.startswith(f"failing/versions/{version.name}/") and stale not in names
    latest = client.bucket(BUCKET).blob("failing/latest.txt").download_as_text()
    assert latest.strip() == version.name
    assert not any(".tmp-" in name or ".write-check-" in name for name in names)


def _wait_for(condition, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.mark.slow
def test_a_killed_gcs_run_is_not_published_and_a_rerun_takes_over_its_claim(
    gcs, corpus_in_bucket, tmp_path
):
    """A real process, killed (SIGKILL) while it writes: no clean-up of its own runs."""
    client, _ = gcs
    bucket = client.bucket(BUCKET)
    bucket.blob("killed/latest.txt").upload_from_string(b"an-earlier-version\n")
    command = [sys.executable, "-m", "pipelines.generate", "--input", corpus_in_bucket]
    command += ["--output", f"gs://{BUCKET}/killed"]
    command += [f"--{name}={value}" for name, value in {**LIFECYCLE, "seed": 2}.items()]

    def names() -> set[str]:
        return {blob.name for blob in client.list_blobs(BUCKET, prefix="killed/")}

    with open(tmp_path / "killed.err", "wb") as stderr:
        killed = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
        )
    try:
        _wait_for(lambda: any(name.endswith(f"/{LOCK_FILE}") for name in names()), 300)
        [lock] = [name for name in names() if name.endswith(f"/{LOCK_FILE}")]
        version = lock.split("/")[2]
        # Once it writes the version's files (its corpus, its model), not before.
        _wait_for(
            lambda: len([n for n in names() if n.startswith(f"killed/versions/{version}/")]) > 1,
            300,
        )
        assert killed.poll() is None, (tmp_path / "killed.err").read_text()[-3000:]
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()

    left = names()
    assert len([name for name in left if name.startswith(f"killed/versions/{version}/")]) > 1
    assert not any(name.endswith("_COMPLETE") for name in left)
    assert bucket.blob("killed/latest.txt").download_as_text() == "an-earlier-version\n"
    owner = json.loads(bucket.blob(lock).download_as_bytes())
    assert (owner["host"], owner["pid"]) == (socket.gethostname(), killed.pid)

    rerun = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    directory = f"gs://{BUCKET}/killed/versions/{version}"
    assert rerun.stdout.strip().endswith(f"dataset written to {directory}")
    assert bucket.blob("killed/latest.txt").download_as_text().strip() == version
    manifest = verify_version(directory)  # the killed run's files are gone, none is extra
    assert any(entry["path"].endswith(".parquet") for entry in manifest["files"])
    assert f"killed/versions/{version}/_COMPLETE" in names()
    assert not any(name.endswith(LOCK_FILE) or ".stale-" in name for name in names())


@pytest.mark.slow
def test_a_gcs_run_paused_past_its_lease_and_taken_over_deletes_and_publishes_nothing(
    gcs, corpus_in_bucket
):
    client, _ = gcs
    prefix = "paused/"
    command = [sys.executable, "-m", "pipelines.generate", "--input", corpus_in_bucket]
    command += ["--output", f"gs://{BUCKET}/paused"]
    command += [f"--{name}={value}" for name, value in {**LIFECYCLE, "seed": 3}.items()]
    env = {**os.environ, "DMC_CLAIM_LEASE_SECONDS": "5"}

    def published() -> dict[str, bytes]:
        return {b.name: b.download_as_bytes() for b in client.list_blobs(BUCKET, prefix=prefix)}

    paused = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(
            lambda: (
                paused.poll() is not None
                or any(b.name.endswith(".faiss") for b in client.list_blobs(BUCKET, prefix=prefix))
            ),
            300,
        )
        assert paused.poll() is None, paused.communicate()[1].decode()[-3000:]
        # after its corpus and model, before its shards (as in test_versions)
        paused.send_signal(signal.SIGSTOP)
        [lock] = [b for b in client.list_blobs(BUCKET, prefix=prefix) if b.name.endswith(LOCK_FILE)]
        lease_until = json.loads(lock.download_as_bytes())["lease_until"]
        _wait_for(lambda: time.time() > lease_until, 60)
        taker = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        assert taker.returncode == 0, taker.stderr[-3000:]
        before = published()
    finally:
        paused.send_signal(signal.SIGCONT)
    _, stderr = paused.communicate(timeout=300)
    assert paused.returncode == 2, stderr.decode()[-3000:]
    assert "this run no longer holds the version's claim" in stderr.decode()
    assert published() == before  # nothing deleted, rewritten or published
    assert not any(name.endswith(LOCK_FILE) for name in before)
    verify_version(completed_dataset(f"gs://{BUCKET}/paused"))
