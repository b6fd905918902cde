"""The manual's option tables and strategy table, made from the code that defines them.

A page of docs/ names a table by a line ``<!-- table: NAME -->``, which the manual's
build replaces with the table (:func:`on_page_markdown`, mkdocs.yml's ``hooks``), so no
table is pasted and none can go stale. To see one:

    python -m pipelines.cli.tables \
        [generate|train|features|evaluate|regenerate|preview|publish|rate-*|log]
    python -m pipelines.cli.tables [strategies|languages|instance]
"""

import dataclasses
import re
import sys

from pipelines.options import (
    EvaluateOptions,
    FeaturesOptions,
    GenerateOptions,
    LogOptions,
    MakeCorpusOptions,
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
from transforms.report.card import fields_table, markdown_escaped
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
    "make-corpus": MakeCorpusOptions,
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
            f"| `--{option.name}` | {markdown_escaped(default)} | "
            f"{markdown_escaped(option.metadata['help'])} |"
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
LISTS = {"strategies": strategy_table, "languages": language_table, "instance": fields_table}
MARKER = re.compile(r"^<!-- table: ([\w-]+) -->$", flags=re.MULTILINE)


def printed(name: str) -> str:
    """The table called ``name``: an options type's (TABLES) or a registry's (LISTS)."""
    return LISTS[name]() if name in LISTS else markdown_table(TABLES[name])


def with_tables(markdown: str) -> str:
    r"""``markdown`` with each marker line replaced by its table (an unknown name fails).

    >>> with_tables("Strategies:\n<!-- table: strategies -->\n").count("| `closed_sets` |")
    1
    """
    return MARKER.sub(lambda marker: printed(marker.group(1)), markdown)


def on_page_markdown(markdown: str, **_) -> str:
    """mkdocs' hook: each page's tables, made as the manual is built."""
    return with_tables(markdown)


if __name__ == "__main__":
    print(printed(sys.argv[1] if len(sys.argv) > 1 else "generate"))
