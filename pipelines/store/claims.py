"""One run per version: an exclusive claim (``<version>/_LOCK``) with an owner and a lease.

A run claims the version directory before it clears or writes anything in
it, renews the lease while it runs and releases the claim at the end. The
claim is created atomically: ``O_EXCL`` locally, the generation-match
precondition ``ifGenerationMatch=0`` on GCS. A claim whose owner is gone (a
process of this host that no longer exists, or a lease not renewed in time,
e.g. a killed run on another machine) is stale and may be taken over; any
other claim stops the run with a one-line error naming its owner. So a run
never deletes or overwrites files of a run that is still writing.
"""

import contextlib
import json
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone

from apache_beam.io.filesystems import FileSystems

from schemas.layout import LOCK_FILE
from transforms.errors import InputError
from transforms.files import bucket_of, storage_client

# A claim not renewed for this long is stale; a test's runs shorten it through the
# environment, to pause a run past its lease in seconds. It is renewed ten times a lease.
LEASE_VARIABLE = "DMC_CLAIM_LEASE_SECONDS"
DEFAULT_LEASE_SECONDS = 600.0
SHORTEST_LEASE_SECONDS = 5.0  # shorter, a busy machine's renewals come too late


def lease_seconds() -> float:
    """The claims' lease, checked as a flag is: a value that is not a finite number of
    seconds >= 5 would make every claim instantly stale or never stale."""
    given = os.environ.get(LEASE_VARIABLE)
    if given is None:
        return DEFAULT_LEASE_SECONDS
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= SHORTEST_LEASE_SECONDS):
        raise InputError(
            f"{LEASE_VARIABLE}={given}: give a number of seconds >= "
            f"{SHORTEST_LEASE_SECONDS:.0f} (default {DEFAULT_LEASE_SECONDS:.0f})"
        )
    return seconds


@dataclass(frozen=True)
class Fence:
    """Stops a run that no longer holds its version's claim: called before every step that
    deletes or publishes there (clearing, the shards, the corpus, the manifest, the
    marker, ``latest``). A run paused past its lease (a VM migrated, a laptop asleep, a
    long pause) may have been taken over; when it resumes, the next such step stops it
    with an InputError (one line, also from a worker process). Small and picklable, so
    Beam's writers call it too.
    """

    directory: str
    run: str

    def __call__(self) -> None:
        holder = holder_of(claim_file(self.directory))
        if holder is None or holder.run != self.run:
            now = f"held by {holder.describe()}" if holder else "released"
            raise InputError(
                f"{self.directory}: this run no longer holds the version's claim (now "
                f"{now}): it was paused past its {lease_seconds():.0f} s lease and another run "
                "took over; it stops without deleting or publishing anything"
            )


@dataclass(frozen=True)
class Owner:
    """Who holds a claim, and until when it holds without renewing."""

    run: str
    host: str
    pid: int
    started: str
    lease_until: float  # seconds since the epoch

    def describe(self) -> str:
        until = datetime.fromtimestamp(self.lease_until, timezone.utc).isoformat(timespec="seconds")
        return f"pid {self.pid} on {self.host}, started {self.started}, lease until {until}"


def new_owner(now: float) -> Owner:
    return Owner(
        run=uuid.uuid4().hex,
        host=socket.gethostname(),
        pid=os.getpid(),
        started=datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
        lease_until=now + lease_seconds(),
    )


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def is_stale(owner: Owner, now: float, host: str) -> bool:
    """Gone: its lease ran out, or it was a process of this host that no longer exists.

    >>> owner = Owner("r", "h", 1, "t", lease_until=100.0)
    >>> is_stale(owner, 101.0, "other"), is_stale(owner, 99.0, "other")
    (True, False)
    """
    return now > owner.lease_until or (owner.host == host and not pid_alive(owner.pid))


def _encode(owner: Owner) -> bytes:
    return json.dumps(asdict(owner), sort_keys=True).encode("utf-8")


def _decode(data: bytes) -> Owner | None:
    """None for a claim file cut short (its writer died while writing it): stale."""
    try:
        return Owner(**json.loads(data))
    except (ValueError, TypeError):
        return None


def _owned_by(data: bytes, run: str) -> bool:
    owner = _decode(data)
    return owner is not None and owner.run == run


def holder_of(store: "LocalClaim | GcsClaim") -> Owner | None:
    """Who holds the claim now; None when it is released (or cut short: stale)."""
    found = store.read()
    return _decode(found[0]) if found else None


