"""``--decoys same_length``: random decoys of about the target's length in words.

The worked example of docs/contributing.md: a whole strategy, with its own option, its
invariant and its citation, in one module. Random decoys (``--decoys random``) differ
from the target in length, which a text-only model can use; drawing them among
captions whose length is within ``--length_slack`` words of the target's takes that
cue away. tests/test_strategy_options.py registers it and generates a dataset with it.
"""

import functools
from dataclasses import dataclass

import numpy as np

from schemas.options import Group, below, option
from transforms.corpus.neighbours import Finder, Pool, pool_similarities
from transforms.corpus.store import Corpus
from transforms.seeds import keyed_rng
from transforms.strategies.choose import ChoosingStrategy
from transforms.strategies.config import StrategyOptions
from transforms.strategies.invariants import WrittenDataset, holds
from transforms.strategies.random_decoys import YU2015, draw_others, in_drawn_order

DRAWN = 64  # captions drawn per target, of which those of about its length are candidates
KEPT = 16  # candidates per target: four valid ones among them on any real corpus


@dataclass(frozen=True)
class SameLengthOptions(StrategyOptions):
    length_slack: int = option(
        1, "a decoy's length in words differs from the target's by at most this", group=Group.DECOYS
    )

    def problems(self) -> list[str]:
        return below(self, 0, ("length_slack",))


def words(corpus: Corpus, row: int) -> int:
    return len(corpus.captions["text"][row].split())


def draw_same_length(
    corpus: Corpus, pool: Pool, targets: np.ndarray, slack: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """A ``Finder``: up to KEPT captions of other images, drawn uniformly from the pool among
    those within ``slack`` words of the target's length, in drawing order."""
    candidates = np.full((len(targets), KEPT), -1, dtype=np.int64)
    for b, target in enumerate(targets.tolist()):
        rng = keyed_rng(seed, f"same-length decoys of {corpus.captions['caption_id'][target]}")
        drawn = draw_others(corpus, pool, target, DRAWN, rng)
        near = [row for row in drawn if abs(words(corpus, row) - words(corpus, target)) <= slack]
        candidates[b, : len(near[:KEPT])] = near[:KEPT]
    return candidates, pool_similarities(pool, targets, candidates)


def lengths_within_slack(dataset: WrittenDataset) -> None:
    """Every decoy is within --length_slack words of its target."""
    text = {caption["caption_id"]: caption["text"] for caption in dataset.corpus}
    slack = dataset.config.options.length_slack
    for row in (row for rows in dataset.rows.values() for row in rows):
        length = len(text[row["target_caption_id"]].split())
        for decoy in row["decoy_caption_ids"]:
            holds(abs(len(text[decoy].split()) - length) <= slack, row["example_id"])


class SameLength(ChoosingStrategy):
    name = "same_length"
    summary = "drawn at random among other images' captions of about the target's length"
    pools = ("split", "all")
    limitations = (
        "Random decoys are mostly about other things than the image, so image models find the "
        "target easily; only their length is matched."
    )
    references = (YU2015,)
    invariants = (lengths_within_slack,)
    Options = SameLengthOptions
    too_few = "decoys/too_few_of_the_targets_length"

    prefer = staticmethod(in_drawn_order)

    def finder(self) -> Finder:
        own = self.config.options
        return functools.partial(draw_same_length, slack=own.length_slack, seed=self.config.seed)
