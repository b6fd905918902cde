"""The decoy validity rule's threshold, calibrated on Flickr8k's expert judgments.

A decoy is invalid for a target when it describes the target's image. Hodosh et al.
(2013) had three experts score 5,822 (image, caption) pairs from 1 to 4; a pair whose
mean score is at least 3 describes the image, so that caption would be an invalid decoy
for it. Each signal scores a pair by the caption's closeness to the image's own Flickr8k
captions (the judged caption left out when it is one of them): the project's paragraph
vectors (mean and max cosine), and a pretrained sentence encoder (max cosine of the
original texts). The rule rejects a pair when the encoder's cosine reaches the threshold::

    .venv/bin/python -m benchmarks.validity
    .venv/bin/python -m benchmarks.validity --model FOLDER_OR_HUB_ID --pairs 1000

Part 2 (``--runs none,0.5,0.6``) generates the default dataset from the token file once per
threshold (``none``: ``--validity_model none``) and compares the runs side by side: the chosen
decoys the experts judged and the share of those describing the target's image, the decoys
replaced against the ``none`` run, coverage, decoy closeness (mean ``decoy_sim_pv``), the
``describes_the_image`` rejections and the wall time.

A run's decoys meet few judged pairs (6-25 of some 260,000), too few to measure the share
that describe their target's image. So part 2 also estimates it from every chosen decoy:
the experts' judgments of other images' captions give P(describes | encoder cosine), fitted
isotonic (it can only rise with the cosine), and the estimate is its mean over the chosen
decoys' cosines to their target's image, with a bootstrap interval over the judged pairs.
The rule pushes decoys towards the threshold, where that probability is highest, which a
share of the judged pairs alone would not show::

    .venv/bin/python -m benchmarks.validity --runs none,0.5,0.6,0.7 --output /tmp/runs

Data: ``../shared/data/flickr8k/`` beside the checkout (its README); cite Hodosh, Young
and Hockenmaier (2013), JAIR 47, 853-899, with results on it.
"""

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow.parquet as pq
from sklearn.isotonic import IsotonicRegression

from pipelines.options import GenerateOptions
from transforms.corpus.encoders.base import SentenceEncoder
from transforms.corpus.encoders.registry import (
    DEFAULT_FAMILY,
    DEFAULT_MODEL,
    ENCODERS,
    compared_threshold,
    load_encoder,
)
from transforms.corpus.normalize import normalize_caption
from transforms.corpus.paragraph_vectors import PVConfig, train_paragraph_vectors, unit_vectors
from transforms.corpus.sentences import NO_MODEL
from transforms.strategies.validity import DESCRIBES_RULE
from transforms.threads import chosen_threads, cores, limit_torch

# ../shared/data beside the checkout: the real data the benchmarks measure on
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
FLICKR8K = SHARED_DATA / "flickr8k"
CAPTIONS_FILE = "Flickr8k.token.txt"
JUDGMENTS_FILE = "ExpertAnnotations.txt"
DESCRIBES = 3.0  # the experts' mean score from which a caption describes the image
THRESHOLDS = tuple(round(0.50 + 0.05 * k, 2) for k in range(10))  # 0.50 ... 0.95
# the model as published: part 1's default family, and part 2 checks the decoys by it too
FLOAT32 = "sentence_transformers"
KEPT_INVALID_TARGET = 0.05  # the suggested threshold keeps at most this share of invalid ones
ENCODER = "encoder max cosine"
PV_MEAN, PV_MAX = "PV mean cosine", "PV max cosine"


@dataclass(frozen=True)
class ImagePair:
    """An image and a caption: a judged pair, or a chosen decoy and its target's image."""

    image: str  # the image's file name
    caption_id: str  # "<image file>#<k>": a caption of this or another image

    @property
    def own(self) -> bool:
        """The caption is one of the image's own."""
        return self.caption_id.rsplit("#", 1)[0] == self.image


@dataclass(frozen=True)
class JudgedPair(ImagePair):
    scores: tuple[int, ...]  # the three experts' scores, 1-4

    @property
    def describes(self) -> bool:
        """The experts' mean reaches DESCRIBES: the caption is an invalid decoy for the image."""
        return sum(self.scores) >= DESCRIBES * len(self.scores)


def read_captions(folder: Path) -> dict[str, str]:
    """Caption id -> original text, from the Flickr token file."""
    lines = (folder / CAPTIONS_FILE).read_text(encoding="utf-8").splitlines()
    return dict(line.split("\t", 1) for line in lines if line.strip())


