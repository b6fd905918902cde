"""dmc-publish: a version's dataset folder, and nothing else, to a Hub dataset repo, here a
stub hub on loopback (tests/support/hub_stub.py) that huggingface_hub's own client talks to."""

import json
import os
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import huggingface_hub
import huggingface_hub.constants
import pytest
from google.cloud import storage

from pipelines import publish
from pipelines.publish import main
from pipelines.store.versions import NOT_LISTED, completed_dataset
from schemas.layout import (
    BUILD,
    COMPLETE_FILE,
    DATASET,
    LATEST_FILE,
    LATEST_LINK,
    MANIFEST_FILE,
)
from tests.support.gcs_emulator import PROJECT, gcs_servers
from tests.support.hub_stub import CLIENT_OWN, GITATTRIBUTES, REFUSED_TOKEN, Repo, stub_hub

TOKEN = "hf_stub_token"
# What huggingface_hub fetches for itself once a day (its user agent's agent registry),
# written beforehand so that it asks a failing hub nothing (its own timeout is 3 s).
EMPTY_REGISTRY = {"standardEnvVars": [], "harnesses": {}}
HELD = 20  # seconds a never-answering stub holds a request at most: ends a test that hangs


def folder_files(folder: str) -> dict[str, bytes]:
    """{path relative to ``folder``: bytes} of every file under it."""
    files = {}
    for directory, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as file:
                files[os.path.relpath(path, folder)] = file.read()
    return files


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """The stub, as the endpoint and token huggingface_hub finds (HF_ENDPOINT is read when
    the package is imported: its constant is what HfApi() takes). The client's cache of
    what it fetches for itself goes under tmp_path, not the user's HF_HOME."""
    with stub_hub() as hub:
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        monkeypatch.setattr(
            huggingface_hub.constants, "AGENT_HARNESSES_PATH", str(tmp_path / "harnesses.json")
        )
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        yield hub


@pytest.fixture
def version_copy(small_dataset, tmp_path) -> str:
    """A copy of the small dataset's version, for tests that damage it."""
    version, _ = small_dataset
    copy = tmp_path / "out" / "versions" / os.path.basename(version)
    shutil.copytree(version, copy, symlinks=True)
    return str(copy)


def test_dry_run_lists_exactly_the_dataset_folders_files_and_uploads_nothing(
    small_dataset, hub, capsys
):
    version, _ = small_dataset
    output = os.path.dirname(os.path.dirname(version))
    expected = {path: len(data) for path, data in folder_files(f"{version}/{DATASET}").items()}
    assert "README.md" in expected and any(p.startswith("parquet/") for p in expected)
    assert folder_files(f"{version}/{BUILD}"), "the version has build artifacts to leave out"
    for given in (output, f"{output}/{LATEST_LINK}", version):
        assert main(["--dataset", given, "--repo_id", "me/mcic", "--dry_run"]) == 0
        *lines, total = capsys.readouterr().out.splitlines()
        listed = {path: int(size) for path, size in (line.split("  ") for line in lines)}
        assert len(listed) == len(lines)
        assert listed == expected, given
        assert not any(path.startswith(f"{BUILD}/") or path in NOT_LISTED for path in listed)
        assert total.startswith(f"{len(expected)} files, {sum(expected.values()):,} bytes: ")
    assert hub.repos == {} and hub.unexpected == [] and hub.authorizations == set()


def test_publish_commits_the_dataset_folders_bytes_to_a_private_dataset_repo_branch(
    small_dataset, hub, capsys
):
    version, _ = small_dataset
    argv = ["--dataset", version, "--repo_id", "me/mcic", "--private", "--revision", "v1"]
    assert main(argv) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"published {os.path.basename(version)} (") and "me/mcic at v1" in line
    repo = hub.repos["me/mcic"]
    assert repo.type == "dataset" and repo.visibility == "private"
    dataset = folder_files(f"{version}/{DATASET}")
    assert repo.branches["v1"] == {".gitattributes": GITATTRIBUTES, **dataset}
    assert repo.branches["main"] == {".gitattributes": GITATTRIBUTES}
    assert [commit["revision"] for commit in repo.commits] == ["v1"]
    assert hub.unexpected == [] and hub.authorizations == {f"Bearer {TOKEN}"}


