"""Version claims (pipelines/store/claims.py): one owner at a time, stale claims taken over."""

import contextlib
import dataclasses
import functools
import json
import os
import subprocess
import sys
import time

import pytest

from pipelines.store import claims
from pipelines.store.claims import (
    Fence,
    acquire,
    claim_file,
    claimed,
    holder_of,
    lease_seconds,
    new_owner,
)
from schemas.layout import LOCK_FILE
from transforms.errors import InputError


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _write_claim(directory, **changes) -> None:
    """A claim as another run left it, its lease running until ``lease_until``."""
    owner = dataclasses.replace(new_owner(0.0), **{"lease_until": 4e9, **changes})
    os.makedirs(directory, exist_ok=True)
    (directory / LOCK_FILE).write_text(json.dumps(dataclasses.asdict(owner)))
    os.utime(directory / LOCK_FILE, (owner.lease_until, owner.lease_until))


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


class _PausedAt:
    """``os`` as pipelines.store.claims sees it, with a pause before its ``at``-th call: another
    run acts (``meanwhile``) while this one is stopped there, as under SIGSTOP."""

    def __init__(self, at: int, meanwhile):
        self.calls, self.at, self.meanwhile, self.paused = 0, at, meanwhile, False

    def __getattr__(self, name: str):
        found = getattr(os, name)
        if not callable(found):
            return found

        def call(*args, **kwargs):
            self.calls += 1
            if self.calls == self.at:
                self.paused = True
                self.meanwhile()
            return found(*args, **kwargs)

        return call


def _take_over(directory: str, then_release: bool) -> None:
    """What another run does once the paused run's lease has run out."""
    with contextlib.suppress(FileNotFoundError):  # paused inside its release
        os.utime(os.path.join(directory, LOCK_FILE), (0, 0))
    taker = claim_file(directory)
    acquire(taker, dataclasses.replace(new_owner(time.time()), run="taker"))
    if then_release:
        taker.release("", "taker")


@pytest.mark.parametrize("taker_released", [False, True], ids=["taker-holds", "taker-released"])
def test_a_run_paused_anywhere_in_renewing_or_releasing_never_undoes_a_takeover(
    tmp_path, monkeypatch, taker_released
):
    """The cause of a flaky end-to-end test: a renewal paused between its check and its
    write brought the claim back after the run that took it over had released it."""
    for at in range(1, 100):
        directory = str(tmp_path / str(at))
        paused = new_owner(time.time())
        token = acquire(claim_file(directory), paused)

        pause = _PausedAt(at, functools.partial(_take_over, directory, taker_released))
        monkeypatch.setattr(claims, "os", pause)
        store = claim_file(directory)
        renewed = dataclasses.replace(paused, lease_until=time.time() + lease_seconds())
        for step in (
            functools.partial(store.renew, json.dumps(dataclasses.asdict(renewed)).encode()),
            functools.partial(store.release, run=paused.run),
        ):
            step(token)
            if pause.paused:
                with monkeypatch.context() as unpaused:
                    unpaused.setattr(claims, "os", os)
                    holder = holder_of(claim_file(directory))
                assert (holder and holder.run) == (None if taker_released else "taker"), at
        monkeypatch.setattr(claims, "os", os)
        if not pause.paused:  # past the last call: every point was tried
            break
    assert at > 3


@pytest.mark.parametrize("given", ["abc", "0", "-1", "4", "nan", "inf", ""])
def test_a_lease_that_is_no_finite_number_of_seconds_from_5_is_refused(monkeypatch, given):
    monkeypatch.setenv("DMC_CLAIM_LEASE_SECONDS", given)
    with pytest.raises(InputError, match=f"^DMC_CLAIM_LEASE_SECONDS={given}: give a number"):
        lease_seconds()


def test_the_lease_is_read_from_the_environment(monkeypatch):
    assert lease_seconds() == 600
    monkeypatch.setenv("DMC_CLAIM_LEASE_SECONDS", "5")
    assert lease_seconds() == 5
