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
    CORPUS = "corpus"
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
    renamed_from: tuple[str, ...] = (),
    renamed_values: dict[str, str] | None = None,
) -> Any:
    """``empty_means``: what an empty-string default does, in a word or two for --help.

    ``renamed_from``: the option's earlier names, and ``renamed_values`` its choices' earlier
    spellings (old -> new): still taken, with a warning, for one release, so a scheduled
    command line keeps working while its owner renames; a manifest written under an old
    name reads as the new one (:func:`renamed_options`).
    """
    metadata = {
        "help": help,
        "choices": choices,
        "group": group,
        "empty_means": empty_means,
        "renamed_from": renamed_from,
        "renamed_values": renamed_values or {},
    }
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


def renamed_options(options_type: type, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (name -> value, as a manifest records them) under today's names and
    spellings: a version written before a rename reads as if written after it.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Options:
    ...     library: str = option("torchvision", "", group=Group.MODELS,
    ...                           renamed_from=("encoder",), renamed_values={"hf": "transformers"})
    >>> renamed_options(Options, {"encoder": "hf", "seed": 0})
    {'library': 'transformers', 'seed': 0}
    """
    new_names = {
        old: known.name
        for known in dataclasses.fields(options_type)
        for old in known.metadata.get("renamed_from", ())
    }
    renamed = {new_names.get(name, name): value for name, value in values.items()}
    for known in dataclasses.fields(options_type):
        spellings = known.metadata.get("renamed_values", {})
        if known.name in renamed and renamed[known.name] in spellings:
            renamed[known.name] = spellings[renamed[known.name]]
    return renamed


def below(options: Any, minimum: int, names: tuple[str, ...]) -> list[str]:
    """The problems of the options ``names`` of ``options`` that are below ``minimum``."""
    return [f"--{name} must be >= {minimum}" for name in names if getattr(options, name) < minimum]