def test_publish_again_deletes_an_earlier_versions_files_in_the_same_commit(
    small_dataset, hub, capsys
):
    version, _ = small_dataset
    earlier = {
        ".gitattributes": GITATTRIBUTES,
        "README.md": b"an earlier card",
        "parquet/dev/dev-00000-of-00009.parquet": b"an earlier shard",
    }
    hub.repos["me/mcic"] = Repo("dataset", "public", {"main": dict(earlier)})
    for _ in range(2):
        assert main(["--dataset", version, "--repo_id", "me/mcic"]) == 0
    capsys.readouterr()
    repo = hub.repos["me/mcic"]
    dataset = folder_files(f"{version}/{DATASET}")
    assert repo.branches["main"] == {".gitattributes": GITATTRIBUTES, **dataset}
    assert [commit["deleted"] for commit in repo.commits] == [
        ["parquet/dev/dev-00000-of-00009.parquet"],
        [],
    ]
    assert repo.visibility == "public" and hub.unexpected == []


def test_a_version_on_gcs_reaches_the_hub_as_a_local_one_does(
    small_dataset, hub, monkeypatch, capsys
):
    """A version in a bucket (a GCS API server on loopback): its files are copied through
    Beam's filesystems to a temporary folder, and the repo receives the same bytes."""
    version, _ = small_dataset
    with gcs_servers() as environment:
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        bucket = storage.Client(project=PROJECT).create_bucket("dmc-publish")
        for path, data in folder_files(version).items():
            bucket.blob(f"{os.path.basename(version)}/{path}").upload_from_string(data)
        remote = f"gs://dmc-publish/{os.path.basename(version)}"
        assert main(["--dataset", remote, "--repo_id", "me/mcic"]) == 0
    assert capsys.readouterr().out.startswith(f"published {os.path.basename(version)} (")
    dataset = folder_files(f"{version}/{DATASET}")
    assert hub.repos["me/mcic"].branches["main"] == {".gitattributes": GITATTRIBUTES, **dataset}
    assert hub.unexpected == []


def damage_marker(version: str) -> str:
    os.remove(os.path.join(version, COMPLETE_FILE))
    return version


def damage_shard(version: str) -> str:
    shard = sorted(p for p in folder_files(version) if p.endswith(".parquet"))[-1]
    with open(os.path.join(version, shard), "ab") as file:
        file.write(b"\0")
    return os.path.join(version, shard)


def damage_build(version: str) -> str:
    stray = os.path.join(version, BUILD, "stray.txt")
    with open(stray, "w") as file:
        file.write("not listed\n")
    return stray


