"""``--decoys closed_sets``: decoys no text-only model can tell from the target, by construction.

The captions of each split are grouped into *sets* of five captions of five
different images, mutually close in PV space, every pair valid both ways
round (``validity.pairs_allowed``). Each member of a set is the target of its
own instance and the other four are its decoys. The five instances of a set
show the same five option texts, so any function of the option texts (hub,
longest option, a learned text-only model, ...) picks the same text in all
five and is right on exactly one: text-only accuracy is exactly chance, on
every split, whatever the model. Sets form within a split, so the novelty
leak of a whole-corpus pool cannot arise.

Stages: the ``K * --set_search_depth`` nearest captions of the same split
(``FindNeighbourhoods``), which pairs may share a set and each caption's K
nearest such (parallel, ``AllowedPairs``), then, per split on
one worker, the grouping itself (``grouping.form_sets``: clique packing for
closeness, then repair and overlay sets for coverage). A caption in no set is
skipped and counted; with ``--set_memberships 2`` a caption may sit in two
sets, and its second instance's example id ends in ``.2``.
"""

from collections.abc import Iterable
from typing import NamedTuple

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from schemas.records import SKIPPED, Selection, Skip
from transforms.corpus.neighbours import (
    Neighbourhood,
    Pool,
    SharedCorpus,
    top_neighbours,
)
from transforms.corpus.split import SPLITS
from transforms.corpus.store import Corpus
from transforms.corpus.surface import sim_surf_batch
from transforms.progress import timed
from transforms.strategies.base import NEIGHBOURS_MAY_FIT, DecoyStrategy
from transforms.strategies.choose import decoys_at
from transforms.strategies.grouping import form_sets
from transforms.strategies.scoring import best_first, score
from transforms.strategies.validity import RejectionCounters, ValidityRules, pairs_allowed

NO_SET = "decoys/in_no_closed_set"


class Edges(NamedTuple):
    """A batch of targets, their candidates and which pairs may share a set."""

    targets: np.ndarray  # int64 (B,) corpus rows
    candidates: np.ndarray  # int64 (B, K) corpus rows, -1 padded
    sim_pv: np.ndarray  # float64 (B, K)
    allowed: np.ndarray  # bool (B, K)


