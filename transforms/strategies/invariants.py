"""What a strategy promises about the datasets it makes, checked on a written version.

A strategy lists its checks as callables (``DecoyStrategy.invariants``), each taking
the version read back from its files (:class:`WrittenDataset`); the tests run them
on every dataset they generate, beside the checks every strategy's output passes
(``tests/support/dataset_checks.py``), and the benchmark on its COCO-scale outputs. A check
recomputes what it checks independently: simSURF with nltk's BLEU, neighbourhoods by
brute force with numpy, sharing nothing with the pipeline's kernels.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

from nltk.translate.bleu_score import brevity_penalty, sentence_bleu

from transforms.strategies.config import StrategyConfig


class InvariantBroken(AssertionError):
    """A written dataset breaks what its strategy promises."""


def holds(condition: bool, what: object) -> None:
    """An invariant that does not hold raises, naming ``what`` (an example id, a row)."""
    if not condition:
        raise InvariantBroken(what)


@dataclass(frozen=True)
class WrittenDataset:
    """A generated version read back from its files."""

    directory: str
    strategy: type  # its DecoyStrategy class
    config: StrategyConfig  # resolved: the pool and index it ran with
    corpus: list[dict]  # corpus/captions.parquet, by row
    rows: dict[str, list[dict]]  # each split's Parquet instances
    sample: int  # how many instances the costly checks recompute
    exact_search: bool  # candidates came from an exact index, so brute force must agree


Invariant = Callable[[WrittenDataset], None]


def nltk_sim_surf(candidate: list[str], target: list[str]) -> float:
    """simSURF (SPEC) by nltk's own BLEU: brevity penalty divided out."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bleu = sentence_bleu([target], candidate)
    return bleu / brevity_penalty(len(target), len(candidate))


def image_captions(corpus: list[dict]) -> dict[str, list[str]]:
    captions: dict[str, list[str]] = {}
    for caption in corpus:
        captions.setdefault(caption["image_id"], []).append(caption["text"])
    return captions


def valid_decoy(text: str, own_captions: list[str], surf_limit: float) -> bool:
    """SPEC "Validity", recomputed with nltk: no copy of, or near-copy of, an image caption."""
    return text not in own_captions and all(
        nltk_sim_surf(text.split(), own.split()) < surf_limit for own in own_captions
    )
