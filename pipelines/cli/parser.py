"""The flags of every entry point: argparse parsers built from the options dataclasses.

A Command says what --help tells users besides the options; parse_flags turns argv into
options and Beam pipeline options, refusing any flag that is neither (with the closest one).
"""

import argparse
import dataclasses
import difflib
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser

from pipelines.options import GenerateOptions
from schemas.options import REQUIRED, shown_default
from transforms.errors import InputError


class StrictParser(argparse.ArgumentParser):
    """No abbreviations, and a bad flag value is an InputError (one line), not a usage dump."""

    def __init__(self, **kwargs):
        super().__init__(allow_abbrev=False, **kwargs)

    def error(self, message: str):
        raise InputError(message)


MAX_HELP_WIDTH = 100  # a wide terminal does not make help lines longer than one reads at once
LONG_CHOICES = 40  # a {a,b,...} metavar longer than this is named instead, its choices in the help


def help_width() -> int:
    """argparse's width (the terminal's columns less 2), at most :data:`MAX_HELP_WIDTH`."""
    return min(max(shutil.get_terminal_size().columns - 2, 11), MAX_HELP_WIDTH)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's layout at :func:`help_width`."""

    def __init__(self, prog: str, **kwargs):
        super().__init__(prog, **{"width": help_width(), **kwargs})


def wrapped(text: str) -> str:
    """``text`` line by line filled to :func:`help_width`, for :class:`HelpFormatter`:
    paragraphs fit, an indented example command line stays as written (argparse's own
    filling would run it into the text)."""
    return "\n".join(
        line if line.startswith(" ") else textwrap.fill(line, help_width())
        for line in text.splitlines()
    )


BEAM_OPTIONS = (
    "Any other flag is passed to Apache Beam as a pipeline option, e.g. --runner "
    "DataflowRunner --project PROJECT --region REGION --temp_location gs://BUCKET/tmp "
    "--setup_file ./setup.py to run on Dataflow, or --direct_num_workers 2 "
    "--direct_running_mode multi_processing to use two cores locally. A flag that is "
    "neither one of the options above nor Beam's is refused with the closest known flag, "
    "e.g. unknown flag --sead (did you mean --seed?)."
)
NO_OTHER_OPTIONS = (
    "No other flag is taken: an unknown one is refused with the closest known flag, "
    "e.g. unknown flag --sead (did you mean --seed?)."
)


@dataclass(frozen=True)
class Command:
    """An entry point: what ``--help`` says about it, its options and the module that runs it.

    ``prog`` is the entry point's console script in setup.py: the help names the
    command users install and type, also when it runs as ``python -m pipelines.<module>``.
    """

    prog: str
    module: str  # pipelines.<name>, whose main(argv) runs the command
    options: tuple[type, ...]  # the options types its flags parse into, in order
    description: str  # one paragraph for users (the module docstring is for developers)
    example: str  # a short command line
    manual: str  # the docs/ page that documents it and its options
    beam: bool = True  # other flags are Beam pipeline options

    def parser(self, usage: str | None = None) -> StrictParser:
        return StrictParser(
            prog=self.prog,
            usage=usage,
            description=wrapped(f"{self.description}\n\nexample:\n  {self.example}"),
            epilog=wrapped(
                f"{BEAM_OPTIONS if self.beam else NO_OTHER_OPTIONS} The manual documents "
                f"it all: {self.manual}."
            ),
            formatter_class=HelpFormatter,
        )


def shown_choices(name: str, choices: tuple[str, ...] | None) -> tuple[str | None, str]:
    """(metavar, what the help adds) for an option's choices: ``{a,b}`` in the usage, or when
    that is longer than :data:`LONG_CHOICES` (argparse cannot wrap a metavar) the option's
    name, its choices listed in the help, which wraps. An empty choice (the default) is not
    one to type: ``{all,split}``, not ``{,all,split}``.

    >>> shown_choices("pool", ("", "all", "split"))
    ('{all,split}', '')
    """
    if not choices:
        return None, ""
    typed = [choice for choice in choices if choice]
    metavar = "{" + ",".join(typed) + "}"
    if len(metavar) <= LONG_CHOICES:
        return metavar, ""
    return name.upper(), f"; one of: {', '.join(typed)}"