class LocalClaim:
    """The claim file on a local filesystem, created whole or not at all.

    The owner is written to a file of its own, which is then hard-linked to
    the claim's name: like ``O_EXCL``, the link fails when the name exists,
    and no reader ever sees a claim without its owner.

    Its lease ends at the file's modification time, which its owner sets
    (the ``lease_until`` written inside is the first). A renewal sets it
    through a descriptor and never writes the claim's name: a run paused
    between checking the claim and renewing it, and taken over meanwhile,
    renews only its own file, set aside, and cannot bring its claim back.
    """

    def __init__(self, path: str):
        self.path = path

    def _beside(self, kind: str) -> str:
        """A new name beside the version directory (never inside: the version's own files
        are listed while the claim is renewed)."""
        return f"{os.path.dirname(self.path)}{LOCK_FILE}.{kind}-{uuid.uuid4().hex}"

    def _written(self, data: bytes) -> str:
        """A new file holding ``data``, beside the version directory."""
        written = self._beside("new")
        with open(written, "xb") as file:
            file.write(data)
        return written

    def create(self, data: bytes) -> str | None:
        """The claim's token ("" locally), or None when the claim exists."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        written = self._written(data)
        lease = _decode(data).lease_until
        os.utime(written, (lease, lease))
        try:
            os.link(written, self.path)
        except FileExistsError:
            return None
        finally:
            os.remove(written)
        return ""

    def read(self) -> tuple[bytes, str] | None:
        """The owner, with the lease its last renewal set."""
        try:
            with open(self.path, "rb") as file:
                data, lease = file.read(), os.fstat(file.fileno()).st_mtime
        except FileNotFoundError:
            return None
        owner = _decode(data)
        if owner is None:
            return data, ""
        return _encode(replace(owner, lease_until=lease)), ""

    def take_over(self, token: str) -> bool:
        """Moves the stale claim aside; of two runs taking over, one rename succeeds."""
        try:
            os.rename(self.path, f"{self.path}.stale-{uuid.uuid4().hex}")
        except FileNotFoundError:
            return False
        return True

    def holds(self, run: str) -> bool:
        holder = holder_of(self)
        return holder is not None and holder.run == run

    def renew(self, data: bytes, token: str) -> str | None:
        """The new token, or None when the claim is no longer ours (taken over while this
        run was paused): it is then left as it is."""
        renewed = _decode(data)
        try:
            with open(self.path, "rb") as file:
                if not _owned_by(file.read(), renewed.run):
                    return None
                os.utime(file.fileno(), (renewed.lease_until, renewed.lease_until))
        except FileNotFoundError:
            return None
        return ""

    def release(self, token: str, run: str) -> None:
        """Removes the claim if it is still this run's. It is renamed aside first (one
        atomic step), so a run paused here never removes a claim another run took
        meanwhile: a claim found not to be ours once aside is linked back."""
        if not self.holds(run):
            return
        aside = self._beside("released")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return
        with open(aside, "rb") as file:
            if not _owned_by(file.read(), run):
                with contextlib.suppress(FileExistsError):  # a newer claim stands
                    os.link(aside, self.path)
        os.remove(aside)


class GcsClaim:
    """The claim object on GCS: generation-match preconditions make every step atomic."""

    def __init__(self, path: str):
        bucket = bucket_of(path)
        self.path = path
        self._blob_name = path[len(f"gs://{bucket}/") :]
        self._bucket = storage_client().bucket(bucket)

    def _upload(self, data: bytes, generation: int) -> str | None:
        from google.api_core.exceptions import PreconditionFailed

        blob = self._bucket.blob(self._blob_name)
        try:
            blob.upload_from_string(data, if_generation_match=generation)
        except PreconditionFailed:
            return None
        return str(blob.generation)

    def create(self, data: bytes) -> str | None:
        """The claim's generation, or None when the claim exists."""
        return self._upload(data, 0)

    def read(self) -> tuple[bytes, str] | None:
        blob = self._bucket.get_blob(self._blob_name)
        if blob is None:
            return None
        generation = str(blob.generation)  # before the download, which may reset it
        return blob.download_as_bytes(if_generation_match=int(generation)), generation

    def take_over(self, token: str) -> bool:
        from google.api_core.exceptions import NotFound, PreconditionFailed

        try:
            self._bucket.blob(self._blob_name).delete(if_generation_match=int(token))
        except (PreconditionFailed, NotFound):
            return False
        return True

    def renew(self, data: bytes, token: str) -> str | None:
        """The new generation, or None when the claim's generation is no longer ours."""
        return self._upload(data, int(token))

    def release(self, token: str, run: str) -> None:
        """Removes the claim if it is still this run's (its generation unchanged)."""
        from google.api_core.exceptions import NotFound, PreconditionFailed

        with contextlib.suppress(PreconditionFailed, NotFound):
            self._bucket.blob(self._blob_name).delete(if_generation_match=int(token))


def claim_file(directory: str) -> LocalClaim | GcsClaim:
    path = FileSystems.join(directory, LOCK_FILE)
    return GcsClaim(path) if bucket_of(path) else LocalClaim(path)


def acquire(store: LocalClaim | GcsClaim, owner: Owner) -> str:
    """Creates the claim, taking over a stale one; returns its token (GCS: its generation)."""
    while (token := store.create(_encode(owner))) is None:
        found = store.read()
        if found is None:  # released meanwhile: try again
            continue
        data, token = found
        holder = _decode(data)
        if holder is not None and not is_stale(holder, time.time(), owner.host):
            raise InputError(
                f"{os.path.dirname(store.path) or store.path}: another run is writing this "
                f"version ({holder.describe()}); wait for it to finish"
            )
        store.take_over(token)
    return token


@contextmanager
def claimed(directory: str) -> Iterator[Owner]:
    """Holds the version's claim for the block, renewing its lease; releases it after.

    A claim taken over meanwhile is neither renewed nor released: it is the other run's
    (the block's steps find out through their ``Fence``).
    """
    store = claim_file(directory)
    owner = new_owner(time.time())
    token = acquire(store, owner)
    stop = threading.Event()

    lease = lease_seconds()

    def renew() -> None:
        nonlocal token
        while not stop.wait(lease / 10):
            renewed = replace(owner, lease_until=time.time() + lease)
            token = store.renew(_encode(renewed), token)
            if token is None:  # taken over while this run was paused
                return

    renewing = threading.Thread(target=renew, name="claim-renewal", daemon=True)
    renewing.start()
    try:
        yield owner
    finally:
        stop.set()
        renewing.join()
        if token is not None:
            store.release(token, owner.run)
