"""Page faults of a loop that allocates and frees the same blocks, as an encoder's batches
do, in a fresh process: glibc's defaults, or after ``memory.hold_freed_heap``
(tests/test_memory.py)::

    python -m tests.support.heap_faults_probe default|held
"""

import resource
import sys

import numpy as np

from transforms.memory import hold_freed_heap

BLOCKS, BLOCK_BYTES, TURNS = 4, 8 * 2**20, 20  # 32 MiB a turn, past glibc's own thresholds

if __name__ == "__main__":
    held = sys.argv[1] == "held" and hold_freed_heap()
    np.ones(BLOCK_BYTES, np.uint8)  # a first turn: glibc's thresholds follow what it frees
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(TURNS):
        blocks = [np.ones(BLOCK_BYTES, np.uint8) for _ in range(BLOCKS)]
        del blocks
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    print(held, faults)