def warn_renamed(old: str, new: str) -> None:
    """One line on stderr for a name kept for one release: the command still runs."""
    print(
        f"warning: {old} is renamed {new}; the old name goes in the next release", file=sys.stderr
    )


class Renamed:
    """An option's value type that takes its choices' earlier spellings (``renamed_values``)."""

    def __init__(self, flag: str, type: Callable[[str], Any], spellings: dict[str, str]):
        self.flag, self.type, self.spellings = flag, type, spellings
        self.__name__ = getattr(type, "__name__", "value")  # argparse names it in errors

    def __call__(self, value: str) -> Any:
        if value in self.spellings:
            warn_renamed(f"{self.flag} {value}", f"{self.flag} {self.spellings[value]}")
            value = self.spellings[value]
        return self.type(value)


class RenamedFlag(argparse.Action):
    """An option's earlier name: sets the option, with a warning, and is not in --help."""

    def __call__(self, parser, namespace, values, option_string=None):
        warn_renamed(option_string, f"--{self.dest}")
        setattr(namespace, self.dest, values)


def add_arguments(parser: argparse.ArgumentParser, *options_types: type) -> None:
    """Each option under its group's heading, which options of several types may share.

    A renamed option's earlier names are hidden flags of the same destination; argparse
    cannot then require the option itself, so :func:`missing_required` does.
    """
    groups: dict[str, Any] = {}
    for options_type in options_types:
        for option in dataclasses.fields(options_type):
            title = option.metadata["group"]
            if title not in groups:
                groups[title] = parser.add_argument_group(title)
            required, choices = option.default is REQUIRED, option.metadata["choices"]
            metavar, listed = shown_choices(option.name, choices)
            help = (
                option.metadata["help"]
                + listed
                + (" (required)" if required else f" (default: {shown_default(option)})")
            )
            flag, old_flags = f"--{option.name}", option.metadata["renamed_from"]
            if option.type is bool:
                groups[title].add_argument(flag, action="store_true", help=help)
                for old in old_flags:
                    groups[title].add_argument(
                        f"--{old}",
                        dest=option.name,
                        action=RenamedFlag,
                        nargs=0,
                        const=True,
                        help=argparse.SUPPRESS,
                    )
                continue
            value_type = option.type
            if option.metadata["renamed_values"]:
                value_type = Renamed(flag, option.type, option.metadata["renamed_values"])
            value = {"type": value_type, "choices": choices, "metavar": metavar}
            groups[title].add_argument(
                flag,
                required=required and not old_flags,
                default=None if required else option.default,
                help=help,
                **value,
            )
            for old in old_flags:
                groups[title].add_argument(
                    f"--{old}",
                    dest=option.name,
                    action=RenamedFlag,
                    help=argparse.SUPPRESS,
                    **value,
                )


def missing_required(values: dict[str, Any], *options_types: type) -> None:
    """argparse's own message for required options it could not require (renamed ones)."""
    missing = [
        f"--{option.name}"
        for options_type in options_types
        for option in dataclasses.fields(options_type)
        if option.default is REQUIRED and values[option.name] is None
    ]
    if missing:
        raise InputError(f"the following arguments are required: {', '.join(missing)}")


def known_flags(parser: argparse.ArgumentParser) -> list[str]:
    """Every flag ``parser`` shows in --help, -h and --help included: what a typo is
    matched against (a renamed option's earlier name is taken, never suggested)."""
    # private: argparse has no public listing of a parser's flags
    return [
        flag
        for flag, action in parser._option_string_actions.items()
        if action.help is not argparse.SUPPRESS
    ]


def beam_parser() -> argparse.ArgumentParser:
    """Every Beam pipeline option, as PipelineOptions itself collects them."""
    # private: Beam's one public route to this parser, get_all_options(add_extra_args_fn=...),
    # needs a PipelineOptions, whose constructor calls logging.basicConfig() before --verbose
    parser = _BeamArgumentParser(allow_abbrev=False)
    for options_class in {str(c): c for c in PipelineOptions.__subclasses__()}.values():
        options_class._add_argparse_args(parser)
    return parser


