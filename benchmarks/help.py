"""How long a user waits for ``--help``: each console script, beside what it cannot avoid.

A dmc-* script answers --help from its options alone (pipelines/cli/commands.py), before
the module that runs the command is imported, and the options import neither PyTorch nor
gensim nor nltk (tests/test_cli.py checks that). They do import Beam, whose own import is
the floor here. This times, in fresh processes and in turns so that a machine's drift
reaches every row alike, each installed script's ``--help``, the same through
``python -m pipelines.<module> --help``, ``python -c "import apache_beam"`` and a bare
``python -c pass``::

    .venv/bin/python -m benchmarks.help
    .venv/bin/python -m benchmarks.help --repeats 9 --commands dmc-generate,dmc-train
"""

import argparse
import datetime
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.validity import machine
from pipelines.cli.commands import COMMANDS


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(repeats: int, chosen: list[str]) -> str:
    scripts = {
        command.prog: command.module
        for command in COMMANDS
        if command.prog in (chosen or [command.prog])
        and " " not in command.prog  # dmc-rate's subcommands share its script
    }
    bin_folder = Path(sys.executable).parent
    runs = {
        "python alone": [sys.executable, "-c", "pass"],
        "import apache_beam": [sys.executable, "-c", "import apache_beam"],
    }
    for prog, module in scripts.items():
        runs[prog] = [str(bin_folder / prog), "--help"]
        runs[module] = [sys.executable, "-m", module, "--help"]
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, argv in runs.items():
            seconds[name].append(wall(argv))
    median = {name: statistics.median(times) for name, times in seconds.items()}
    beam = median["import apache_beam"]
    rows = [
        f"{datetime.date.today()}, {machine()}; median of {repeats} turns, each a fresh process",
        "",
        "| command | `--help` (s) | `python -m` ... `--help` (s) | `--help` over Beam's import |",
        "| --- | --- | --- | --- |",
    ]
    for prog, module in scripts.items():
        helped = median[prog]
        rows.append(f"| {prog} | {helped:.2f} | {median[module]:.2f} | {helped / beam:.2f}x |")
    rows.append(f"\nBeam's import: {beam:.2f} s; python alone: {median['python alone']:.2f} s")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="turns; each row's median counts")
    parser.add_argument(
        "--commands",
        type=lambda text: text.split(","),
        default=[],
        help="the scripts to time, comma-separated (default: all)",
    )
    args = parser.parse_args(argv)
    print(measure(args.repeats, args.commands))
    return 0


if __name__ == "__main__":
    sys.exit(main())
