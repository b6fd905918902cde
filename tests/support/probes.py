"""Runs a probe module of ``tests.support`` in a fresh interpreter, for what only a new
process shows: an instruction-set cap read when PyTorch loads, a thread limit set before
PyTorch is imported, what Python's last collection does at exit, what a command imports."""

import subprocess
import sys

from tests.support import REPO


def run_probe(
    module: str, *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``python -m tests.support.<module> <args>`` from the repository's root, its output
    captured as text. ``env`` replaces the environment (None: this process's); ``check``
    fails on a non-zero exit."""
    return subprocess.run(
        [sys.executable, "-m", f"tests.support.{module}", *args],
        capture_output=True,
        text=True,
        check=check,
        env=env,
        cwd=REPO,
    )
