"""LogOptions: the flags every entry point takes besides its own.

Each command's options have a module of their own; what they all share is in schemas/options.py.
"""

from dataclasses import dataclass

from schemas.options import Group, option


@dataclass(frozen=True)
class LogOptions:
    """Where log lines go, for every entry point; errors are one line on stderr regardless."""

    verbose: bool = option(
        False,
        "every log line (Beam's own and tracebacks too) on stderr; without it, progress and "
        "warnings only when stderr is a terminal",
        group=Group.LOGGING,
    )
    log_file: str = option("", "append log lines to this local file", group=Group.LOGGING)