@pytest.mark.parametrize("damage", [damage_marker, damage_shard, damage_build])
def test_an_incomplete_or_damaged_version_is_refused_in_one_line_naming_it(
    version_copy, hub, damage, capsys
):
    named = damage(version_copy)
    for dry_run in ([], ["--dry_run"]):
        assert main(["--dataset", version_copy, "--repo_id", "me/mcic", *dry_run]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and named in err, err
    assert hub.repos == {} and hub.authorizations == set()


def test_a_file_altered_after_the_verification_is_not_committed(
    version_copy, hub, monkeypatch, capsys
):
    """Something writing to the version between its verification and the upload."""
    card = os.path.join(version_copy, DATASET, "README.md")

    def verified_then_altered(path: str) -> str:
        verified = completed_dataset(path)
        with open(card, "a") as file:
            file.write("altered\n")
        return verified

    monkeypatch.setattr(publish, "completed_dataset", verified_then_altered)
    assert main(["--dataset", version_copy, "--repo_id", "me/mcic"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {card}: altered since"), err
    assert hub.repos["me/mcic"].commits == []


def test_a_version_without_a_manifest_is_refused(version_copy, hub, capsys):
    os.remove(os.path.join(version_copy, MANIFEST_FILE))
    assert main(["--dataset", version_copy, "--repo_id", "me/mcic"]) == 2
    assert version_copy in capsys.readouterr().err and hub.repos == {}


def test_the_hubs_refusal_is_one_line_naming_the_repo(small_dataset, hub, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", REFUSED_TOKEN)
    version, _ = small_dataset
    assert main(["--dataset", version, "--repo_id", "me/mcic"]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and err.startswith("error: me/mcic: the Hub refused") and "401" in err
    )
    assert hub.repos == {}


def test_without_huggingface_hub_publishing_names_the_extra_and_a_dry_run_still_lists(
    small_dataset, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    version, _ = small_dataset
    assert main(["--dataset", version, "--repo_id", "me/mcic"]) == 2
    assert capsys.readouterr().err == (
        "error: dmc-publish needs huggingface_hub, which is not installed: pip install -e '.[hub]' "
        "(in the project's folder)\n"
    )
    assert main(["--dataset", version, "--repo_id", "me/mcic", "--dry_run"]) == 0


@pytest.mark.parametrize("repo_id", ["mcic", "me/mcic/extra", "me/", ".me/mcic", "me/mc ic"])
def test_a_repo_id_that_is_not_user_slash_name_is_refused(small_dataset, repo_id, capsys):
    version, _ = small_dataset
    assert main(["--dataset", version, "--repo_id", repo_id, "--dry_run"]) == 2
    assert capsys.readouterr().err.startswith(f"error: --repo_id {repo_id!r}: not a Hub repo id")


@contextmanager
def failing_hub(behaviour: str | int) -> Iterator[tuple[str, list[str]]]:
    """(endpoint, the requests it received) of a hub on loopback that fails every request:
    ``"hold"`` accepts it and never answers (until the test ends), ``"drop"`` closes the
    connection without an answer, a number answers with that status."""
    requests, released = [], threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def _fail(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if urlsplit(self.path).path in CLIENT_OWN:
                return self.send_error(404)
            requests.append(f"{self.command} {urlsplit(self.path).path}")
            if behaviour == "hold":
                released.wait(HELD)
                self.close_connection = True
            elif behaviour == "drop":
                self.close_connection = True
            else:
                body = json.dumps({"error": f"stub answers {behaviour}"}).encode()
                self.send_response(behaviour)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        do_GET = do_POST = _fail

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        released.set()
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def refusing_hub() -> Iterator[tuple[str, list[str]]]:
    """A port on loopback that refuses connections: bound, not listening (so no other
    process takes it meanwhile)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}", []


@pytest.fixture
def unreliable(monkeypatch, tmp_path):
    """Points huggingface_hub at a failing hub (``unreliable(behaviour)``), with the retries'
    waits cut to nothing."""
    registry = tmp_path / "harnesses.json"
    registry.write_text(json.dumps(EMPTY_REGISTRY))
    monkeypatch.setattr(huggingface_hub.constants, "AGENT_HARNESSES_PATH", str(registry))
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(publish, "RETRY_WAITS", (0.0, 0.0))

    @contextmanager
    def hub(behaviour: str | int) -> Iterator[tuple[str, list[str]]]:
        with refusing_hub() if behaviour == "refuse" else failing_hub(behaviour) as (url, seen):
            monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", url)
            yield url, seen

    return hub


CREATE = "POST /api/repos/create"
TRIES = 1 + len(publish.RETRY_WAITS)


@pytest.mark.parametrize(
    "behaviour, line, named, tries",
    [
        ("refuse", "{url}: cannot connect (", "Connection refused", 0),
        ("hold", "{url}: no answer within --timeout 0.5 s; ", "longer --timeout", TRIES),
        ("drop", "{url}: the connection was dropped before an answer (", "disconnected", TRIES),
        (500, "{url}: the hub failed (", "500 Internal Server Error", TRIES),
        (503, "{url}: the hub failed (", "503 Service Unavailable", TRIES),
        (401, "me/mcic: the Hub refused the token (", "401 Unauthorized", 1),
        (403, "me/mcic: the Hub refused the token (", "403 Forbidden", 1),
    ],
)
def test_a_failing_hub_is_one_line_of_its_own_kind_and_exit_code_2(
    small_dataset, unreliable, behaviour, line, named, tries, capsys
):
    """Unreachable, silent, dropping, failing (5xx: tried again) and refusing hubs: each
    its own line, naming the hub or the repo and the cause, no traceback; a silent hub is
    given up on after --timeout per try."""
    version, _ = small_dataset
    argv = ["--dataset", version, "--repo_id", "me/mcic", "--timeout", "0.5"]
    with unreliable(behaviour) as (url, requests):
        started = time.monotonic()
        assert main(argv) == 2
        elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    expected = "error: " + line.format(url=f"hub {url}")
    assert out == "" and err.count("\n") == 1 and err.startswith(expected), err
    assert named in err, err
    assert requests.count(CREATE) == tries, requests
    assert elapsed < HELD, "the silent hub was waited for until it let go"


def test_every_request_of_the_hub_client_has_the_timeout_even_one_made_anew():
    """huggingface_hub makes its shared client again after a refused connection: the
    timeout holds for that one too, and only while publishing."""
    before = huggingface_hub.get_session().timeout
    with publish.timed_requests(huggingface_hub, 0.5) as http:
        assert huggingface_hub.get_session().timeout == http.Timeout(0.5) != before
        huggingface_hub.close_session()
        assert huggingface_hub.get_session().timeout == http.Timeout(0.5)
    assert huggingface_hub.get_session().timeout == before


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf"])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_refused(
    small_dataset, timeout, capsys
):
    version, _ = small_dataset
    argv = ["--dataset", version, "--repo_id", "me/mcic", "--timeout", timeout, "--dry_run"]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(f"error: --timeout {float(timeout)}: give ")


def hold_back(version: str) -> None:
    """What a run with --audit_gate fail leaves of a version whose audit is off chance (the
    small MC-IC dataset's is): the gate in its manifest, and no latest naming it (a copy's
    output has none)."""
    path = os.path.join(version, MANIFEST_FILE)
    with open(path, encoding="utf-8") as file:
        manifest = json.load(file)
    manifest["options"]["audit_gate"] = "fail"
    with open(path, "w", encoding="utf-8") as file:
        json.dump(manifest, file)


def test_a_version_the_audit_gate_held_back_is_refused_unless_allowed_with_a_warning(
    version_copy, hub, capsys
):
    """Given itself or by its output (which has no latest then): refused, saying so."""
    hold_back(version_copy)
    output = os.path.dirname(os.path.dirname(version_copy))
    hints = {output: f"give --dataset {version_copy} --allow_held_back", version_copy: ""}
    for given, hint in hints.items():
        for dry_run in ([], ["--dry_run"]):
            assert main(["--dataset", given, "--repo_id", "me/mcic", *dry_run]) == 2
            out, err = capsys.readouterr()
            assert out == "" and err.count("\n") == 1, err
            assert "its audit gate held it back (text-only furthest from chance" in err, err
            assert hint in err and "--allow_held_back" in err
    assert hub.repos == {}

    argv = ["--dataset", version_copy, "--repo_id", "me/mcic", "--allow_held_back"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"published {os.path.basename(version_copy)} (")
    assert f"{version_copy}: publishing a version its audit gate held back (" in err
    assert hub.repos["me/mcic"].commits

    # made the latest after all (generate again with --audit_gate warn): published, no warning
    with open(os.path.join(output, LATEST_FILE), "w") as file:
        file.write(f"{os.path.basename(version_copy)}\n")
    for given in hints:
        assert main(["--dataset", given, "--repo_id", "me/mcic", "--dry_run"]) == 0
        assert capsys.readouterr().err == ""


def test_a_latest_txt_that_is_not_utf8_is_refused_in_one_line_naming_it(version_copy, hub, capsys):
    output = os.path.dirname(os.path.dirname(version_copy))
    latest = os.path.join(output, LATEST_FILE)
    with open(latest, "wb") as file:
        file.write(b"\xff\xfe" + os.path.basename(version_copy).encode("utf-16-le"))
    for dry_run in ([], ["--dry_run"]):
        assert main(["--dataset", output, "--repo_id", "me/mcic", *dry_run]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(f"error: {latest}: not UTF-8 (byte 0)"), err
        assert err.count("\n") == 1
    assert hub.repos == {}


def test_a_folder_that_is_no_dataset_is_called_what_it_is(version_copy, tmp_path, capsys):
    """Not "failed or still running", which a version without its marker (and its output)
    still is."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("publish\n")
    assert main(["--dataset", str(folder), "--repo_id", "me/mcic", "--dry_run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {folder}: not a dataset: neither a version (no "), err
    assert err.count("\n") == 1

    os.remove(os.path.join(version_copy, COMPLETE_FILE))
    for given in (version_copy, os.path.dirname(os.path.dirname(version_copy))):
        assert main(["--dataset", given, "--repo_id", "me/mcic", "--dry_run"]) == 2
        assert "failed or is still running" in capsys.readouterr().err, given
