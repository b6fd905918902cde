"""The decoy-strategy interface: how candidates are found, how decoys are chosen, what holds.

A strategy is a PTransform from the corpus (a ``CorpusRef``) to
``{"selections": Selection, "skipped": Skip}`` (``Reserved`` instead of Selection when
``config.reserve``: strategies without a guarantee), plus class attributes that
the options, the docs and the dataset card read, the checks its datasets pass
(``invariants``) and its own options (``Options``: generate's flags, --help, the manual's
table and validation take them in from the registry). A new strategy is one module with
one such class, listed in ``transforms/strategies/registry.py`` (docs/contributing.md
walks through one).
"""

import dataclasses
from typing import ClassVar

import apache_beam as beam
from apache_beam.utils.shared import Shared

from transforms.corpus.neighbours import Finder, FindNeighbourhoods, SharedCorpus
from transforms.strategies.config import StrategyConfig, StrategyOptions
from transforms.strategies.invariants import Invariant

# The limitation every strategy whose decoys are the target's PV neighbours shares.
# (What the validity rules catch of them depends on the run: the card's next limitation.)
NEIGHBOURS_MAY_FIT = (
    "Decoys are close to the target in paragraph-vector space; some may also describe the "
    "target's image (the paper estimates 10-15% unanswerable instances for MC-IC). "
)


class DecoyStrategy(beam.PTransform):
    """CorpusRef -> {"selections": Selection, "skipped": Skip}."""

    @classmethod
    def decoys_per_instance(cls) -> int:
        return cls.num_options - 1

    name: ClassVar[str]
    num_options: ClassVar[int] = 5  # options per instance: the target and num_options - 1 decoys
    summary: ClassVar[str]  # --decoys help and the README's strategy table
    pools: ClassVar[tuple[str, ...]]  # the --decoy_pool values it accepts; the first is its default
    guarantee: ClassVar[str] = ""  # why no text-only model beats chance, if that holds by design
    limitations: ClassVar[str]  # what a user of its datasets must know (the dataset card)
    references: ClassVar[tuple[str, ...]] = ()  # BibTeX of the papers it follows (for the card)
    filterable: ClassVar[bool] = False  # --adversarial_rounds may swap its decoys (5 options only)
    # its instances come in sets that share their options (closed sets): a set score applies
    answered_in_sets: ClassVar[bool] = False
    # What holds beyond the validity rules (which always do): checks of a written version.
    invariants: ClassVar[tuple[Invariant, ...]] = ()
    Options: ClassVar[type[StrategyOptions]] = StrategyOptions  # its own flags (class above)
    # Why it needs English captions, "" when it reads any --language (docs/languages.md);
    # RunOptions.validate refuses another language with this reason.
    english_only: ClassVar[str] = ""

    def __init__(self, config: StrategyConfig):
        super().__init__()
        self.config = config
        self.corpus = SharedCorpus(Shared(), config.decoy_pool, config.index)

    @classmethod
    def needs_english(cls, options: StrategyOptions) -> str:
        """Why, with these options, it needs English captions, or "": its ``english_only``."""
        return cls.english_only

    @classmethod
    def report(cls, directory: str) -> dict:
        """What statistics.json says about this strategy's decoys beyond the common measures,
        read from the written version ``directory``; nothing by default."""
        return {}

    @classmethod
    def searched(cls, config: StrategyConfig) -> int:
        """How many neighbours its queries ask for: what an IVF index sizes its scan by."""
        return config.neighbours

    @classmethod
    def pool(cls, chosen: str) -> str:
        """The pool a run draws from: ``--decoy_pool``, or the strategy's own when empty."""
        return chosen or cls.pools[0]

    @classmethod
    def resolve(cls, config: StrategyConfig) -> StrategyConfig:
        """``config`` with its pool (the strategy's own when none is given) and its index
        sized for the strategy's queries."""
        return dataclasses.replace(
            config,
            decoy_pool=cls.pool(config.decoy_pool),
            index=dataclasses.replace(config.index, neighbours=cls.searched(config)),
        )

    def find_neighbourhoods(self, find: Finder) -> FindNeighbourhoods:
        """The candidate search every strategy starts with; ``find`` says which candidates."""
        return FindNeighbourhoods(
            corpus=self.corpus,
            find=find,
            shard_size=self.config.shard_size,
            batch_size=self.config.batch_size,
        )