def closest(word: str, known: Iterable[str], otherwise: str = "") -> str:
    """`` (did you mean X?)`` when one of ``known`` is close to ``word``, else ``otherwise``
    or the list of them.

    >>> closest("sead", ["seed", "label"]), closest("val", ["train", "dev", "test"])
    (' (did you mean seed?)', ' (one of: train, dev, test)')
    """
    known = list(known)
    close = difflib.get_close_matches(word, known, n=1)
    if close:
        return f" (did you mean {close[0]}?)"
    return otherwise or f" (one of: {', '.join(known)})"


def refuse_unknown(unknown: list[str], known: Iterable[str]) -> None:
    """An unknown flag (or stray value) is an InputError with the closest known flag.

    >>> refuse_unknown(["--sead", "7"], ["--seed", "--label"])
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: unknown flag --sead (did you mean --seed?)
    """
    if not unknown:
        return
    word = unknown[0]
    if not word.startswith("-"):
        raise InputError(f"unexpected argument {word!r}: every value follows its --flag")
    flag = word.split("=", 1)[0]
    raise InputError(f"unknown flag {flag}{closest(flag, known, ' (--help lists the flags)')}")


def flags_parser(command: Command | None, *options_types: type) -> StrictParser:
    """The parser of ``options_types``' flags; with ``command``, its --help for users.

    The usage line names the required flags only: listing all forty would hide them; it
    wraps at the help's width.
    """
    if command is None:
        parser = StrictParser()
    else:
        parts = [
            f"--{option.name} {option.name.upper()}"
            for options_type in options_types
            for option in dataclasses.fields(options_type)
            if option.default is REQUIRED
        ]
        parts += ["[option ...]", *(["[Beam pipeline option ...]"] if command.beam else [])]
        lines = textwrap.wrap(  # a part is never split: its spaces are NUL while wrapping
            " ".join([command.prog, *(part.replace(" ", "\0") for part in parts)]),
            MAX_HELP_WIDTH - len("usage: "),
            break_long_words=False,
            break_on_hyphens=False,
        )
        usage = "\n       ".join(lines).replace("\0", " ").replace(command.prog, "%(prog)s", 1)
        parser = command.parser(usage)
    add_arguments(parser, *options_types)
    return parser


def parse_flags(
    argv: list[str] | None, *options_types: type, command: Command | None = None
) -> tuple[list[Any], list[str]]:
    """Our flags -> one instance per type (by default ``command``'s options); the rest must
    be Beam pipeline options.

    A flag that is neither ours nor Beam's is refused (Beam alone would only log a warning
    and run with the default), and so is a Beam flag for a ``command`` that runs no pipeline.
    """
    if not options_types and command is not None:
        options_types = command.options
    parser = flags_parser(command, *options_types)
    known, beam_args = parser.parse_known_args(argv)
    if command is None or command.beam:
        beam = beam_parser()
        _, unknown = beam.parse_known_args(beam_args)
        refuse_unknown(unknown, [*known_flags(parser), *known_flags(beam)])
    elif beam_args:
        flag = beam_args[0].split("=", 1)[0]
        if flag in known_flags(beam_parser()):
            raise InputError(
                f"unknown flag {flag}: {command.prog} runs no Beam pipeline, so it takes no "
                "pipeline options"
            )
        refuse_unknown(beam_args, known_flags(parser))  # suggesting its own flags only
    values = vars(known)
    missing_required(values, *options_types)
    parsed = [
        options_type(**{f.name: values[f.name] for f in dataclasses.fields(options_type)})
        for options_type in options_types
    ]
    return parsed, beam_args


def parse_options(
    argv: list[str] | None, options_type: type = GenerateOptions
) -> tuple[Any, list[str]]:
    """Our flags -> ``options_type``; the rest, all Beam pipeline options, for PipelineOptions."""
    [options], beam_args = parse_flags(argv, options_type)
    return options, beam_args
