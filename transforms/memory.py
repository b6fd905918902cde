"""Freed memory handed back to the system after the one-process steps.

glibc keeps freed blocks below its mmap threshold in the process's heap: a faiss
index's inverted lists (a few hundred KB each), Python's list and string
buffers. So a worker that built the index, and then loads it to search, held it
twice (the CC3M-size run's worker: 10.1 GB after the build, against 6.3 GB for
the worker that only loaded it). ``malloc_trim`` returns the free pages.
"""

import ctypes
import ctypes.util
import functools


@functools.cache
def _malloc_trim():
    library = ctypes.util.find_library("c")
    trim = getattr(ctypes.CDLL(library), "malloc_trim", None) if library else None
    return trim  # None where the C library is not glibc (macOS, musl): nothing to do


def release_freed_memory() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
