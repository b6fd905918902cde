"""How many threads a process's numerical libraries start: its share of the cores, chosen.

BLAS (numpy), OpenMP (faiss), numba and PyTorch each start a thread per core unless told
otherwise. Where several processes share the cores (Beam's multi_processing workers, two
test workers) that oversubscribes them, and spinning threads wait on each other: the
text-only audit took 43-168 s on two threads beside another busy process against 14 s on
one. A process is given its share once, before the libraries start their pools; a user's
own ``OMP_NUM_THREADS`` wins.
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager

# Read by each library when its thread pool starts, in this process or in one it starts.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


def cores() -> int:
    """The cores this process may run on (its affinity, which a container narrows)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def share_of_cores(processes: int) -> int:
    """Threads for each of ``processes`` busy processes: at least one, never more in all than
    the cores (beyond that, threads only wait on each other)."""
    return max(1, cores() // max(1, processes))


def chosen_threads(processes: int = 1) -> int:
    """``OMP_NUM_THREADS`` where the user or the test suite set it, else this process's share."""
    given = os.environ.get("OMP_NUM_THREADS", "")
    return int(given) if given.isdigit() and int(given) > 0 else share_of_cores(processes)


@contextmanager
def child_processes_use(threads: int) -> Iterator[None]:
    """Processes started inside (Beam's multi_processing workers, which inherit the
    environment) start ``threads`` per library, unless a variable was set already; this
    process's own setting is restored after."""
    unset = [variable for variable in THREAD_VARIABLES if variable not in os.environ]
    for variable in unset:
        os.environ[variable] = str(threads)
    try:
        yield
    finally:
        for variable in unset:
            os.environ.pop(variable, None)


def limit_torch(threads: int) -> None:
    """PyTorch's intra-op threads in this process, importing it first: every caller is about
    to run it. A limit that waited for the import was lost where the encoder loads PyTorch
    in its first bundle, so a Dataflow worker started a pool per vCPU in each SDK process,
    whose threads spin on the cores the others need (docs/benchmarks.md, 2026-11-29)."""
    import torch  # here: importing it takes seconds, and only these callers run it

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