def judged_pairs(folder: Path) -> list[JudgedPair]:
    """The experts' judged pairs, in the file's order."""
    lines = (folder / JUDGMENTS_FILE).read_text(encoding="utf-8").splitlines()
    rows = [line.split("\t") for line in lines if line.strip()]
    return [
        JudgedPair(image, caption_id, tuple(int(score) for score in scores))
        for image, caption_id, *scores in rows
    ]


def captions_by_image(captions: dict[str, str]) -> dict[str, list[str]]:
    """Image file -> its caption ids, in the file's order."""
    by_image = defaultdict(list)
    for caption_id in captions:
        by_image[caption_id.rsplit("#", 1)[0]].append(caption_id)
    return dict(by_image)


def image_captions(pair: ImagePair, by_image: dict[str, list[str]]) -> list[str]:
    """The image's captions the pair's caption is compared with: all but itself."""
    return [caption_id for caption_id in by_image[pair.image] if caption_id != pair.caption_id]


def needed_captions(pairs: Sequence[JudgedPair], by_image: dict[str, list[str]]) -> list[str]:
    """Every caption a signal compares, each once, sorted: the order they are encoded in."""
    return sorted(
        {pair.caption_id for pair in pairs}
        | {caption_id for pair in pairs for caption_id in by_image[pair.image]}
    )


def cosine_to_image(
    vectors: np.ndarray,
    rows: dict[str, int],
    pairs: Sequence[ImagePair],
    by_image: dict[str, list[str]],
    reduce: Callable[[np.ndarray], float],
) -> np.ndarray:
    """Each pair's caption against its image's captions (unit vectors), reduced (max, mean)."""
    return np.array(
        [
            reduce(
                vectors[[rows[c] for c in image_captions(pair, by_image)]]
                @ vectors[rows[pair.caption_id]]
            )
            for pair in pairs
        ],
        dtype=np.float64,
    )


def encoder_signal(
    encoder: SentenceEncoder, pairs: Sequence[JudgedPair], captions: dict[str, str]
) -> np.ndarray:
    """Max cosine of each pair's original caption text to its image's captions' texts."""
    by_image = captions_by_image(captions)
    needed = needed_captions(pairs, by_image)
    vectors = encoder.encode([captions[caption_id] for caption_id in needed])
    rows = {caption_id: row for row, caption_id in enumerate(needed)}
    return cosine_to_image(vectors, rows, pairs, by_image, np.max)


def pv_signal(
    pairs: Sequence[JudgedPair], captions: dict[str, str], config: PVConfig
) -> dict[str, np.ndarray]:
    """Mean and max PV cosine of each pair's caption to its image's captions, from paragraph
    vectors trained on every caption, normalised as the pipeline does."""
    ids = sorted(captions)
    model = train_paragraph_vectors([normalize_caption(captions[c]) for c in ids], config)
    vectors, rows = unit_vectors(model), {caption_id: row for row, caption_id in enumerate(ids)}
    by_image = captions_by_image(captions)
    return {
        PV_MEAN: cosine_to_image(vectors, rows, pairs, by_image, np.mean),
        PV_MAX: cosine_to_image(vectors, rows, pairs, by_image, np.max),
    }


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """The probability that a positive outscores a negative, ties counting half: the
    Mann-Whitney U over the ranks, tied scores given their average rank.

    >>> roc_auc(np.array([0.1, 0.4, 0.4, 0.8]), np.array([0, 0, 1, 1]))
    0.875
    """
    positive = np.asarray(labels).astype(bool)
    positives, negatives = int(positive.sum()), int((~positive).sum())
    if not positives or not negatives:
        raise ValueError("the AUC needs positive and negative labels")
    return float(
        (average_ranks(np.asarray(scores))[positive].sum() - positives * (positives + 1) / 2)
        / (positives * negatives)
    )


def average_ranks(scores: np.ndarray) -> np.ndarray:
    """1-based ranks, tied scores sharing their average.

    >>> average_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist()
    [3.5, 1.0, 3.5, 2.0]
    """
    order = np.argsort(scores, kind="stable")
    _, first, counts = np.unique(scores[order], return_index=True, return_counts=True)
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[order] = np.repeat(first + (counts + 1) / 2, counts)
    return ranks


