"""Progress lines of long stages, ``<stage>: <detail>``, at most one every few seconds per worker.

Which of them reach the user is decided where lines are shown (pipelines/runner.py): all of
them on a terminal, one per stage every ``--progress_interval`` seconds otherwise. A line a
worker process logs reaches that process as text, its logger name gone, so a progress line is
known by the file that logged it (this one) and its stage by the text before its first colon.
"""

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.shutdown import exit_without_collecting

T = TypeVar("T")

WORKER_INTERVAL = 10.0  # seconds between one worker's lines of a stage, before any throttle
STAGE_END = ": "
# libraries whose INFO lines and progress bars would fill a run's log at each model load
NOISY_LOGGERS = ("sentence_transformers", "transformers", "huggingface_hub")
THIS_FILE = os.path.realpath(__file__)


def report(stage: str, detail: str, *args: object) -> None:
    """Logs ``<stage>: <detail % args>`` as a progress line: ``report("audit", "%s epoch %d
    of %d", "Text-FFNN", 3, 20)`` logs "audit: Text-FFNN epoch 3 of 20"."""
    logging.info(f"%s{STAGE_END}{detail}", stage, *args)


def quiet_model_libraries() -> None:
    """No "Loading weights" progress bar nor library INFO lines in a run's log, --quiet's
    included: our progress lines are the ones a user reads. (Imports transformers: call it
    where a model is loaded.)"""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def is_progress_line(pathname: str) -> bool:
    """Whether a record logged from ``pathname`` (its ``pathname``, or a forwarded worker
    record's file) is a progress line: :func:`report` is the only caller of ``logging`` here."""
    return os.path.realpath(pathname) == THIS_FILE


def stage_of(line: str) -> str:
    """ "neighbourhoods: targets 5 of 9 done by this worker (3/s)" -> "neighbourhoods"."""
    return line.partition(STAGE_END)[0]


class Ticker:
    """Says when a worker's next line of a stage is due: every ``interval`` seconds."""

    def __init__(self, interval: float | None = None):
        self.interval = WORKER_INTERVAL if interval is None else interval
        self.started = self._last = time.monotonic()

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._last < self.interval:
            return False
        self._last = now
        return True

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class Progress:
    """Counts work in a Beam counter and reports done/total and rate.

    ``total`` is the whole stage's size; each worker process reports its own
    share, so on several workers the shares add up to the total.
    """

    def __init__(self, namespace: str, name: str, total: int, interval: float | None = None):
        self._counter = Metrics.counter(namespace, name)
        self._stage, self._name = namespace, name
        self._total = total
        self._done = 0
        self._ticker = Ticker(interval)

    def advance(self, count: int) -> None:
        self._counter.inc(count)
        self._done += count
        if self._ticker.due() or self._done >= self._total:
            rate = self._done / max(self._ticker.elapsed(), 1e-9)
            report(
                self._stage,
                "%s %d of %d done by this worker (%s/s)",
                self._name,
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


LOAD = "load"  # the counters' namespace of the workers' loads: how the runner placed work


@contextmanager
def timed_load(what: str):
    """A worker's load of ``what`` (the corpus, a model) for a ``Shared`` handle: counted in
    ``load/<what>`` and timed in ``load/<what>_ms``. Each worker pays it once, or again
    whenever Beam's Shared let the object go; the benchmark gives it a row of its own. A
    worker that loads one has imported the libraries that make exiting slow, so it exits
    without the final garbage collection (transforms.shutdown)."""
    exit_without_collecting()
    Metrics.counter(LOAD, what).inc()
    with timed(LOAD, what) as elapsed:
        yield elapsed


def timed_items(namespace: str, name: str, items: Iterable[T]) -> Iterator[T]:
    """``items``, the time spent making them added to ``<name>_ms`` as :func:`timed` does:
    a generator's own time, not that of the fused stages its items go on to."""
    making = iter(items)
    seconds = 0.0
    try:
        while True:
            started = time.monotonic()
            try:
                item = next(making)
            except StopIteration:
                return
            finally:
                seconds += time.monotonic() - started
            yield item
    finally:
        Metrics.counter(namespace, f"{name}_ms").inc(int(seconds * 1000))


class TimedMap(beam.DoFn):
    """``fn(element, **kwargs)`` for each element, its time added to ``<name>_ms`` as
    :func:`timed` does, once a bundle: a counter per element would cost more than the step."""

    def __init__(self, namespace: str, name: str, fn: Callable[..., Any], **kwargs: Any):
        self._namespace, self._name, self._fn, self._kwargs = namespace, name, fn, kwargs

    def start_bundle(self):
        self._seconds = 0.0

    def process(self, element):
        started = time.monotonic()
        result = self._fn(element, **self._kwargs)
        self._seconds += time.monotonic() - started
        yield result

    def finish_bundle(self):
        Metrics.counter(self._namespace, f"{self._name}_ms").inc(int(self._seconds * 1000))
