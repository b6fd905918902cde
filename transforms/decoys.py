"""Scoring candidates and choosing decoys (SPEC "Similarities", Algorithm 1).

The maths are pure functions over a batch of (target, candidates) rows, so the
same code serves the pipeline, the tests and the benchmarks.
"""

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from schemas.records import SKIPPED, Decoy, Selection, Skip
from transforms.corpus import Corpus
from transforms.neighbours import Neighbourhood, SharedCorpus
from transforms.progress import Progress, timed
from transforms.surface import sim_surf_batch

DECOYS_PER_INSTANCE = 4
DECOY_KINDS = ("mcic", "random")
TOO_FEW_DECOYS = "decoys/fewer_than_4_candidates_with_positive_score"


def score(sim_pv: np.ndarray, sim_surf: np.ndarray, lam: float, limit: float) -> np.ndarray:
    """Eq. 1: 0 where simSURF >= L (too close to be fair), else the blend.

    >>> score(np.array([0.9, 0.9]), np.array([0.2, 0.5]), lam=0.3, limit=0.5).round(2).tolist()
    [0.41, 0.0]
    """
    return np.where(sim_surf >= limit, 0.0, lam * sim_pv + (1.0 - lam) * sim_surf)


def select_decoys(scores: np.ndarray, candidates: np.ndarray) -> np.ndarray | None:
    """Positions of the 4 best candidates with Score > 0, or None if fewer exist.

    Ties go to the lower candidate row, i.e. the lower caption id.

    >>> scores = np.array([0.5, 0.0, 0.7, 0.5, 0.6, 0.1])
    >>> select_decoys(scores, candidates=np.array([9, 1, 2, 3, 4, 5])).tolist()
    [2, 4, 3, 0]
    """
    kept = np.flatnonzero((scores > 0) & (candidates >= 0))
    if len(kept) < DECOYS_PER_INSTANCE:
        return None
    return best_first(scores, candidates, kept)[:DECOYS_PER_INSTANCE]


def keep_drawn(scores: np.ndarray, candidates: np.ndarray) -> np.ndarray | None:
    """Random decoys (``--decoys random``): every drawn candidate is kept, best Score first;
    None when fewer than 4 could be drawn (a pool of near-copies of the target's text).

    >>> keep_drawn(np.array([0.1, -0.2, 0.3, 0.1]), candidates=np.array([7, 3, 5, 2])).tolist()
    [2, 3, 0, 1]
    >>> keep_drawn(np.array([0.1, 0.2, 0.0, 0.0]), candidates=np.array([7, 3, -1, -1])) is None
    True
    """
    kept = np.flatnonzero(candidates >= 0)
    if len(kept) < DECOYS_PER_INSTANCE:
        return None
    return best_first(scores, candidates, kept)


def best_first(scores: np.ndarray, candidates: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """``kept`` ordered by Score, descending; ties to the lower caption id."""
    return kept[np.lexsort((candidates[kept], -scores[kept]))]


SELECTORS = {"mcic": select_decoys, "random": keep_drawn}


class ChooseDecoys(beam.PTransform):
    """Neighbourhood batches -> Selection per target; Skip when too few decoys.

    ``decoys``: "mcic" chooses by Score (Algorithm 1); "random" keeps the
    candidates drawn at random (see ``FindNeighbourhoods``) and scores them
    only for their provenance.
    """

    def __init__(self, *, corpus: SharedCorpus, lam: float, limit: float, decoys: str = "mcic"):
        super().__init__()
        self._choose = _ChooseDecoys(corpus, lam, limit, SELECTORS[decoys])

    def expand(self, neighbourhoods):
        return neighbourhoods | "Choose" >> beam.ParDo(self._choose).with_outputs(
            SKIPPED, main="selections"
        )


class _ChooseDecoys(beam.DoFn):
    def __init__(self, corpus: SharedCorpus, lam: float, limit: float, select):
        self._corpus, self._lam, self._limit, self._select = corpus, lam, limit, select
        self._too_few = Metrics.counter(*TOO_FEW_DECOYS.split("/"))
        self._pairs = Metrics.counter("decoys", "scored_pairs")
        self._scratch = None
        self._progress = None

    def process(self, batch: Neighbourhood):
        corpus = self._corpus.acquire(batch.directory).corpus
        if self._scratch is None:
            self._scratch = corpus.ngrams.scratch()  # one per DoFn instance: not thread-safe
            self._progress = Progress("decoys", "targets", len(corpus))
        with timed("decoys", "choose"):  # a list, so downstream stages are not timed too
            outputs = list(self._choose(corpus, batch))
        self._progress.advance(len(batch.targets))
        yield from outputs

    def _choose(self, corpus: Corpus, batch: Neighbourhood):
        sim_surf = sim_surf_batch(corpus.ngrams, batch.targets, batch.candidates, self._scratch)
        scores = score(batch.sim_pv, sim_surf, self._lam, self._limit)
        self._pairs.inc(int((batch.candidates >= 0).sum()))
        for b, target_row in enumerate(batch.targets):
            target = corpus.caption(int(target_row))
            chosen = self._select(scores[b], batch.candidates[b])
            if chosen is None:
                self._too_few.inc()
                yield beam.pvalue.TaggedOutput(
                    SKIPPED, Skip(TOO_FEW_DECOYS, target.caption_id, target.split)
                )
                continue
            decoys = []
            for position in chosen:
                decoy = corpus.caption(int(batch.candidates[b, position]))
                decoys.append(
                    Decoy(
                        caption_id=decoy.caption_id,
                        image_id=decoy.image_id,
                        text=decoy.text,
                        sim_pv=float(batch.sim_pv[b, position]),
                        sim_surf=float(sim_surf[b, position]),
                        score=float(scores[b, position]),
                    )
                )
            yield Selection(target, tuple(decoys))