@dataclass(frozen=True)
class ThresholdRow:
    threshold: float
    invalid_kept: float  # share of describing pairs below it: invalid decoys the rule keeps
    valid_rejected: float  # share of the other pairs at or above it: valid decoys lost
    rejected: float  # share of all pairs at or above it

    @property
    def youden(self) -> float:
        """Youden's J: invalid decoys caught minus valid ones lost."""
        return 1.0 - self.invalid_kept - self.valid_rejected


def threshold_row(scores: np.ndarray, describes: np.ndarray, threshold: float) -> ThresholdRow:
    """What rejecting the pairs whose score reaches ``threshold`` does."""
    rejected = scores >= threshold
    return ThresholdRow(
        threshold,
        float(np.mean(~rejected[describes])),
        float(np.mean(rejected[~describes])),
        float(np.mean(rejected)),
    )


def matched_threshold(scores: np.ndarray, share: float) -> float:
    """The threshold that rejects ``share`` of the pairs by ``scores`` (the k-th largest
    score; more when scores tie there); infinite for none.

    >>> matched_threshold(np.array([0.2, 0.9, 0.5, 0.7]), 0.5)
    0.7
    """
    k = round(share * len(scores))
    return float(np.sort(scores)[::-1][k - 1]) if k else float("inf")


def threshold_table(
    encoder: np.ndarray,
    pv: np.ndarray,
    describes: np.ndarray,
    thresholds: Sequence[float] = THRESHOLDS,
    family: str = FLOAT32,
) -> list[tuple[ThresholdRow, ThresholdRow]]:
    """For each encoder threshold, its row and the row of the PV threshold rejecting the same
    share of all pairs: the two signals compared at the same cost. The encoder's cosines are
    compared where the rule compares ``family``'s (``compared_threshold``)."""
    rows = [
        replace(
            threshold_row(encoder, describes, compared_threshold(threshold, family)),
            threshold=threshold,
        )
        for threshold in thresholds
    ]
    return [
        (row, threshold_row(pv, describes, matched_threshold(pv, row.rejected))) for row in rows
    ]


def suggested(rows: Sequence[ThresholdRow]) -> tuple[ThresholdRow, str]:
    """The largest threshold keeping at most KEPT_INVALID_TARGET of the invalid decoys (it
    loses the fewest valid ones), else the one with the largest Youden's J; and why."""
    within = [row for row in rows if row.invalid_kept <= KEPT_INVALID_TARGET]
    if within:
        return max(within, key=lambda row: row.threshold), (
            f"the largest keeping <= {KEPT_INVALID_TARGET:.0%} of invalid decoys"
        )
    return max(rows, key=lambda row: row.youden), (
        f"none keeps <= {KEPT_INVALID_TARGET:.0%} of invalid decoys: the largest Youden's J"
    )


def machine() -> str:
    """The platform, CPU model and cores: what the timings were measured on."""
    cpuinfo = Path("/proc/cpuinfo")
    models = [
        line.split(":", 1)[1].strip()
        for line in (cpuinfo.read_text().splitlines() if cpuinfo.exists() else [])
        if line.startswith("model name")
    ]
    cpu = models[0] if models else platform.processor() or "unknown CPU"
    return f"{platform.platform()}, {cpu}, {cores()} cores available of {os.cpu_count()}"


def percent(share: float) -> str:
    return f"{share:.1%}"


def auc_table(signals: dict[str, np.ndarray], pairs: Sequence[JudgedPair]) -> list[str]:
    describes = np.array([pair.describes for pair in pairs])
    other = np.array([not pair.own for pair in pairs])
    lines = [
        "| signal | ROC AUC | ROC AUC, other images' captions only |",
        "| --- | --- | --- |",
    ]
    for name, scores in signals.items():
        whole, others = roc_auc(scores, describes), roc_auc(scores[other], describes[other])
        lines.append(f"| {name} | {whole:.3f} | {others:.3f} |")
    return lines


