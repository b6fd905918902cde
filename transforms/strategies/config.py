"""What a strategy reads: the run's settings (``StrategyConfig``) and its own options.

In a module of their own, below both the strategies (``base.py``) and their invariants
(``invariants.py``), which each read them: neither imports the other for them.
"""

from collections.abc import Callable
from dataclasses import dataclass

from transforms.corpus.index import IndexConfig
from transforms.files import unfenced
from transforms.strategies.validity import ValidityRules


@dataclass(frozen=True)
class StrategyOptions:
    """A strategy's own options: none unless it declares a subclass as its ``Options``.

    Fields are made with ``schemas.options.option`` (group ``Group.DECOYS``), so --help and
    the manual say what the CLI's other options say; their names must be new among
    generate's flags. generate refuses them set away from their defaults for a strategy
    that does not read them, and ``problems`` says which values are wrong.
    """

    def problems(self) -> list[str]:
        return []


@dataclass(frozen=True)
class StrategyConfig:
    """What a strategy may read; meanings and defaults live in ``GenerateOptions`` and, for
    its own options, in its ``Options``."""

    neighbours: int
    score_lambda: float
    seed: int
    decoy_pool: str  # resolved: one of the strategy's pools
    rules: ValidityRules
    index: IndexConfig
    shard_size: int
    batch_size: int
    options: StrategyOptions  # the strategy's own, an instance of its ``Options``
    adversarial_rounds: int  # > 0: emit Reserved (Selection + reserve) for AdversarialFilter
    adversarial_reserve: int  # further valid candidates kept per target when rounds > 0
    # what a strategy's writers into the version check first (its claim, when held)
    fence: Callable[[], None] = unfenced

    @property
    def reserve(self) -> int:
        """Candidates a strategy keeps beyond the decoys: only adversarial filtering uses them."""
        return self.adversarial_reserve if self.adversarial_rounds else 0