def first_allowed(
    candidates: np.ndarray, sim_pv: np.ndarray, allowed: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's ``k`` best allowed candidates, best first: (candidates, sim_pv, allowed),
    padded with -1 (not allowed) where a row has fewer.

    >>> rows = first_allowed(np.array([[7, 8, 9]]), np.array([[0.9, 0.8, 0.7]]),
    ...                      np.array([[False, True, True]]), 2)
    >>> [row.tolist() for row in rows]
    [[[8, 9]], [[0.8, 0.7]], [[True, True]]]
    """
    order = np.argsort(~allowed, axis=1, kind="stable")[:, :k]
    keep = np.take_along_axis(allowed, order, axis=1)
    return (
        np.where(keep, np.take_along_axis(candidates, order, axis=1), -1),
        np.where(keep, np.take_along_axis(sim_pv, order, axis=1), 0.0),
        keep,
    )


class _AllowedPairs(beam.DoFn):
    """Searched candidates -> each target's K nearest allowed ones, grouped by split.

    The nearest captions of a large split are often paraphrases of the target that
    the validity rules turn away (simSURF >= L); searching deeper than K keeps K
    usable neighbours for them, so the sets' coverage does not fall with corpus size.
    """

    def __init__(self, corpus: SharedCorpus, rules: ValidityRules, k: int):
        self._corpus, self._rules, self._k = corpus, rules, k
        self._scratch = self._rejections = None

    def setup(self):
        self._rejections = RejectionCounters()

    def process(self, batch: Neighbourhood):
        corpus = self._corpus.acquire(batch.directory).corpus
        if self._scratch is None:
            self._scratch = corpus.ngrams.scratch()  # one per DoFn instance: not thread-safe
        with timed("decoys", "allowed_pairs"):
            allowed, rejected = pairs_allowed(
                corpus, batch.targets, batch.candidates, batch.sim_pv, self._rules, self._scratch
            )
        self._rejections.add(rejected)
        candidates, sim_pv, allowed = first_allowed(
            batch.candidates, batch.sim_pv, allowed, self._k
        )
        for code in np.unique(corpus.split_of[batch.targets]):
            mine = corpus.split_of[batch.targets] == code
            edges = Edges(batch.targets[mine], candidates[mine], sim_pv[mine], allowed[mine])
            yield (SPLITS[code], batch.directory), edges


def split_graph(rows: np.ndarray, edges: list[Edges]) -> tuple[np.ndarray, ...]:
    """(neighbours, similarity, allowed) over local indices 0..len(rows)-1 of a split's rows."""
    targets = np.concatenate([e.targets for e in edges])
    order = np.argsort(np.searchsorted(rows, targets))
    candidates = np.concatenate([e.candidates for e in edges])[order]
    local = np.where(candidates >= 0, np.searchsorted(rows, np.maximum(candidates, 0)), -1)
    similarity = np.concatenate([e.sim_pv for e in edges])[order].astype(np.float32)
    allowed = np.concatenate([e.allowed for e in edges])[order] & (candidates >= 0)
    return local.astype(np.int64), similarity, allowed


def memberships(sets: np.ndarray, size: int) -> np.ndarray:
    """For each set member, which of its caption's memberships this is (1, 2, ...).

    >>> memberships(np.array([[0, 1], [1, 2], [1, 0]]), 3).tolist()
    [[1, 1], [2, 1], [3, 2]]
    """
    seen = np.zeros(size, dtype=np.int64)
    count = np.zeros(sets.shape, dtype=np.int64)
    for s, members in enumerate(sets):
        for j, member in enumerate(members):
            seen[member] += 1
            count[s, j] = seen[member]
    return count


class _FormSets(beam.DoFn):
    def __init__(self, corpus: SharedCorpus, lam: float, limit: float, seed: int, **grouping):
        self._corpus, self._lam, self._limit, self._seed = corpus, lam, limit, seed
        self._grouping = grouping
        self._sets = Metrics.counter("closed_sets", "sets")
        self._no_set = Metrics.counter(*NO_SET.split("/"))

    def process(self, keyed: tuple[tuple[str, str], Iterable[Edges]]):
        (split, directory), edges = keyed
        searchable = self._corpus.acquire(directory)
        corpus = searchable.corpus
        rows = np.flatnonzero(corpus.split_of == SPLITS.index(split))
        with timed("closed_sets", "form"):
            sets = form_sets(*split_graph(rows, list(edges)), seed=self._seed, **self._grouping)
        self._sets.inc(len(sets))
        yield from self._selections(searchable.corpus, searchable.pools[split], rows, sets)
        for row in np.setdiff1d(rows, rows[sets.ravel()]):
            self._no_set.inc()
            caption = corpus.caption(int(row))
            yield beam.pvalue.TaggedOutput(SKIPPED, Skip(NO_SET, caption.caption_id, split))

    def _selections(self, corpus: Corpus, pool: Pool, rows: np.ndarray, sets: np.ndarray):
        scratch = corpus.ngrams.scratch()
        membership = memberships(sets, len(rows))
        for members, counts in zip(rows[sets], membership, strict=True):
            vectors = pool.index.reconstruct_batch(np.searchsorted(pool.rows, members))
            cosines = (vectors @ vectors.T).astype(np.float64)
            for k, target_row in enumerate(members):
                others = np.delete(np.arange(len(members)), k)
                candidates = members[others]
                sim_pv = cosines[k, others]
                sim_surf = sim_surf_batch(
                    corpus.ngrams, members[k : k + 1], candidates[None], scratch
                )[0]
                scores = score(sim_pv, sim_surf, self._lam, self._limit)
                target = corpus.caption(int(target_row))
                if counts[k] > 1:
                    target = target._replace(example_id=f"{target.example_id}.{counts[k]}")
                ordered = best_first(scores, candidates, np.arange(len(candidates)))
                similarities = (candidates, sim_pv, sim_surf, scores)
                yield Selection(target, decoys_at(corpus, *similarities, ordered))


class ClosedSets(DecoyStrategy):
    name = "closed_sets"
    summary = (
        "sets of 5 mutually close captions of 5 images within a split; each member is the target "
        "of one instance, the other 4 its decoys"
    )
    pools = ("split",)
    guarantee = (
        "exact: the 5 instances of a set share their option texts, so any text-only function "
        "is right on exactly 1 of 5"
    )
    limitations = NEIGHBOURS_MAY_FIT + (
        "Each caption is the target of up to `--set_memberships` instances, and the five "
        "instances of a set show the same five options: split-level accuracies count each set "
        "five times. Captions in no valid set are skipped (`decoys/in_no_closed_set`)."
    )
    invariants = ("closed_sets",)

    def expand(self, corpus_ref):
        config = self.config
        return (
            corpus_ref
            | "FindNeighbourhoods"
            >> self.find_neighbourhoods(
                top_neighbours(config.set_neighbours * config.set_search_depth)
            )
            | "AllowedPairs"
            >> beam.ParDo(_AllowedPairs(self.corpus, config.rules, config.set_neighbours))
            | "BySplit" >> beam.GroupByKey()
            | "FormSets"
            >> beam.ParDo(
                _FormSets(
                    self.corpus,
                    config.score_lambda,
                    config.rules.limit,
                    config.seed,
                    max_memberships=config.set_memberships,
                )
            ).with_outputs(SKIPPED, main="selections")
        )