def threshold_lines(table: list[tuple[ThresholdRow, ThresholdRow]]) -> list[str]:
    lines = [
        "| threshold | invalid kept | valid rejected | all rejected | Youden's J "
        "| PV max threshold | PV invalid kept | PV valid rejected | PV all rejected |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for encoder, pv in table:
        lines.append(
            f"| {encoder.threshold:.2f} | {percent(encoder.invalid_kept)} "
            f"| {percent(encoder.valid_rejected)} | {percent(encoder.rejected)} "
            f"| {encoder.youden:.3f} | {pv.threshold:.3f} | {percent(pv.invalid_kept)} "
            f"| {percent(pv.valid_rejected)} | {percent(pv.rejected)} |"
        )
    return lines


def subsample(pairs: list[JudgedPair], size: int, seed: int) -> list[JudgedPair]:
    """``size`` pairs drawn with ``seed``, in the file's order; all of them for 0."""
    if not size or size >= len(pairs):
        return pairs
    rows = np.sort(np.random.default_rng(seed).choice(len(pairs), size, replace=False))
    return [pairs[row] for row in rows]


def measure(
    folder: Path,
    model: str,
    size: int,
    seed: int,
    config: PVConfig,
    thresholds: Sequence[float] = THRESHOLDS,
    family: str = DEFAULT_FAMILY,
) -> str:
    captions = read_captions(folder)
    pairs = subsample(judged_pairs(folder), size, seed)
    describes = np.array([pair.describes for pair in pairs])
    encoder = load_encoder(model, family)
    limit_torch(chosen_threads())
    encoded = len(needed_captions(pairs, captions_by_image(captions)))
    started = time.perf_counter()
    signals = {ENCODER: encoder_signal(encoder, pairs, captions)}
    seconds = time.perf_counter() - started
    signals.update(pv_signal(pairs, captions, config))
    pv_seconds = time.perf_counter() - started - seconds
    table = threshold_table(signals[ENCODER], signals[PV_MAX], describes, thresholds, family)
    best, why = suggested([encoder for encoder, _ in table])
    return "\n".join(
        [
            f"# Decoy validity on Flickr8k expert judgments ({datetime.date.today()})",
            "",
            f"Machine: {machine()}; torch threads: {chosen_threads()}.",
            f"Encoder: {model}, {family} (sha256 {encoder.identity.sha256[:12]}, "
            f"dim {encoder.dim}); "
            f"PV: dim {config.dim}, {config.epochs} epochs, trained on {len(captions):,} "
            "captions.",
            f"{len(pairs):,} judged pairs, {int(describes.sum()):,} describing the image "
            f"(experts' mean >= {DESCRIBES:g}); {sum(pair.own for pair in pairs):,} are the "
            "image's own caption.",
            "",
            *auc_table(signals, pairs),
            "",
            "Rejecting a pair whose encoder cosine reaches the threshold (its angle widened "
            f"by the family's margin, {ENCODERS[family].margin:g} rad, as the rule compares "
            "it); PV max cosine at the threshold rejecting the same share of all pairs. "
            f"Invalid: experts' mean >= {DESCRIBES:g}; valid: the others.",
            "",
            *threshold_lines(table),
            "",
            f"Suggested threshold: {best.threshold:.2f} ({why}): keeps "
            f"{percent(best.invalid_kept)} of invalid decoys, rejects "
            f"{percent(best.valid_rejected)} of valid ones.",
            f"Encoding: {encoded:,} captions in {seconds:.1f}s, {encoded / seconds:,.0f} "
            f"captions/s; PV training and cosines: {pv_seconds:.1f}s.",
        ]
    )


# Part 2: the rule in the pipeline, run by run.

RUN_FIELDS = ("example_id", "split", "image_id", "decoy_caption_ids", "decoy_sim_pv")
CLOSENESS_FALL_TARGET = 0.07  # mean decoy closeness may fall at most this much against none
COVERAGE_TARGET = 0.95  # every split keeps at least this coverage share


BOOTSTRAP = 200  # refits on resampled judged pairs, for the estimate's interval
SELECTION_BANDS = 40  # bands of cosine (0.05 wide) in which the judged pairs' share is taken
INTERVAL = 0.95
# P(describes | cosine) is printed for the judged pairs in these bands of the encoder's cosine
BANDS = (-1.0, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 1.0)


class Estimate(NamedTuple):
    """The estimated share of chosen decoys that describe their target's image, and the
    bootstrap interval around it."""

    share: float
    low: float
    high: float


@dataclass(frozen=True)
class Calibration:
    """P(describes the image | encoder max cosine), isotonic on judged pairs, and its refits
    on ``BOOTSTRAP`` resamples of them."""

    fit: IsotonicRegression
    resampled: tuple[IsotonicRegression, ...]

    def estimate(self, cosines: np.ndarray, weights: np.ndarray | None = None) -> Estimate:
        """The mean probability over ``cosines`` (one per chosen decoy; weighted by
        ``weights`` if given), with the ``INTERVAL`` quantiles of the refits' means."""
        if not len(cosines):
            return Estimate(float("nan"), float("nan"), float("nan"))
        shares = [
            float(np.average(fit.predict(cosines), weights=weights)) for fit in self.resampled
        ]
        low, high = np.quantile(shares, [(1 - INTERVAL) / 2, (1 + INTERVAL) / 2])
        share = float(np.average(self.fit.predict(cosines), weights=weights))
        return Estimate(share, float(low), float(high))


def isotonic(scores: np.ndarray, describes: np.ndarray) -> IsotonicRegression:
    return IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(
        scores, describes.astype(np.float64)
    )


def calibrated(
    scores: np.ndarray, describes: np.ndarray, resamples: int = BOOTSTRAP, seed: int = 0
) -> Calibration:
    """The fit on every pair, and on ``resamples`` draws of as many pairs with replacement."""
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(scores), len(scores)) for _ in range(resamples)]
    return Calibration(
        isotonic(scores, describes),
        tuple(isotonic(scores[draw], describes[draw]) for draw in draws),
    )


