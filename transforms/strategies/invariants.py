"""What a strategy promises about the datasets it makes, checked on a written version.

A strategy lists its checks as callables (``DecoyStrategy.invariants``), each taking
the version read back from its files (:class:`WrittenDataset`); the tests run them
on every dataset they generate, beside the checks every strategy's output passes
(``tests/support/dataset_checks.py``), and the benchmark on its COCO-scale outputs. A check
recomputes what it checks independently: simSURF with nltk's BLEU, neighbourhoods by
brute force with numpy, sharing nothing with the pipeline's kernels.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from schemas.layout import SENTENCE_EMBEDDINGS_FILE, corpus_file, corpus_folder
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
    # imported by the checks alone: nltk (with scipy) would otherwise load with every strategy
    from nltk.translate.bleu_score import brevity_penalty, sentence_bleu

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


def describing(dataset: WrittenDataset, slack: float = 0.0) -> Callable[[int, str], bool]:
    """(corpus row, image id) -> whether the row's caption describes the image by the
    validity model's written vectors (numpy); never without a validity model. ``slack``
    forgives the float32 rounding of the kernels that decided."""
    threshold = dataset.config.rules.encoder_threshold
    if threshold is None:
        return lambda row, image: False
    sentences = np.load(
        corpus_file(corpus_folder(dataset.directory), SENTENCE_EMBEDDINGS_FILE), mmap_mode="r"
    )
    image_rows: dict[str, list[int]] = {}
    for r, caption in enumerate(dataset.corpus):
        image_rows.setdefault(caption["image_id"], []).append(r)

    def describes(row: int, image: str) -> bool:
        own = np.asarray(sentences[image_rows[image]], np.float64)
        return bool((own @ np.asarray(sentences[row], np.float64)).max() >= threshold + slack)

    return describes


def no_decoy_describes_the_image(dataset: WrittenDataset) -> None:
    """With a validity model, no unedited decoy's sentence vector reaches the threshold with
    any caption of the target's image (numpy on the written vectors, every instance), and
    every unedited option carries its caption's original text."""
    originals = {caption["caption_id"]: caption["original"] for caption in dataset.corpus}
    every = [row for rows in dataset.rows.values() for row in rows]
    for row in every:
        for caption_id, edit, original in zip(
            row["option_caption_ids"], row["option_edits"], row["option_originals"], strict=True
        ):
            holds(original == ("" if edit else originals[caption_id]), row["example_id"])
    path = corpus_file(corpus_folder(dataset.directory), SENTENCE_EMBEDDINGS_FILE)
    holds((dataset.config.rules.encoder_threshold is None) != os.path.exists(path), path)
    describes = describing(dataset, slack=1e-6)
    row_of = {caption["caption_id"]: r for r, caption in enumerate(dataset.corpus)}
    for row in every:
        for caption_id, edit in zip(row["decoy_caption_ids"], row["decoy_edits"], strict=True):
            holds(edit or not describes(row_of[caption_id], row["image_id"]), row["example_id"])
