"""Does a run share a busy machine well? The same generate alone and beside a busy process.

A laptop that runs ``run_local.sh`` is rarely idle. Numerical libraries start a thread per
core, and when another process takes one of the cores, the threads of each small op wait
at its barrier for the one descheduled: a run then takes far longer than its share of
the cores explains. This runs run_local.sh's generate (the synthetic corpus it writes,
with ``--force``) twice, alone and beside one CPU-bound process, and prints their wall
times and ratio, side by side in one invocation::

    .venv/bin/python -m benchmarks.under_load
    .venv/bin/python -m benchmarks.under_load --num_images 4000 -- --decoys mcic

With one of two cores taken, a run that used both fully would take 2x as long; the
issue's bound is 2.2x.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from pipelines import make_corpus

BUSY = "while True: pass"  # one core's worth of work that never waits


@contextmanager
def busy_process(busy: bool) -> Iterator[None]:
    """A CPU-bound process for the duration, when ``busy``."""
    if not busy:
        yield
        return
    process = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        yield
    finally:
        process.kill()
        process.wait()


def wall_seconds(command: Sequence[str], busy: bool) -> float:
    """``command``'s wall time, beside a busy process or not; a failed command raises."""
    with busy_process(busy):
        started = time.monotonic()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return time.monotonic() - started


def table(alone: float, loaded: float) -> str:
    """
    >>> print(table(100.0, 150.0))
    | run | wall (s) | ratio |
    | --- | ---: | ---: |
    | alone | 100.0 | 1.00 |
    | beside a busy process | 150.0 | 1.50 |
    """
    rows = [("alone", alone), ("beside a busy process", loaded)]
    lines = ["| run | wall (s) | ratio |", "| --- | ---: | ---: |"]
    lines += [f"| {name} | {seconds:.1f} | {seconds / alone:.2f} |" for name, seconds in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_images", type=int, default=4000, help="as run_local.sh's corpus")
    parser.add_argument("generate_args", nargs="*", help="more flags for generate, after --")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        corpus = os.path.join(scratch, "captions.json")
        if make_corpus.main(["--output", corpus, "--num_images", str(args.num_images)]):
            raise SystemExit(f"could not write the corpus {corpus}")
        generate = [sys.executable, "-m", "pipelines.generate", "--input", corpus]
        generate += ["--output", os.path.join(scratch, "out"), "--force", "--quiet"]
        generate += ["--n_dev", str(args.num_images // 8), "--n_test", str(args.num_images // 8)]
        generate += args.generate_args
        alone = wall_seconds(generate, busy=False)
        loaded = wall_seconds(generate, busy=True)
    print(f"generate on {args.num_images} synthetic images, {os.cpu_count()} cores")
    print(table(alone, loaded))
    return 0


if __name__ == "__main__":
    sys.exit(main())
