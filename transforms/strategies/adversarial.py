"""``--adversarial_rounds``: adversarial filtering of decoys, in the spirit of AFLite and SWAG.

Strategies without a guarantee (mcic, random) leave text-only leaks: mcic's decoys
are the target's nearest neighbours, so the target tends to be the hub of its
options (SPEC "Text-only audit"). Each round fits a small text-only model, a
linear softmax over the five options of cheap features that capture the known
leaks (:data:`FEATURES`), with 2-fold cross-fitting so that no instance is judged
by a model that saw it. Where that held-out model picks the target (an *easy*
instance), the one swap of a decoy for a reserve candidate that most lowers the
target's margin is made, if it lowers it. Reserve candidates passed the strategy's
validity walk with the decoys (``Reserved``: valid, texts distinct from the
decoys and each other), so every swap keeps the instance valid.

A global step: the model is fitted on a whole split, so each split's instances
go to one worker (a GroupByKey on the split). Memory there: two (5 + R)^2
float32 matrices per instance (option cosines and simSURF, computed once), about
0.8 GB for COCO 2014's train split with R = 8. The audits before the first
round and after the last are written to ``<output>/adversarial.json``.
"""

import hashlib
from collections.abc import Iterable
from typing import Any

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from schemas.layout import ADVERSARIAL_FILE
from schemas.records import Reserved, Selection
from transforms.corpus.neighbours import Pool, SharedCorpus
from transforms.corpus.store import Corpus, CorpusRef
from transforms.corpus.surface import NgramTable, sim_surf_batch
from transforms.files import write_json
from transforms.progress import timed
from transforms.strategies.choose import decoy

REPORT = "report"  # output tag of the per-split reports
OPTIONS = 5  # filterable strategies (DecoyStrategy.filterable) have five; column 0: the target
FEATURES = ("hub_pv", "hub_bleu", "length", "centroid_pv")
RULES = {"Hub by PV cosine": 0, "Hub by BLEU": 1, "Longest option": 2}  # as the audit names them
MODEL = "cross-fitted linear model"
L2 = 1e-3  # on the mean loss over standardised features
NEWTON_STEPS = 30
CHUNK = 10_000  # instances per block of vector reconstruction and swap trials


def encode(reserved: Reserved, row_of: dict[str, int], reserve: int) -> tuple:
    """(items, provenance): corpus rows of target, decoys, reserve (-1 pads to 5 + reserve);
    (simPV, simSURF, Score) of every item but the target."""
    selection = reserved.selection
    decoys = (*selection.decoys, *reserved.reserve)
    items = np.full(OPTIONS + reserve, -1, dtype=np.int64)
    items[0] = row_of[selection.target.caption_id]
    items[1 : 1 + len(decoys)] = [row_of[d.caption_id] for d in decoys]
    provenance = np.zeros((OPTIONS - 1 + reserve, 3))
    provenance[: len(decoys)] = [(d.sim_pv, d.sim_surf, d.score) for d in decoys]
    return items, provenance


def decode(corpus: Corpus, items: np.ndarray, provenance: np.ndarray, options: np.ndarray):
    """The Selection of ``options`` (item columns, target first); decoys best Score first."""
    columns = options[1:]
    columns = columns[np.lexsort((items[columns], -provenance[columns - 1, 2]))]
    decoys = tuple(
        decoy(corpus, int(items[c]), *provenance[c - 1].tolist()) for c in columns.tolist()
    )
    return Selection(corpus.caption(int(items[0])), decoys)


