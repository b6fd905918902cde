"""Prints what ``--help`` of every given console script imported of what it must not: the
modules that run the commands, PyTorch, gensim, nltk, scikit-learn and transformers.

Run in a fresh interpreter (tests/test_cli.py), since a test process has them all loaded::

    python -m tests.support.help_imports dmc-generate=pipelines.cli.commands:generate ...

An argument ``NAME=VALUE[,SUBCOMMAND]`` is a console script as setup.py declares it, with
the subcommand (dmc-rate's) to ask for help.
"""

import contextlib
import importlib.metadata
import io
import sys

from pipelines.cli.commands import COMMANDS

HEAVY = {"torch", "gensim", "nltk", "sklearn", "transformers"}


def main(scripts: list[str]) -> None:
    for script in scripts:
        name, _, rest = script.partition("=")
        value, *subcommand = rest.split(",")
        entry = importlib.metadata.EntryPoint(name, value, "console_scripts")
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            entry.load()([*subcommand, "--help"])
    print(sorted(set(sys.modules) & (HEAVY | {command.module for command in COMMANDS})))


if __name__ == "__main__":
    main(sys.argv[1:])