@dataclass(frozen=True)
class CaptionSpace:
    """Every Flickr8k caption's encoder vector (unit rows), and where each caption and
    each image's captions are in it."""

    vectors: np.ndarray
    rows: dict[str, int]
    by_image: dict[str, list[str]]

    def of(self, caption_ids: Sequence[str]) -> np.ndarray:
        return self.vectors[[self.rows[caption_id] for caption_id in caption_ids]]


def caption_space(encoder: SentenceEncoder, captions: dict[str, str]) -> CaptionSpace:
    ids = sorted(captions)
    vectors = encoder.encode([captions[caption_id] for caption_id in ids]).astype(np.float64)
    return CaptionSpace(
        vectors,
        {caption_id: row for row, caption_id in enumerate(ids)},
        captions_by_image(captions),
    )


@dataclass(frozen=True)
class JudgedSelection:
    """How likely a pair of a judged image and another image's caption was to be judged,
    by its encoder cosine (band ``k``: ``edges[k]`` to ``edges[k + 1]``). The judged pairs
    were drawn from retrieval systems' best answers, so close pairs were judged far more
    often than far ones, and a share of judged decoys weighs decoys by this."""

    edges: np.ndarray
    likelihood: np.ndarray

    def weights(self, cosines: np.ndarray) -> np.ndarray:
        band = np.clip(
            np.searchsorted(self.edges, cosines, side="right") - 1, 0, len(self.likelihood) - 1
        )
        return self.likelihood[band]


def judged_selection(
    scores: np.ndarray, images: Sequence[str], space: CaptionSpace, bands: int = SELECTION_BANDS
) -> JudgedSelection:
    """Judged pairs per band of cosine over all pairs of a judged image and another
    image's caption per band; ``scores``: the judged pairs' cosines."""
    rows = np.arange(len(space.vectors))
    everything = []
    for image in sorted(set(images)):
        own = space.of(space.by_image[image])
        others = np.setdiff1d(rows, [space.rows[c] for c in space.by_image[image]])
        everything.append((space.vectors[others] @ own.T).max(axis=1))
    edges = np.linspace(-1.0, 1.0, bands + 1)
    judged, _ = np.histogram(scores, edges)
    every, _ = np.histogram(np.concatenate(everything), edges)
    return JudgedSelection(edges, judged / np.maximum(every, 1))


def decoy_cosines(instances: Sequence[dict], space: CaptionSpace) -> np.ndarray:
    """Each distinct chosen (target image, decoy caption) pair's max cosine to the image's
    captions: what the rule compares with its threshold. Sorted by pair."""
    chosen = [ImagePair(*pair) for pair in sorted(chosen_pairs(instances))]
    return cosine_to_image(space.vectors, space.rows, chosen, space.by_image, np.max)


def judged_calibration(
    pairs: Sequence[JudgedPair], space: CaptionSpace
) -> tuple[Calibration, JudgedSelection, list[str]]:
    """The calibration on the judged pairs of other images' captions (a decoy is never its
    image's own caption), how they were selected, and the lines that show both band by
    band."""
    others = [pair for pair in pairs if not pair.own]
    scores = cosine_to_image(space.vectors, space.rows, others, space.by_image, np.max)
    describes = np.array([pair.describes for pair in others])
    lines = [
        f"P(describes | encoder cosine), from the {len(others):,} judged pairs of other "
        "images' captions:",
        "",
        "| encoder cosine | judged pairs | describing | judged per 10,000 pairs |",
        "| --- | --- | --- | --- |",
    ]
    selection = judged_selection(scores, [pair.image for pair in others], space)
    for low, high in pairwise(BANDS):
        band = (scores >= low) & (scores < high) if high < BANDS[-1] else scores >= low
        shown = percent(float(describes[band].mean())) if band.any() else "-"
        middle = selection.weights(np.array([(max(low, 0.0) + high) / 2]))[0]
        lines.append(
            f"| {max(low, 0.0):.2f}-{high:.2f} | {int(band.sum()):,} | {shown} "
            f"| {middle * 1e4:.1f} |"
        )
    return calibrated(scores, describes), selection, lines


