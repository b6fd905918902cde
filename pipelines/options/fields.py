"""What the commands' own options share beyond schemas/options.py: --dataset and lists."""

from typing import Any

from schemas.options import REQUIRED, Group, option


def dataset_option() -> Any:
    """``--dataset`` of every reader of a generated dataset (a new field each: dataclasses
    name the field they are given)."""
    return option(
        REQUIRED,
        "generate's --output (its latest version is read) or one completed "
        "OUTPUT/versions/<version>",
        group=Group.IO,
    )


def ints(values: str) -> list[int]:
    """ "64,256" -> [64, 256]: a comma-separated option; anything else is a ValueError."""
    return [int(value) for value in values.split(",")]
