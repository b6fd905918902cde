"""A parent that starts a child holding ``MIB`` MiB until it is killed, as generate starts
its workers (tests/test_benchmark.py: a run over its memory budget)::

    python -m tests.support.memory_holder_probe parent MIB
"""

import subprocess
import sys
import time

if __name__ == "__main__":
    role, mib = sys.argv[1:]
    if role == "parent":
        child = [sys.executable, "-m", "tests.support.memory_holder_probe", "child", mib]
        subprocess.run(child, check=False)
    else:
        block = bytearray(int(mib) * 2**20)
        time.sleep(600)
