"""OPTIMIZE-PV and OPTIMIZE-SCORE, the first two lines of Algorithm 1.

mgs-rank (SPEC "Hyper-parameter search"): over an evaluation set of captions,
for each caption ``c`` of an image with at least two captions and each other
caption ``c''`` of that image, the rank of ``c''`` among all other captions of
the set by cosine to ``c`` (1 = best); averaged over all such pairs. Low
means the embedding puts captions of one image next to each other, which is
what makes PV neighbours plausible decoys.

wmgs-rank: for each caption ``c``, its top-N cosine neighbours in the set
(same-image captions included, ``c`` excluded) are re-ranked by
Score(lambda), and the ranks of ``c``'s same-image captions in that list are
averaged, one that is absent counting as N + 1.

Ranks count strictly better candidates (``1 + #better``); Score ties keep
the cosine order.
"""

import logging
from dataclasses import dataclass, replace

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from schemas.records import Caption
from transforms.corpus.paragraph_vectors import (
    CORPUS_DIGEST,
    PVConfig,
    corpus_digest,
    load_model,
    save_model,
    train_paragraph_vectors,
    unit_vectors,
)
from transforms.corpus.split import image_key
from transforms.corpus.store import sorted_captions
from transforms.corpus.surface import NgramTable, encode_ngrams, sim_surf_batch
from transforms.errors import InputError
from transforms.progress import timed
from transforms.strategies.scoring import score

CHUNK = 512  # evaluation rows per similarity block: 512 x 25k float32 = 50 MB


