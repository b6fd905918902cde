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


@functools.cache
def _malloc_trim():
    library = ctypes.util.find_library("c")
    trim = getattr(ctypes.CDLL(library), "malloc_trim", None) if library else None
    return trim  # None where the C library is not glibc (macOS, musl): nothing to do


def release_freed_memory() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
    pa.default_memory_pool().release_unused()
