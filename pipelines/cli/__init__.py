"""The command line every entry point shares: the parser and Command (parser.py), every
dmc-* command and its console script (commands.py) and the manual's option tables
(tables.py), all derived from pipelines/options/.

Imports point one way: pipelines.cli reads pipelines.options, never the reverse.
"""

from pipelines.cli.parser import (
    Command,
    StrictParser,
    flags_parser,
    known_flags,
    parse_flags,
    parse_options,
    refuse_unknown,
    wrapped,
)

__all__ = [
    "Command",
    "StrictParser",
    "flags_parser",
    "known_flags",
    "parse_flags",
    "parse_options",
    "refuse_unknown",
    "wrapped",
]
