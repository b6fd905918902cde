"""regenerate's own options; the rest of its flags are generate's (and Beam's).

Each command's options have a module of their own; what they all share is in schemas/options.py.
"""

from dataclasses import dataclass

from schemas.options import Group, option


@dataclass(frozen=True)
class RegenerateOptions:
    """pipelines.regenerate's own flags; the rest are generate's (and Beam's)."""

    train: bool = option(
        False,
        "then train and evaluate (pipelines.train defaults: concept features) into "
        "OUTPUT/versions/<version>/evaluation, unless that version has been evaluated already",
        group=Group.REGENERATE,
    )
