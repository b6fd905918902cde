"""Choosing decoys from each target's candidate list: preference order, then validity.

``mcic``, ``random`` and the Visual Madlibs tasks differ only in how candidates
are found, in the order they are preferred in and in how many decoys they need;
all keep the first that pass the validity rules and record each decoy's simPV,
simSURF and Score, best Score first. With
adversarial filtering on, the walk goes on for ``reserve`` more valid candidates
(distinct from the decoys and each other), which the filter may swap in.
"""

from collections.abc import Callable
from typing import ClassVar

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from schemas.records import SKIPPED, Decoy, Reserved, Selection, Skip
from transforms.corpus.neighbours import Finder, Neighbourhood, SharedCorpus
from transforms.corpus.store import Corpus
from transforms.corpus.surface import sim_surf_batch
from transforms.progress import Progress, timed
from transforms.strategies.base import DecoyStrategy
from transforms.strategies.scoring import best_first, score
from transforms.strategies.validity import RejectionCounters, ValidityRules, choose_valid

# (scores (N,), candidates (N,)) -> the preferable candidates' positions, in preference order.
Preference = Callable[[np.ndarray, np.ndarray], np.ndarray]


def preference_matrix(prefer: Preference, scores: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Each row's preference order, -1 padded to the candidates' width."""
    matrix = np.full(candidates.shape, -1, dtype=np.int64)
    for b in range(len(candidates)):
        order = prefer(scores[b], candidates[b])
        matrix[b, : len(order)] = order
    return matrix


def decoy(corpus: Corpus, row: int, sim_pv: float, sim_surf: float, score: float) -> Decoy:
    caption = corpus.caption(row)
    return Decoy(
        caption.caption_id,
        caption.image_id,
        caption.text,
        sim_pv,
        sim_surf,
        score,
        original=caption.original,
    )


def decoys_at(
    corpus: Corpus,
    candidates: np.ndarray,
    sim_pv: np.ndarray,
    sim_surf: np.ndarray,
    scores: np.ndarray,
    positions: np.ndarray,
) -> tuple[Decoy, ...]:
    """The decoys at ``positions`` of one target's candidate row, with their provenance."""
    return tuple(
        decoy(
            corpus,
            int(candidates[p]),
            float(sim_pv[p]),
            float(sim_surf[p]),
            float(scores[p]),
        )
        for p in positions
    )


def too_few_valid(decoys: int) -> str:
    """The skip reason of a target that loses candidates to the validity rules."""
    return f"decoys/fewer_than_{decoys}_valid_candidates"


class ChooseDecoys(beam.PTransform):
    """Neighbourhood batches -> Selection per target; Skip when fewer than ``decoys`` pass.

    ``too_few``: the skip reason when fewer than ``decoys`` candidates are preferable
    before validity is checked (e.g. Algorithm 1's "positive Score"; default
    ``too_few_valid``); targets that lose candidates to the rules are skipped
    as ``too_few_valid``.
    ``reserve`` > 0: a ``Reserved`` per target instead, with up to that many further
    valid candidates in preference order (fewer never skip a target).
    """

    def __init__(
        self,
        *,
        corpus: SharedCorpus,
        lam: float,
        rules: ValidityRules,
        prefer: Preference,
        decoys: int,
        too_few: str = "",
        reserve: int = 0,
    ):
        super().__init__()
        too_few = too_few or too_few_valid(decoys)
        self._choose = _ChooseDecoys(corpus, lam, rules, prefer, decoys, too_few, reserve)

    def expand(self, neighbourhoods):
        return neighbourhoods | "Choose" >> beam.ParDo(self._choose).with_outputs(
            SKIPPED, main="selections"
        )


class _ChooseDecoys(beam.DoFn):
    def __init__(
        self,
        corpus: SharedCorpus,
        lam: float,
        rules: ValidityRules,
        prefer,
        decoys: int,
        too_few: str,
        reserve: int,
    ):
        self._corpus, self._lam, self._rules = corpus, lam, rules
        self._prefer, self._decoys = prefer, decoys
        self._too_few_reason, self._reserve = too_few, reserve
        self._pairs = Metrics.counter("decoys", "scored_pairs")
        self._scratch = self._progress = self._rejections = None

    def setup(self):
        self._rejections = RejectionCounters()

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
        scores = score(batch.sim_pv, sim_surf, self._lam, self._rules.limit)
        self._pairs.inc(int((batch.candidates >= 0).sum()))
        preference = preference_matrix(self._prefer, scores, batch.candidates)
        chosen, rejected = choose_valid(
            corpus,
            batch.targets,
            batch.candidates,
            batch.sim_pv,
            preference,
            self._decoys + self._reserve,
            self._rules,
            self._scratch,
        )
        self._rejections.add(rejected)
        for b, target_row in enumerate(batch.targets):
            target = corpus.caption(int(target_row))
            if chosen[b, self._decoys - 1] < 0:
                preferable = int((preference[b] >= 0).sum())
                reason = (
                    self._too_few_reason
                    if preferable < self._decoys
                    else too_few_valid(self._decoys)
                )
                Metrics.counter(*reason.split("/")).inc()
                yield beam.pvalue.TaggedOutput(
                    SKIPPED, Skip(reason, target.caption_id, target.split)
                )
                continue
            similarities = (batch.candidates[b], batch.sim_pv[b], sim_surf[b], scores[b])
            first = best_first(scores[b], batch.candidates[b], chosen[b, : self._decoys])
            selection = Selection(target, decoys_at(corpus, *similarities, first))
            if self._reserve:
                further = chosen[b, self._decoys :]
                yield Reserved(selection, decoys_at(corpus, *similarities, further[further >= 0]))
            else:
                yield selection


class ChoosingStrategy(DecoyStrategy):
    """A strategy that walks each target's candidates in its preference order (mcic, random,
    the Visual Madlibs tasks).

    Subclasses say which candidates (``finder``), in which order (``prefer``) and
    why a target has too few before validity is checked (``too_few``; "": the
    validity skip).
    """

    prefer: ClassVar[Preference]
    too_few: ClassVar[str] = ""

    def finder(self) -> Finder:
        raise NotImplementedError

    def prepare(self, corpus_ref: beam.PCollection) -> beam.PCollection:
        """A global step the finder needs first (e.g. files beside the corpus); none here."""
        return corpus_ref

    def expand(self, corpus_ref):
        config = self.config
        return (
            self.prepare(corpus_ref)
            | "FindNeighbourhoods" >> self.find_neighbourhoods(self.finder())
            | "ChooseDecoys"
            >> ChooseDecoys(
                corpus=self.corpus,
                lam=config.score_lambda,
                rules=config.rules,
                reserve=config.reserve,
                prefer=self.prefer,
                decoys=self.decoys_per_instance(),
                too_few=self.too_few,
            )
        )
