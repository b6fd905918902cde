"""What every option is made of: a dataclass field with its help and group, REQUIRED.

The fields carry everything said about an option (help, choices, group, what an empty
default means), so ``--help`` (pipelines/cli/parser.py), the manual's tables
(pipelines/cli/tables.py) and the run manifest read them from one place. Commands declare
their options in pipelines/options/ and each decoy strategy its own beside it
(``DecoyStrategy.Options``), which is why this lives below both.
"""

import dataclasses
from dataclasses import field
from typing import Any

REQUIRED = dataclasses.MISSING


class Group:
    """The option groups of ``--help`` and of the manual's option tables.

    Every option names one (``option(..., group=Group.X)``), so a new option
    cannot land outside a group, and a misspelt group is an AttributeError.
    """

    IO = "input and output"
    SPLITS = "splits and seed"
    DECOYS = "decoys"
    PV = "paragraph vectors (PV-DBOW)"
    SEARCH = "search (OPTIMIZE-PV, OPTIMIZE-SCORE)"
    INDEX = "nearest-neighbour index"
    PERFORMANCE = "performance"
    AUDIT = "audit"
    FEATURES = "features"
    TRAINING = "training"
    MODELS = "models"
    REGENERATE = "regenerate"
    HUB = "hub"
    SAMPLE = "sample"
    RATING = "rating job"
    CHECKS = "checks"
    FILTER = "filter"
    LOGGING = "logging"


def option(
    default: Any,
    help: str,
    choices: tuple[str, ...] | None = None,
    *,
    group: str,
    empty_means: str = "none",
) -> Any:
    """``empty_means``: what an empty-string default does, in a word or two for --help."""
    metadata = {"help": help, "choices": choices, "group": group, "empty_means": empty_means}
    if default is REQUIRED:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


def shown_default(flag: dataclasses.Field) -> str:
    """An option's default as --help and the manual say it: never an empty string."""
    if flag.default is REQUIRED:
        return "required"
    if flag.type is bool:
        return "on" if flag.default else "off"
    if flag.default == "":
        return flag.metadata["empty_means"]
    return str(flag.default)


def below(options: Any, minimum: int, names: tuple[str, ...]) -> list[str]:
    """The problems of the options ``names`` of ``options`` that are below ``minimum``."""
    return [f"--{name} must be >= {minimum}" for name in names if getattr(options, name) < minimum]