def same_image_partners(image_of: np.ndarray) -> np.ndarray:
    """(rows, m) matrix of the other rows of each row's image, -1 padded."""
    order = np.argsort(image_of, kind="stable")
    sorted_images = image_of[order]
    starts = np.flatnonzero(np.r_[True, sorted_images[1:] != sorted_images[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    partners = np.full((len(image_of), max(int(sizes.max()) - 1, 1)), -1, dtype=np.int64)
    for start, size in zip(starts, sizes, strict=True):
        members = order[start : start + size]
        for k, row in enumerate(members):
            others = np.delete(members, k)
            partners[row, : len(others)] = others
    return partners


def mgs_rank(vectors: np.ndarray, image_of: np.ndarray) -> tuple[float, int]:
    """(mean rank, number of (c, c'') pairs) over unit ``vectors``.

    >>> vectors = np.eye(3, dtype=np.float32)[[0, 0, 1, 2]]  # rows 0, 1 identical
    >>> mgs_rank(vectors, np.array([0, 0, 1, 1]))  # pairs (0,1), (1,0): rank 1; (2,3), (3,2): 1
    (1.0, 4)
    """
    partners = same_image_partners(image_of)
    total, pairs = 0.0, 0
    for first in range(0, len(vectors), CHUNK):
        rows = np.arange(first, min(first + CHUNK, len(vectors)))
        sims = vectors[rows] @ vectors.T
        sims[np.arange(len(rows)), rows] = -np.inf  # c itself is not a candidate
        own = partners[rows]
        valid = own >= 0
        partner_sims = np.take_along_axis(sims, np.maximum(own, 0), axis=1)
        better = (sims[:, :, None] > partner_sims[:, None, :]).sum(axis=1)
        total += float((better + 1)[valid].sum())
        pairs += int(valid.sum())
    return (total / pairs if pairs else float("nan")), pairs


def rerank_positions(scores: np.ndarray) -> np.ndarray:
    """1-based position of each candidate after a stable sort by Score, descending."""
    order = np.argsort(-scores, axis=1, kind="stable")
    positions = np.empty_like(order)
    np.put_along_axis(positions, order, np.arange(1, scores.shape[1] + 1)[None, :], axis=1)
    return positions


def wmgs_ranks(
    candidates: np.ndarray, positions: np.ndarray, partners: np.ndarray, neighbours: int
) -> np.ndarray:
    """Ranks of each row's same-image captions in its re-ranked list (N + 1 if absent).

    The paper's example: same-image captions at positions 4, 10, 16 and 22
    average 13.

    >>> candidates = np.array([[7, 8, 9, 5, 6]])
    >>> positions = np.array([[3, 1, 2, 5, 4]])
    >>> wmgs_ranks(candidates, positions, np.array([[8, 6, 42]]), neighbours=5).tolist()
    [1, 4, 6]
    """
    match = candidates[:, None, :] == partners[:, :, None]  # (rows, m, N)
    found = match.any(axis=2)
    rank = np.where(found, (positions[:, None, :] * match).sum(axis=2), neighbours + 1)
    return rank[partners >= 0]


def neighbourhoods_within(vectors: np.ndarray, neighbours: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-N rows by cosine for every row, itself excluded (exact, chunked)."""
    count = min(neighbours, len(vectors) - 1)
    candidates = np.empty((len(vectors), count), dtype=np.int64)
    sims_out = np.empty((len(vectors), count), dtype=np.float64)
    for first in range(0, len(vectors), CHUNK):
        rows = np.arange(first, min(first + CHUNK, len(vectors)))
        sims = vectors[rows] @ vectors.T
        sims[np.arange(len(rows)), rows] = -np.inf
        top = np.argpartition(-sims, count - 1, axis=1)[:, :count]
        top_sims = np.take_along_axis(sims, top, axis=1)
        order = np.lexsort((top, -top_sims), axis=1)
        candidates[rows] = np.take_along_axis(top, order, axis=1)
        sims_out[rows] = np.take_along_axis(top_sims, order, axis=1)
    return candidates, sims_out


def wmgs_rank_grid(
    vectors: np.ndarray,
    image_of: np.ndarray,
    ngrams: NgramTable,
    lambdas: list[float],
    *,
    neighbours: int,
    limit: float,
) -> dict[float, float]:
    """wmgs-rank for every lambda: neighbourhoods and simSURF are computed once."""
    candidates, sim_pv = neighbourhoods_within(vectors, neighbours)
    sim_surf = sim_surf_batch(ngrams, np.arange(len(vectors)), candidates, ngrams.scratch())
    partners = same_image_partners(image_of)
    results = {}
    for lam in lambdas:
        positions = rerank_positions(score(sim_pv, sim_surf, lam, limit))
        ranks = wmgs_ranks(candidates, positions, partners, neighbours)
        results[lam] = float(ranks.mean()) if len(ranks) else float("nan")
    return results


@dataclass(frozen=True)
class SearchCorpus:
    """The captions the search trains on, and which of them it evaluates on."""

    documents: list[list[str]]  # caption-id order, as the generator trains
    image_of: np.ndarray  # dense image index per row
    evaluation: np.ndarray  # rows of the evaluation set
    full: bool  # every caption of the corpus, so the winner can be reused as is
    digest: str  # corpus_digest of the captions: stamped on every model, checked on reuse


def search_corpus(
    captions: list[Caption], *, split: str, sample_images: int, seed: int
) -> SearchCorpus:
    """Sorted like the generator's corpus; optionally only the images with the
    smallest split keys (dev first, then test, then train)."""
    ordered = sorted_captions(captions)
    images = sorted({c.image_id for c in ordered}, key=lambda i: image_key(seed, i))
    full = sample_images == 0 or sample_images >= len(images)
    if not full:
        kept = set(images[:sample_images])
        ordered = [c for c in ordered if c.image_id in kept]
    _, image_of = np.unique([c.image_id for c in ordered], return_inverse=True)
    evaluation = np.flatnonzero([c.split == split for c in ordered])
    if len(evaluation) < 2:
        raise InputError(
            f"the {split} split has {len(evaluation)} captions in the searched images: "
            "raise --search_sample_images or choose another --search_split"
        )
    documents = [c.text.split() for c in ordered]
    digest = corpus_digest([c.caption_id for c in ordered], documents)
    return SearchCorpus(documents, image_of, evaluation, full, digest)


def score_pv_point(
    point: tuple[int, int], corpus: SearchCorpus, *, pv: PVConfig, models: str
) -> dict:
    """OPTIMIZE-PV for one (dim, epochs): train on the corpus, mgs-rank on the evaluation set."""
    dim, epochs = point
    with timed("search", "optimize_pv") as elapsed:
        model = train_paragraph_vectors(corpus.documents, replace(pv, dim=dim, epochs=epochs))
        setattr(model, CORPUS_DIGEST, corpus.digest)
        vectors = unit_vectors(model)[corpus.evaluation]
        rank, pairs = mgs_rank(vectors, corpus.image_of[corpus.evaluation])
        path = FileSystems.join(models, f"pv-dim{dim}-epochs{epochs}.model")
        save_model(model, path)
    logging.info(
        "OPTIMIZE-PV dim=%d epochs=%d: mgs-rank %.1f over %d pairs (%.0fs)",
        dim,
        epochs,
        rank,
        pairs,
        elapsed.seconds,
    )
    return {
        "dim": dim,
        "epochs": epochs,
        "mgs_rank": rank,
        "pairs": pairs,
        "seconds": round(elapsed.seconds, 1),
        "model": path,
    }


def pick_pv(points: list[dict]) -> dict:
    """Lowest mgs-rank wins (ties: smaller dim, then fewer epochs); losers' models are deleted."""
    ordered = sorted(points, key=lambda p: (p["mgs_rank"], p["dim"], p["epochs"]))
    FileSystems.delete([point["model"] for point in ordered[1:]])
    grid = sorted(
        ({k: v for k, v in p.items() if k != "model"} for p in points),
        key=lambda p: (p["dim"], p["epochs"]),
    )
    return {"grid": grid, "winner": ordered[0]}


def score_lambdas(
    pv_result: dict, corpus: SearchCorpus, *, lambdas: list[float], neighbours: int, limit: float
) -> dict:
    """OPTIMIZE-SCORE with the winning PV model: wmgs-rank for every lambda."""
    with timed("search", "optimize_score") as elapsed:
        vectors = unit_vectors(load_model(pv_result["winner"]["model"]))[corpus.evaluation]
        documents = [corpus.documents[row] for row in corpus.evaluation]
        ranks = wmgs_rank_grid(
            vectors,
            corpus.image_of[corpus.evaluation],
            encode_ngrams(documents),
            lambdas,
            neighbours=neighbours,
            limit=limit,
        )
    for lam, rank in ranks.items():
        logging.info("OPTIMIZE-SCORE lambda=%.2f: wmgs-rank %.1f", lam, rank)
    winner = min(lambdas, key=lambda lam: (ranks[lam], lam))
    return {
        "optimize_pv": pv_result,
        "optimize_score": {
            "grid": [{"lambda": lam, "wmgs_rank": ranks[lam]} for lam in lambdas],
            "winner": {"lambda": winner, "wmgs_rank": ranks[winner]},
            "seconds": round(elapsed.seconds, 1),
        },
        "evaluation": {
            "captions": len(corpus.evaluation),
            "trained_on_captions": len(corpus.documents),
            "full_corpus": corpus.full,
        },
    }


class SearchHyperParameters(beam.PTransform):
    """Captions -> one search report (OPTIMIZE-PV, then OPTIMIZE-SCORE).

    Gathering the captions is a global step; the (dim, epochs) grid points then
    train in parallel, one model per point on whichever worker takes it, each
    reading the gathered corpus as a side input (every point needs all of it).
    OPTIMIZE-SCORE needs one model and one set of neighbourhoods for every
    lambda, so it is a single step.
    """

    def __init__(
        self,
        *,
        grid: list[tuple[int, int]],
        lambdas: list[float],
        pv: PVConfig,
        split: str,
        sample_images: int,
        neighbours: int,
        limit: float,
        models: str,
    ):
        super().__init__()
        self._grid, self._lambdas, self._pv = grid, lambdas, pv
        self._split, self._sample, self._seed = split, sample_images, pv.seed
        self._neighbours, self._limit, self._models = neighbours, limit, models

    def expand(self, captions):
        corpus = (
            captions
            | "Gather" >> beam.combiners.ToList()
            | "SearchCorpus"
            >> beam.Map(
                search_corpus, split=self._split, sample_images=self._sample, seed=self._seed
            )
        )
        corpus_side = beam.pvalue.AsSingleton(corpus)
        pv_result = (
            captions.pipeline
            | "Grid" >> beam.Create(self._grid)
            | "Distribute" >> beam.Reshuffle()
            | "OptimizePV"
            >> beam.Map(score_pv_point, corpus_side, pv=self._pv, models=self._models)
            | "Points" >> beam.combiners.ToList()
            | "PickPV" >> beam.Map(pick_pv)
        )
        return pv_result | "OptimizeScore" >> beam.Map(
            score_lambdas,
            corpus_side,
            lambdas=self._lambdas,
            neighbours=self._neighbours,
            limit=self._limit,
        )


def report_table(report: dict) -> str:
    """The printed form of a search report."""
    pv, scoring = report["optimize_pv"], report["optimize_score"]
    lines = ["OPTIMIZE-PV (mgs-rank, lower is better)", f"{'dim':>6}{'epochs':>8}{'mgs-rank':>11}"]
    for point in pv["grid"]:
        mark = (
            "  <- chosen"
            if (point["dim"], point["epochs"]) == (pv["winner"]["dim"], pv["winner"]["epochs"])
            else ""
        )
        lines.append(f"{point['dim']:>6}{point['epochs']:>8}{point['mgs_rank']:>11.1f}{mark}")
    lines += ["OPTIMIZE-SCORE (wmgs-rank, lower is better)", f"{'lambda':>6}{'wmgs-rank':>11}"]
    for point in scoring["grid"]:
        mark = "  <- chosen" if point["lambda"] == scoring["winner"]["lambda"] else ""
        lines.append(f"{point['lambda']:>6.2f}{point['wmgs_rank']:>11.1f}{mark}")
    evaluation = report["evaluation"]
    lines.append(
        f"evaluated on {evaluation['captions']:,} captions; PV trained on "
        f"{evaluation['trained_on_captions']:,}"
    )
    return "\n".join(lines)
