"""What a process holds: values packed for a shuffle, and freed memory handed back.

Beam's local runners decode a shuffle's values into Python objects while they group
them (``GroupingBuffer.append``), all of them at once in the runner's own process. An
instance dict held so takes 3.6 KB, pickled 1.0 KB (5,000 instances of the 124k-image
run); a synthetic caption 0.4 KB against 0.2 KB. So records that cross a shuffle whole
cross it as bytes: :func:`packed` before, :func:`unpacked` after; the bulkiest go
through files instead (``spill.py``).

After the one-process steps, glibc keeps freed blocks below its mmap threshold in the
process's heap: a faiss index's inverted lists (a few hundred KB each), Python's list
and string buffers. So a worker that built the index, and then loads it to search, held
it twice (the CC3M-size run's worker: 10.1 GB after the build, against 6.3 GB for the
worker that only loaded it). ``malloc_trim`` returns the free pages. Arrow's allocator
keeps its own: what reading the caption table decoded into, 180 MB of each worker's
corpus load at 600k captions (measured), until its pool is told to release them.

The other way round, a stage that allocates and frees the same few MB per batch (the
sentence encoder's activations) must not hand them back each time: glibc then returns
the heap's free top past its trim threshold, and maps blocks past its mmap threshold
afresh, so every batch faults its pages in again. The encoder's process spent 16-35% of
its time in the kernel so, against 4% with :func:`hold_freed_heap`, and two of them side
by side encoded 1.6-1.9x the captions a second (docs/benchmarks.md, 2026-12-02).
"""

import ctypes
import ctypes.util
import functools
import pickle
from typing import Any

import pyarrow as pa


def packed(record: Any) -> bytes:
    return pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)


def unpacked(data: bytes) -> Any:
    return pickle.loads(data)


# glibc's mallopt parameters (malloc.h), and what hold_freed_heap sets them to: blocks
# below 32 MiB (glibc's most for the mmap threshold on 64 bits) come from the heap, and up
# to 128 MiB of its free top stays mapped. malloc_trim still hands all of it back.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
HELD_HEAP = {M_MMAP_THRESHOLD: 32 * 2**20, M_TRIM_THRESHOLD: 128 * 2**20}


@functools.cache
def _glibc(function: str):
    library = ctypes.util.find_library("c")
    found = getattr(ctypes.CDLL(library), function, None) if library else None
    return found  # None where the C library is not glibc (macOS, musl): nothing to do


def release_freed_memory() -> None:
    trim = _glibc("malloc_trim")
    if trim is not None:
        trim(0)
    pa.default_memory_pool().release_unused()


def hold_freed_heap() -> bool:
    """This process keeps the heap its batches free for the next ones (``HELD_HEAP``), for
    the rest of its life; False where the C library has no ``mallopt``."""
    mallopt = _glibc("mallopt")
    return mallopt is not None and all(
        mallopt(parameter, value) == 1 for parameter, value in HELD_HEAP.items()
    )
