"""The manual's option tables and strategy table, printed from the code that defines them.

Paste each into the docs/ page that documents its command; tests/test_options.py checks
that every page still shows them as printed:

    python -m pipelines.cli.tables \
        [generate|train|features|evaluate|regenerate|preview|publish|rate-*|log]
    python -m pipelines.cli.tables [strategies|languages]
"""

import dataclasses
import sys

from pipelines.options import (
    EvaluateOptions,
    FeaturesOptions,
    GenerateOptions,
    LogOptions,
    PreviewOptions,
    PublishOptions,
    RateExportOptions,
    RateFilterOptions,
    RateImportOptions,
    RegenerateOptions,
    TrainOptions,
)
from schemas.options import REQUIRED, shown_default
from transforms.corpus.languages.registry import language_table
from transforms.strategies.registry import strategy_table

TABLES = {
    "generate": GenerateOptions,
    "train": TrainOptions,
    "features": FeaturesOptions,
    "evaluate": EvaluateOptions,
    "regenerate": RegenerateOptions,
    "preview": PreviewOptions,
    "publish": PublishOptions,
    "rate-export": RateExportOptions,
    "rate-import": RateImportOptions,
    "rate-filter": RateFilterOptions,
    "log": LogOptions,
}


def markdown_table(options_type: type = GenerateOptions) -> str:
    """The manual's option tables (docs/): one per group, under its name, as --help groups them.

    A type whose options are all in one group gets one table without a name.
    """
    groups: dict[str, list[str]] = {}
    for option in dataclasses.fields(options_type):
        default = shown_default(option)
        if option.default not in (REQUIRED, "") and option.type is not bool:
            default = f"`{default}`"
        groups.setdefault(option.metadata["group"], []).append(
            f"| `--{option.name}` | {default} | {option.metadata['help']} |"
        )
    tables = {
        title: "\n".join(["| option | default | meaning |", "| --- | --- | --- |", *rows])
        for title, rows in groups.items()
    }
    if len(tables) == 1:
        return next(iter(tables.values()))
    return "\n\n".join(
        f"**{title[0].upper()}{title[1:]}**\n\n{table}" for title, table in tables.items()
    )


# The tables that are not of options: their printers.
LISTS = {"strategies": strategy_table, "languages": language_table}

if __name__ == "__main__":
    table = sys.argv[1] if len(sys.argv) > 1 else "generate"
    print(LISTS[table]() if table in LISTS else markdown_table(TABLES[table]))