def surface_matrix(table: NgramTable, items: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """(n, m, m): [i, j, k] = simSURF(hypothesis items[i, j], reference items[i, k])."""
    n, m = items.shape
    out = sim_surf_batch(table, items.ravel(), np.repeat(items, m, axis=0), scratch)
    return out.reshape(n, m, m).transpose(0, 2, 1).astype(np.float32)


def similarities(
    pool: Pool, table: NgramTable, items: np.ndarray, scratch: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every instance's item cosines (unit PV vectors from the pool's index) and simSURFs."""
    n, m = items.shape
    cosines = np.empty((n, m, m), dtype=np.float32)
    surfaces = np.empty((n, m, m), dtype=np.float32)
    for start in range(0, n, CHUNK):
        block = items[start : start + CHUNK]
        local = np.searchsorted(pool.rows, block.ravel())
        vectors = pool.index.reconstruct_batch(local).reshape(len(block), m, -1)
        cosines[start : start + len(block)] = np.einsum("bjd,bkd->bjk", vectors, vectors)
        surfaces[start : start + len(block)] = surface_matrix(table, block, scratch)
    return cosines, surfaces


def option_features(
    cosines: np.ndarray,
    surfaces: np.ndarray,
    lengths: np.ndarray,
    instance: np.ndarray,
    options: np.ndarray,
) -> np.ndarray:
    """(m, 5, FEATURES) of instances ``instance`` with item columns ``options`` (m, 5).

    Hubs are an option's mean cosine / simSURF (as hypothesis, as the audit has it)
    to the others; ``centroid_pv`` its cosine to the mean of the others' vectors. Each
    feature is then taken relative to the mean of the other four options' values.
    """
    k = options.shape[1]
    at = (instance[:, None, None], options[:, :, None], options[:, None, :])
    pv, bleu = cosines[at], surfaces[at]
    to_others = pv.sum(2) - np.diagonal(pv, axis1=1, axis2=2)
    others_norm2 = pv.sum((1, 2))[:, None] - 2 * pv.sum(2) + np.diagonal(pv, axis1=1, axis2=2)
    raw = np.stack(
        [
            to_others / (k - 1),
            (bleu.sum(2) - np.diagonal(bleu, axis1=1, axis2=2)) / (k - 1),
            lengths[instance[:, None], options],
            to_others / np.sqrt(np.maximum(others_norm2, 1e-12)),
        ],
        axis=-1,
    )
    return (k * raw - raw.sum(1, keepdims=True)) / (k - 1)


def objective(z: np.ndarray, w: np.ndarray, l2: float) -> float:
    """Mean softmax loss of option 0 (the target) plus the L2 penalty."""
    s = z @ w
    top = s.max(1)
    log_sum = top + np.log(np.exp(s - top[:, None]).sum(1))
    return float((log_sum - s[:, 0]).mean() + 0.5 * l2 * w @ w)


def fit_softmax(x: np.ndarray, l2: float = L2, steps: int = NEWTON_STEPS) -> np.ndarray:
    """Weights of a linear softmax over options (the target is option 0): damped Newton.

    Features are standardised for the penalty; the weights returned apply to ``x``.
    """
    n, _, f = x.shape
    scale = x.reshape(-1, f).std(0)
    scale[scale == 0] = 1.0
    z = (x / scale).astype(np.float64)
    w = np.zeros(f)
    loss = objective(z, w, l2)
    for _ in range(steps):
        s = z @ w
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        mean = np.einsum("nk,nkf->nf", p, z)
        gradient = (mean - z[:, 0]).mean(0) + l2 * w
        hessian = (np.einsum("nk,nkf,nkg->fg", p, z, z) - mean.T @ mean) / n + l2 * np.eye(f)
        step, t = np.linalg.solve(hessian, gradient), 1.0
        while t > 1e-6 and objective(z, w - t * step, l2) > loss:
            t /= 2
        if t <= 1e-6:
            break
        w -= t * step
        loss = objective(z, w, l2)
    return w / scale


def folds(example_ids: list[str], seed: int, round_: int) -> np.ndarray:
    """0 or 1 per instance: a stable hash of (seed, round, example id)."""
    return np.array(
        [
            hashlib.blake2b(f"{seed}:{round_}:{e}".encode(), digest_size=1).digest()[0] & 1
            for e in example_ids
        ],
        dtype=np.int64,
    )


def cross_fitted(x: np.ndarray, fold: np.ndarray) -> np.ndarray:
    """(n, FEATURES): each instance's weights, fitted on the other fold only."""
    weights = np.zeros((2, x.shape[2]))
    for f in (0, 1):
        if (fold != f).any():
            weights[f] = fit_softmax(x[fold != f])
    return weights[fold]


def accuracy(scores: np.ndarray) -> float:
    """How often option 0 scores highest, ties shared: the expected accuracy of a fair pick."""
    if not len(scores):
        return 0.0
    best = scores == scores.max(1, keepdims=True)
    return float((best[:, 0] / best.sum(1)).mean())


def margins(scores: np.ndarray) -> np.ndarray:
    """The target's score minus the best decoy's, over the last axis (target first)."""
    return scores[..., 0] - scores[..., 1:].max(-1)


def audits(x: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """The untrained rules' accuracies (audit names) and the held-out model's."""
    return {**{name: accuracy(x[..., f]) for name, f in RULES.items()}, MODEL: accuracy(scores)}


def swap(
    similarity: tuple[np.ndarray, np.ndarray, np.ndarray],
    options: np.ndarray,
    available: np.ndarray,
    easy: np.ndarray,
    weights: np.ndarray,
    margin: np.ndarray,
) -> int:
    """For each ``easy`` instance, the swap of a decoy for an available reserve item that
    lowers the target's ``margin`` (under its held-out ``weights``) most, if any: applied
    in place to ``options`` and ``available``. Returns the swaps made."""
    reserve = np.arange(OPTIONS, available.shape[1])
    slots = np.repeat(np.arange(1, OPTIONS), len(reserve))
    columns = np.tile(reserve, OPTIONS - 1)
    trial_index = np.arange(len(slots))
    swapped = 0
    if not len(slots):
        return swapped
    for start in range(0, len(easy), CHUNK):
        instances = easy[start : start + CHUNK]
        trials = np.repeat(options[instances][:, None, :], len(slots), axis=1)
        trials[:, trial_index, slots] = columns
        m = len(instances)
        flat = trials.reshape(-1, OPTIONS)
        x = option_features(*similarity, np.repeat(instances, len(slots)), flat)
        scores = np.einsum("tkf,tf->tk", x, np.repeat(weights[start : start + m], len(slots), 0))
        trial_margins = np.where(
            available[instances][:, columns], margins(scores).reshape(m, len(slots)), np.inf
        )
        best = trial_margins.argmin(1)
        better = np.flatnonzero(trial_margins[np.arange(m), best] < margin[start : start + m])
        chosen = instances[better]
        options[chosen, slots[best[better]]] = columns[best[better]]
        available[chosen, columns[best[better]]] = False
        swapped += len(chosen)
    return swapped


def filter_split(
    similarity: tuple[np.ndarray, np.ndarray, np.ndarray],
    example_ids: list[str],
    available: np.ndarray,
    rounds: int,
    seed: int,
) -> tuple[np.ndarray, dict]:
    """(options (n, 5) item columns, report) after ``rounds`` rounds of fitting and swapping.

    ``similarity``: (cosines, simSURFs, lengths) of every instance's items;
    ``available``: (n, items) which reserve items may be swapped in (updated in place).
    """
    n = len(example_ids)
    everyone = np.arange(n)
    options = np.tile(np.arange(OPTIONS), (n, 1))
    history = []

    def held_out(round_: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = option_features(*similarity, everyone, options)
        weights = cross_fitted(x, folds(example_ids, seed, round_))
        return x, weights, np.einsum("nkf,nf->nk", x, weights)

    for round_ in range(1, rounds + 1):
        x, weights, scores = held_out(round_)
        if round_ == 1:
            before = audits(x, scores)
        margin = margins(scores)
        easy = np.flatnonzero(margin > 0)
        swapped = swap(similarity, options, available, easy, weights[easy], margin[easy])
        history.append(
            {
                "round": round_,
                MODEL: accuracy(scores),
                "easy_instances": len(easy),
                "replaced_decoys": swapped,
            }
        )
    x, _, scores = held_out(rounds + 1)
    report = {"instances": n, "before": before, "rounds": history, "after": audits(x, scores)}
    return options, report


def write_report(reports: list[tuple[str, dict]], *, path: str, rounds: int, reserve: int) -> str:
    return write_json(path, {"rounds": rounds, "reserve": reserve, "splits": dict(reports)})


class AdversarialFilter(beam.PTransform):
    """Reserved -> Selection, after ``rounds`` rounds per split; writes ``ADVERSARIAL_FILE``.

    ``ref``: the CorpusRef PCollection (a singleton) the strategy ran on.
    """

    def __init__(
        self,
        *,
        corpus: SharedCorpus,
        ref: beam.PCollection,
        rounds: int,
        reserve: int,
        seed: int,
        output: str,
    ):
        super().__init__()
        self._corpus, self._ref, self._rounds, self._reserve = corpus, ref, rounds, reserve
        self._seed, self._output = seed, output

    def expand(self, reserved):
        ref = beam.pvalue.AsSingleton(self._ref)
        filtered = (
            reserved
            | "Encode"
            >> beam.ParDo(_Encode(self._corpus, self._reserve), ref).with_output_types(
                tuple[str, Any]
            )
            | "BySplit" >> beam.GroupByKey()  # the global step: one worker per split
            | "Filter"
            >> beam.ParDo(_FilterSplit(self._corpus, self._rounds, self._seed), ref).with_outputs(
                REPORT, main="selections"
            )
        )
        _ = (
            filtered[REPORT]
            | "Reports" >> beam.combiners.ToList()
            | "WriteReport"
            >> beam.Map(
                write_report,
                path=FileSystems.join(self._output, ADVERSARIAL_FILE),
                rounds=self._rounds,
                reserve=self._reserve,
            )
        )
        return filtered["selections"]


class _Encode(beam.DoFn):
    """Reserved -> (split, (items, provenance)): rows and floats, not strings, are shuffled."""

    def __init__(self, corpus: SharedCorpus, reserve: int):
        self._corpus, self._reserve = corpus, reserve
        self._row_of: dict[str, int] | None = None

    def process(self, reserved: Reserved, ref: CorpusRef):
        if self._row_of is None:
            ids = self._corpus.acquire(ref.directory).corpus.captions["caption_id"]
            self._row_of = {caption_id: row for row, caption_id in enumerate(ids)}
        yield reserved.selection.target.split, encode(reserved, self._row_of, self._reserve)


class _FilterSplit(beam.DoFn):
    def __init__(self, corpus: SharedCorpus, rounds: int, seed: int):
        self._corpus, self._rounds, self._seed = corpus, rounds, seed
        self._easy = Metrics.counter("adversarial", "easy_instances")
        self._replaced = Metrics.counter("adversarial", "replaced_decoys")

    def process(self, grouped: tuple[str, Iterable[tuple]], ref: CorpusRef):
        split, encoded = grouped
        searchable = self._corpus.acquire(ref.directory)
        corpus, pools = searchable.corpus, searchable.pools
        encoded = sorted(encoded, key=lambda pair: int(pair[0][0]))  # target row: a fixed order
        items = np.stack([pair[0] for pair in encoded])
        provenance = np.stack([pair[1] for pair in encoded])
        available = items >= 0
        available[:, :OPTIONS] = False
        items = np.where(items >= 0, items, items[:, :1])  # pads: the target, never available
        with timed("adversarial", "filter"):
            pool = pools["all"] if "all" in pools else pools[split]
            cosines, surfaces = similarities(pool, corpus.ngrams, items, corpus.ngrams.scratch())
            lengths = corpus.ngrams.lengths[items].astype(np.float32)
            example_ids = [corpus.captions["example_id"][row] for row in items[:, 0].tolist()]
            options, report = filter_split(
                (cosines, surfaces, lengths), example_ids, available, self._rounds, self._seed
            )
        decoy_pv = np.take_along_axis(provenance[..., 0], options[:, 1:] - 1, axis=1)
        report["decoy_sim_pv_mean"] = {
            "before": float(provenance[:, : OPTIONS - 1, 0].mean()),
            "after": float(decoy_pv.mean()),
        }
        self._easy.inc(sum(entry["easy_instances"] for entry in report["rounds"]))
        self._replaced.inc(sum(entry["replaced_decoys"] for entry in report["rounds"]))
        yield beam.pvalue.TaggedOutput(REPORT, (split, report))
        for k in range(len(items)):
            yield decode(corpus, items[k], provenance[k], options[k])
