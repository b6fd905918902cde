"""A process's exit without Python's last garbage collection.

At exit, CPython collects every object still alive, once more, before the operating system
reclaims the whole process anyway. With PyTorch, transformers and Beam imported (4,000
modules) that collection alone takes 1-2 s. Beam's local runner stops its worker processes
one after another and waits for each, so every worker's collection adds to a run's wall,
and the driver's once more: about 5 s of a 2,000-image run's 50 (benchmarks/scale.py).

Freezing what is alive (``gc.freeze``) at exit leaves it to the operating system. What a
run writes is closed before it exits (``with`` blocks, the runner's own shutdown), so no
buffer waits on that collection; reference counting still frees everything else as the
modules are torn down.
"""

import atexit
import functools
import gc


@functools.cache
def exit_without_collecting() -> None:
    """From now on, this process exits without the final collection. Once per process."""
    atexit.register(gc.freeze)
