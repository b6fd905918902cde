"""Why the local runner flushes its data streams by size only (pipelines/runner.py)."""

import threading

from apache_beam.runners.portability.fn_api_runner import worker_handlers
from apache_beam.runners.worker.data_plane import (
    ClosableOutputStream,
    SizeBasedBufferingClosableOutputStream,
    TimeBasedBufferingClosableOutputStream,
)

from pipelines.runner import local_or_given_runner

HOUR_MS = 3_600_000  # the timer never fires in the test: the flush is called by hand


def test_a_timed_flush_drops_what_is_written_while_it_sends():
    """Beam's timed flush, raced by hand: the write made during its send never arrives.
    Should Beam fix this, the test fails, and ``flush_by_size_only`` may go."""
    sent: list[bytes] = []
    sending, written = threading.Event(), threading.Event()

    def send(data: bytes) -> None:
        sending.set()
        assert written.wait(30)
        sent.append(data)

    stream = TimeBasedBufferingClosableOutputStream(
        close_callback=sent.append, flush_callback=send, time_flush_threshold_ms=HOUR_MS
    )
    stream.write(b"first;")
    flusher = threading.Thread(target=stream.flush)
    flusher.start()
    assert sending.wait(30)
    stream.write(b"second;")  # as a stage's next element, while the timer's flush sends
    written.set()
    flusher.join()
    stream.close()
    assert b"".join(sent) == b"first;"


def test_the_local_runner_streams_flush_by_size_only(monkeypatch):
    monkeypatch.setattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS", 1000)  # Beam's default
    local_or_given_runner([])
    limit = worker_handlers.DATA_BUFFER_TIME_LIMIT_MS
    stream = ClosableOutputStream.create(None, None, limit)
    assert type(stream) is SizeBasedBufferingClosableOutputStream
