"""Progress lines for long stages, at most one every few seconds per worker."""

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass

from apache_beam.metrics import Metrics


class Progress:
    """Counts work in a Beam counter and logs done/total and rate.

    ``total`` is the whole stage's size; each worker process logs its own
    share, so on several workers the shares add up to the total.
    """

    def __init__(self, namespace: str, name: str, total: int, interval: float = 10.0):
        self._counter = Metrics.counter(namespace, name)
        self._label = f"{namespace}: {name}"
        self._total, self._interval = total, interval
        self._done = 0
        self._started = self._last = time.monotonic()

    def advance(self, count: int) -> None:
        self._counter.inc(count)
        self._done += count
        now = time.monotonic()
        if now - self._last >= self._interval or self._done >= self._total:
            self._last = now
            rate = self._done / max(now - self._started, 1e-9)
            logging.info(
                "%s %d of %d done by this worker (%s/s)",
                self._label,
                self._done,
                self._total,
                f"{rate:.0f}" if rate >= 10 else f"{rate:.2f}",  # parts: a few a minute
            )


@dataclass
class Elapsed:
    seconds: float = 0.0


@contextmanager
def timed(namespace: str, name: str):
    """Adds the block's wall time to the Beam counter ``<name>_ms``; yields it too.

    Summed over workers, so for a parallel stage it is busy time, not wall
    time; the benchmark reports both.
    """
    elapsed = Elapsed()
    started = time.monotonic()
    try:
        yield elapsed
    finally:
        elapsed.seconds = time.monotonic() - started
        Metrics.counter(namespace, f"{name}_ms").inc(int(elapsed.seconds * 1000))