@dataclass(frozen=True)
class RunResult:
    threshold: float | None  # None: --validity_model none
    instances: list[dict]  # RUN_FIELDS of every instance written
    coverage: dict[str, float]  # split -> coverage share
    describes_rejected: int  # the validity/describes_the_image counter
    seconds: float
    # the share of its decoys describing the target's image: of them all, and as judged
    estimated: Estimate | None = None
    as_judged: Estimate | None = None
    # decoys whose float32 cosine reaches the threshold (None: no rule), and the largest
    float32: tuple[int | None, float] | None = None

    @property
    def label(self) -> str:
        return run_label(self.threshold)


def run_label(threshold: float | None) -> str:
    return NO_MODEL if threshold is None else f"{threshold:.2f}"


def parse_runs(text: str) -> list[float | None]:
    """``none,0.5,0.6`` -> [None, 0.5, 0.6]: a threshold per run, None for no validity model.

    >>> parse_runs("none, 0.5,0.60")
    [None, 0.5, 0.6]
    """
    return [None if v.strip() == NO_MODEL else float(v) for v in text.split(",") if v.strip()]


def read_instances(version_directory: str) -> list[dict]:
    """RUN_FIELDS of every instance in the version's Parquet files, split by split."""
    files = sorted(Path(version_directory, "dataset", "parquet").glob("*/*.parquet"))
    return [
        row for path in files for row in pq.read_table(path, columns=list(RUN_FIELDS)).to_pylist()
    ]


def generate_run(
    corpus: Path,
    output: Path,
    threshold: float | None,
    model: str = DEFAULT_MODEL,
    family: str = DEFAULT_FAMILY,
) -> RunResult:
    """The default dataset from ``corpus`` with the rule at ``threshold``, timed."""
    from pipelines.generate import run  # Beam and the pipeline: only part 2 needs them

    directory = output / run_label(threshold)
    options = GenerateOptions(
        input=str(corpus),
        output=str(directory),
        validity_model=NO_MODEL if threshold is None else model,
        validity_encoder=family,
        **({} if threshold is None else {"validity_threshold": threshold}),
    )
    started = time.perf_counter()
    generated = run(options)
    seconds = time.perf_counter() - started
    statistics = generated.statistics
    return RunResult(
        threshold,
        read_instances(generated.version.directory),
        {split: s["coverage"]["share"] for split, s in statistics["splits"].items()},
        int(statistics["validity"].get(f"validity/{DESCRIBES_RULE}", 0)),
        seconds,
    )


def chosen_pairs(instances: Sequence[dict]) -> set[tuple[str, str]]:
    """The distinct (target image, decoy caption id) pairs the instances chose."""
    return {(row["image_id"], decoy) for row in instances for decoy in row["decoy_caption_ids"]}


def judged_decoys(instances: Sequence[dict], pairs: Sequence[JudgedPair]) -> tuple[int, int]:
    """How many distinct chosen (target image, decoy caption) pairs the experts judged, and
    how many of those they judged to describe the image."""
    judged = {(pair.image, pair.caption_id): pair.describes for pair in pairs}
    hits = [judged[pair] for pair in chosen_pairs(instances) if pair in judged]
    return len(hits), sum(hits)


def replaced_share(baseline: Sequence[dict], instances: Sequence[dict]) -> float:
    """Per decoy: the share of the baseline's decoys that the instance with the same
    example_id does not have (all of them when no instance has it)."""
    decoys = {row["example_id"]: set(row["decoy_caption_ids"]) for row in instances}
    total = sum(len(row["decoy_caption_ids"]) for row in baseline)
    replaced = sum(
        decoy not in decoys.get(row["example_id"], ())
        for row in baseline
        for decoy in row["decoy_caption_ids"]
    )
    return replaced / total if total else 0.0


def mean_closeness(instances: Sequence[dict]) -> float:
    """The mean decoy_sim_pv over every decoy (edited ones, NaN, left out)."""
    values = np.array(
        [value for row in instances for value in row["decoy_sim_pv"] if value is not None],
        dtype=np.float64,
    )
    return float(np.nanmean(values)) if values.size else float("nan")


