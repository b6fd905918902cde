"""Leaves an object in a reference cycle, whose finaliser prints when Python's last garbage
collection frees it at exit, after doing what its argument names first (tests/test_shutdown.py)::

    python -m tests.support.exit_probe nothing|cli|load
"""

import atexit
import sys

from pipelines.generate import main
from transforms.progress import timed_load


class Cycle:
    def __init__(self):
        self.itself = self

    def __del__(self):
        print("collected at exit", flush=True)


if __name__ == "__main__":
    # Held until exit: a collection on the way (one of generation 0 every few hundred
    # allocations) would free it and print as if at exit. The handler that lets it go is
    # registered first, so it runs last (last in, first out), after any the step registers.
    alive = [Cycle()]
    atexit.register(alive.clear)
    step = sys.argv[1]
    if step == "cli":
        main(["--no_such_flag"])  # refused in one line: the command's way out still applies
    elif step == "load":
        with timed_load("probe"):
            pass
