"""Version claims (pipelines/claims.py): one owner at a time, stale claims taken over."""

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from pipelines.claims import LOCK_FILE, Fence, acquire, claim_file, claimed, new_owner
from transforms.errors import InputError


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _write_claim(directory, **changes) -> None:
    owner = dataclasses.replace(new_owner(0.0), **{"lease_until": 4e9, **changes})
    os.makedirs(directory, exist_ok=True)
    (directory / LOCK_FILE).write_text(json.dumps(dataclasses.asdict(owner)))


def test_a_held_claim_stops_a_second_claimant_naming_the_owner(tmp_path):
    with claimed(str(tmp_path / "v")) as owner:
        held = json.loads((tmp_path / "v" / LOCK_FILE).read_text())
        assert (held["run"], held["pid"]) == (owner.run, os.getpid())
        with pytest.raises(
            InputError, match=rf"another run is writing this version \(pid {os.getpid()} on"
        ):
            acquire(claim_file(str(tmp_path / "v")), new_owner(0.0))
    assert not (tmp_path / "v" / LOCK_FILE).exists()  # released


@pytest.mark.parametrize(
    "stale",
    [{"pid": "dead"}, {"host": "elsewhere", "lease_until": 1.0}],
    ids=["dead-process-on-this-host", "lease-expired-on-another-host"],
)
def test_a_stale_claim_is_taken_over(tmp_path, stale):
    changes = {**stale, "pid": _dead_pid()} if stale.get("pid") == "dead" else stale
    _write_claim(tmp_path, **changes)
    with claimed(str(tmp_path)) as owner:
        assert json.loads((tmp_path / LOCK_FILE).read_text())["run"] == owner.run


def test_a_live_claim_of_another_host_is_respected(tmp_path):
    _write_claim(tmp_path, host="elsewhere", pid=1)
    with pytest.raises(InputError, match="pid 1 on elsewhere"):
        acquire(claim_file(str(tmp_path)), new_owner(0.0))


def test_a_claim_cut_short_is_stale(tmp_path):
    (tmp_path / LOCK_FILE).write_text('{"run": "')
    with claimed(str(tmp_path)):
        assert (tmp_path / LOCK_FILE).exists()


def test_a_claim_taken_over_is_neither_renewed_nor_released_and_the_fence_stops_its_run(
    tmp_path,
):
    with claimed(str(tmp_path)) as owner:
        fence = Fence(str(tmp_path), owner.run)
        fence()  # held: nothing happens
        _write_claim(tmp_path, host="elsewhere", pid=7)  # another run took it over
        with pytest.raises(InputError, match=r"no longer holds the version's claim \(now held"):
            fence()
        renewed = dataclasses.replace(owner, lease_until=owner.lease_until + 60)
        assert (
            claim_file(str(tmp_path)).renew(json.dumps(dataclasses.asdict(renewed)).encode(), "")
            is None
        )
    held = json.loads((tmp_path / LOCK_FILE).read_text())
    assert (held["host"], held["pid"]) == ("elsewhere", 7)  # neither renewed nor released
    (tmp_path / LOCK_FILE).unlink()
    with pytest.raises(InputError, match=r"\(now released\)"):
        fence()