@dataclass(frozen=True)
class RunRow:
    label: str
    threshold: float | None
    judged: int
    judged_describing: int
    replaced: float
    min_coverage: float
    instances: int
    closeness: float
    closeness_ratio: float
    describes_rejected: int
    seconds: float
    estimated: Estimate | None
    as_judged: Estimate | None
    float32: tuple[int | None, float] | None

    @property
    def describing_share(self) -> float:
        return self.judged_describing / self.judged if self.judged else float("nan")

    @property
    def meets_targets(self) -> bool:
        """The whole interval of the estimate as judged within the validity target (the issue
        counts judged decoys, and a run meets too few to decide), closeness and coverage
        within theirs."""
        return (
            self.as_judged is not None
            and self.as_judged.high <= KEPT_INVALID_TARGET
            and self.closeness_ratio >= 1.0 - CLOSENESS_FALL_TARGET
            and self.min_coverage >= COVERAGE_TARGET
        )


def run_rows(results: Sequence[RunResult], pairs: Sequence[JudgedPair]) -> list[RunRow]:
    """Each run against the ``none`` run (the first run when there is none)."""
    baseline = next((r for r in results if r.threshold is None), results[0])
    base_closeness = mean_closeness(baseline.instances)
    rows = []
    for result in results:
        judged, describing = judged_decoys(result.instances, pairs)
        closeness = mean_closeness(result.instances)
        rows.append(
            RunRow(
                result.label,
                result.threshold,
                judged,
                describing,
                replaced_share(baseline.instances, result.instances),
                min(result.coverage.values()),
                len(result.instances),
                closeness,
                closeness / base_closeness,
                result.describes_rejected,
                result.seconds,
                result.estimated,
                result.as_judged,
                result.float32,
            )
        )
    return rows


def float32_cell(float32: tuple[int | None, float] | None) -> str:
    if float32 is None or float32[0] is None:
        return "-"
    return f"{float32[0]:,} ({float32[1]:.3f})"


def estimate_cell(estimate: Estimate | None) -> str:
    if estimate is None:
        return "-"
    return f"{percent(estimate.share)} ({percent(estimate.low)}-{percent(estimate.high)})"


def run_lines(rows: Sequence[RunRow], baseline: str) -> list[str]:
    lines = [
        "| threshold | decoys judged | judged describing | estimated describing, all decoys "
        f"({INTERVAL:.0%}) | as judged | decoys replaced vs {baseline} | min coverage "
        f"| instances | mean decoy simPV | vs {baseline} | describes_the_image "
        "| float32 cosine reaching it (max) | wall time |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row.label} | {row.judged:,} | {row.judged_describing:,} "
            f"({percent(row.describing_share)}) | {estimate_cell(row.estimated)} "
            f"| {estimate_cell(row.as_judged)} "
            f"| {percent(row.replaced)} "
            f"| {percent(row.min_coverage)} | {row.instances:,} | {row.closeness:.4f} "
            f"| {row.closeness_ratio:.3f} | {row.describes_rejected:,} "
            f"| {float32_cell(row.float32)} | {row.seconds:.0f}s |"
        )
    return lines


def chosen_run(rows: Sequence[RunRow]) -> str:
    """The largest threshold meeting every target, or which targets each misses."""
    within = [row for row in rows if row.threshold is not None and row.meets_targets]
    if within:
        best = max(within, key=lambda row: row.threshold)
        return (
            f"Chosen threshold: {best.label} (the largest with <= "
            f"{KEPT_INVALID_TARGET:.0%} of judged decoys estimated to describe the image, "
            f"the interval's upper end, mean closeness "
            f"down <= {CLOSENESS_FALL_TARGET:.0%} and coverage >= {COVERAGE_TARGET:.0%})."
        )
    return (
        f"No threshold meets every target (<= {KEPT_INVALID_TARGET:.0%} estimated describing, "
        f"closeness down <= {CLOSENESS_FALL_TARGET:.0%}, coverage >= {COVERAGE_TARGET:.0%})."
    )


