"""Runs a probe module of ``tests.support`` in a fresh interpreter, for what only a new
process shows: an instruction-set cap read when PyTorch loads, a thread limit set before
PyTorch is imported, what Python's last collection does at exit."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_probe(
    module: str, *args: str, env: dict[str, str] | None = None, check: bool = True
) -> str:
    """``python -m tests.support.<module> <args>`` from the repository's root: its stdout.
    ``env`` replaces the environment (None: this process's); ``check`` fails on a non-zero
    exit."""
    return subprocess.run(
        [sys.executable, "-m", f"tests.support.{module}", *args],
        capture_output=True,
        text=True,
        check=check,
        env=env,
        cwd=REPO,
    ).stdout
