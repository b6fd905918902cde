"""LogOptions: the flags every entry point takes besides its own.

Each command's options have a module of their own; what they all share is in schemas/options.py.
"""

from dataclasses import dataclass

from schemas.options import Group, option
from transforms.errors import InputError


@dataclass(frozen=True)
class LogOptions:
    """Where log lines go, for every entry point; errors are one line on stderr regardless."""

    verbose: bool = option(
        False,
        "every log line (Beam's own and tracebacks too) on stderr; without it, our progress "
        "lines and warnings only",
        group=Group.LOGGING,
    )
    quiet: bool = option(
        False,
        "nothing on stderr but errors (a cron job that mails its output)",
        group=Group.LOGGING,
    )
    progress_interval: float = option(
        60.0,
        "seconds between two progress lines of a stage when stderr is not a terminal (a "
        "scheduler's log); on a terminal every line is shown",
        group=Group.LOGGING,
    )
    log_file: str = option("", "append log lines to this local file", group=Group.LOGGING)

    def validate(self) -> None:
        problems = ["--verbose and --quiet contradict each other"] * (self.verbose and self.quiet)
        problems += ["--progress_interval must be >= 0"] * (self.progress_interval < 0)
        if problems:
            raise InputError("; ".join(problems))