def compare_runs(
    folder: Path, output: Path, thresholds: Sequence[float | None], model: str, family: str
) -> str:
    pairs = judged_pairs(folder)
    encoder = load_encoder(model, family)
    limit_torch(chosen_threads())
    captions = read_captions(folder)
    space = caption_space(encoder, captions)
    reference = (
        space if family == FLOAT32 else caption_space(load_encoder(model, FLOAT32), captions)
    )
    calibration, selection, calibration_lines = judged_calibration(pairs, space)
    results = []
    for threshold in thresholds:
        result = generate_run(folder / CAPTIONS_FILE, output, threshold, model, family)
        cosines = decoy_cosines(result.instances, space)
        estimated = calibration.estimate(cosines)
        as_judged = calibration.estimate(cosines, selection.weights(cosines))
        float32 = decoy_cosines(result.instances, reference)
        reached = None if threshold is None else int((float32 >= threshold).sum())
        results.append(
            replace(
                result,
                estimated=estimated,
                as_judged=as_judged,
                float32=(reached, float(float32.max(initial=-1.0))),
            )
        )
        line = run_lines(run_rows(results, pairs)[-1:], run_label(results[0].threshold))[-1]
        print(line, file=sys.stderr, flush=True)  # kept should a later run not finish
    results.sort(key=lambda result: (result.threshold is not None, result.threshold or 0.0))
    rows = run_rows(results, pairs)
    baseline = next((r.label for r in results if r.threshold is None), results[0].label)
    return "\n".join(
        [
            f"# The validity rule in the pipeline on Flickr8k ({datetime.date.today()})",
            "",
            f"Machine: {machine()}. Default options (closed sets), input {CAPTIONS_FILE}, "
            f"model {model} ({family}); versions under {output}.",
            "Decoys judged: distinct (target image, decoy caption) pairs chosen that the "
            f"experts judged; describing: their mean >= {DESCRIBES:g}. Decoys replaced: per "
            f"decoy, the {baseline} run's decoys missing from the instance with the same "
            "example_id (all of them when it has none). Min coverage: the smallest split's.",
            "Estimated describing: the mean over every distinct chosen (target image, decoy) "
            "pair of P(describes | the decoy's max encoder cosine to the image's captions), "
            f"fitted isotonic on the judgments; in brackets, the {INTERVAL:.0%} interval of "
            f"{BOOTSTRAP} refits on resampled judgments. As judged: the same, each decoy "
            "weighed by how often a pair at its cosine was judged (the experts judged "
            "retrieval systems' best answers, mostly close pairs), which estimates the share "
            "of judged decoys describing the image. Float32 cosine reaching it: the chosen "
            f"pairs whose cosine by the model in float32 ({FLOAT32}) reaches the threshold, "
            "and the largest such cosine.",
            "",
            *calibration_lines,
            "",
            *run_lines(rows, baseline),
            "",
            chosen_run(rows),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="the sentence encoder")
    parser.add_argument(
        "--encoder", default=DEFAULT_FAMILY, choices=tuple(ENCODERS), help="the model's family"
    )
    parser.add_argument("--flickr8k", type=Path, default=FLICKR8K, help="the data's folder")
    parser.add_argument("--pairs", type=int, default=0, help="a sample of this many; 0 = all")
    parser.add_argument("--seed", type=int, default=0, help="the sample's and PV's seed")
    parser.add_argument(
        "--thresholds",
        type=lambda text: [float(value) for value in text.split(",")],
        default=THRESHOLDS,
        help="comma-separated encoder thresholds (default 0.50,0.55,...,0.95)",
    )
    defaults = GenerateOptions(input="", output="")
    parser.add_argument("--pv_dim", type=int, default=defaults.pv_dim)
    parser.add_argument("--pv_epochs", type=int, default=defaults.pv_epochs)
    parser.add_argument(
        "--runs",
        type=parse_runs,
        default=None,
        help="part 2: comma-separated thresholds to generate the dataset with (none = no "
        "validity model), e.g. none,0.5,0.6",
    )
    parser.add_argument(
        "--output", type=Path, default=None, help="part 2's versions (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    options = GenerateOptions(
        input="", output="", seed=args.seed, pv_dim=args.pv_dim, pv_epochs=args.pv_epochs
    )
    config = options.pv_config()
    print(
        measure(
            args.flickr8k, args.model, args.pairs, args.seed, config, args.thresholds, args.encoder
        )
    )
    if args.runs:
        print()
        if args.output is None:
            with tempfile.TemporaryDirectory() as temporary:
                runs = compare_runs(
                    args.flickr8k, Path(temporary), args.runs, args.model, args.encoder
                )
        else:
            runs = compare_runs(args.flickr8k, args.output, args.runs, args.model, args.encoder)
        print(runs)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
