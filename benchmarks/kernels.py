"""The kernel stages of a closed-sets run against their bare kernels, on the same data.

Issue "Scale, measured as ratios" asks how much the pipeline adds to the work it
cannot avoid. For each kernel stage, the same work is done again after the run, in
this one process, without Beam, on the run's own files:

- the sentence encoder: the validity model encoding what the run encoded (each shard's
  distinct original texts) on one PyTorch thread, as each of two workers on two cores
  does; on a seeded sample of those texts, its seconds scaled to all of them, since
  encoding every caption again would double the benchmark's longest stage;
- PV training: gensim training the run's PV sample with the run's settings
  (``train_paragraph_vectors``, the thin call into gensim the pipeline makes);
- neighbour search: faiss searching every caption of each split in that split's index,
  as written by the run, in the run's batches and on one faiss thread, as its workers do;
- allowed pairs: the validity kernel (``pairs_allowed``: simSURF, the copies and
  same-image checks and the sentence-encoder rule) on the candidates that search found,
  checked until each caption has its K allowed, as the run checks them.

Issue 45 names three kernels (gensim, faiss, the validity kernel); the sentence encoder
came later (issue 42) and is reported beside them. The pipeline's busy seconds of those
stages (summed over its workers) over the bare seconds is the overhead: what the runner,
the batches' transport and two workers sharing one machine's memory add to the kernels.
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from pipelines.options import GenerateOptions
from schemas.layout import corpus_folder
from transforms.corpus.encoders.registry import load_encoder
from transforms.corpus.inference import row_ranges
from transforms.corpus.neighbours import (
    SearchableCorpus,
    load_searchable,
    nearest_in_pool,
    other_images,
)
from transforms.corpus.paragraph_vectors import train_paragraph_vectors, train_sample_rows
from transforms.corpus.pv_training import Words
from transforms.corpus.sentences import BATCH
from transforms.corpus.store import read_caption_table
from transforms.strategies.closed_sets import ClosedSets, ClosedSetsOptions
from transforms.strategies.config import StrategyConfig
from transforms.strategies.validity import pairs_allowed
from transforms.threads import limit_torch

# the three whose overhead issue 45 bounds (at most 1.3x their bare kernels' sum)
ISSUE_KERNELS = ("pv/train_ms", "neighbourhoods/search_ms", "decoys/allowed_pairs_ms")
ENCODER_SAMPLE = 16_384  # distinct texts the bare encoder times: about 40 s of int8 MiniLM
PROBE_VALUES, PROBE_TURNS = 4_000_000, 3  # the host probe: a sort and a loop, ~0.2 s a turn
# the pipeline's counter of each kernel stage, and the stage's row in the scale benchmark
KERNEL_STAGES = (
    ("sentences/encode_ms", "sentence encoder"),
    ("pv/train_ms", "PV training"),
    ("neighbourhoods/search_ms", "neighbour search"),
    ("decoys/allowed_pairs_ms", "allowed pairs"),
)


@dataclass
class Stopwatch:
    """Seconds summed over the timed blocks."""

    seconds: float = 0.0

    @contextmanager
    def timed(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - started


def host_probe() -> float:
    """Seconds a fixed piece of one-thread work takes (numpy's sort and a Python loop), the
    best of ``PROBE_TURNS``. Timed before a run and after its bare kernels, it says how far
    the host's own speed moved between them, which a ratio of the two cannot tell apart
    from overhead: a shared 2-core host moved by a fifth within half an hour
    (docs/benchmarks.md, 2026-12-02)."""
    values = np.random.default_rng(0).random(PROBE_VALUES)
    best = float("inf")
    for _ in range(PROBE_TURNS):
        started = time.perf_counter()
        np.sort(values)
        sum(value * value for value in range(PROBE_VALUES))
        best = min(best, time.perf_counter() - started)
    return best


def drift_line(before: float, after: float) -> str:
    """The host probe's reading before the runs and after the bare kernels.

    >>> drift_line(0.5, 0.6).split(": ", 1)[1]
    '0.50 s before the runs, 0.60 s after the bare kernels: 1.20x'
    """
    return (
        f"host probe (fixed one-thread work): {before:.2f} s before the runs, {after:.2f} s "
        f"after the bare kernels: {after / before:.2f}x"
    )


def bare_pv_training(texts: list[str], caption_ids: list[str], options: GenerateOptions) -> float:
    """Seconds gensim takes to train what the run trained: its sample, its settings."""
    pv = options.pv_config()
    documents = Words(texts)
    sample = train_sample_rows(caption_ids, pv.train_sample, pv.seed)
    trained = documents if sample is None else [documents[row] for row in sample]
    clock = Stopwatch()
    with clock.timed():
        train_paragraph_vectors(trained, pv)
    return clock.seconds


def bare_encoder(directory: str, options: GenerateOptions, sample: int = ENCODER_SAMPLE) -> float:
    """Seconds the validity model takes to encode what the run encoded (each shard's
    distinct texts, as ``_EncodeShard`` does), from a seeded sample of them; 0 without one."""
    spec = options.encoder_spec()
    if spec is None:
        return 0.0
    originals = read_caption_table(directory, ["original"]).column("original")
    distinct = [
        text
        for start, end in row_ranges(len(originals))
        for text in np.unique(np.array(originals[start:end].to_pylist(), dtype=object))
    ]
    rows = np.random.default_rng(options.seed).permutation(len(distinct))[:sample]
    texts = [distinct[row] for row in np.sort(rows)]
    encoder = load_encoder(spec.model, spec.family)
    limit_torch(1)
    clock = Stopwatch()
    for first in range(0, len(texts), BATCH):
        with clock.timed():
            encoder.encode(texts[first : first + BATCH])
    return clock.seconds * len(distinct) / len(texts)


def bare_search_and_pairs(
    searchable: SearchableCorpus, config: StrategyConfig
) -> tuple[float, float]:
    """(faiss's seconds, the validity kernel's seconds) on every caption's search and its
    allowed pairs, batch by batch as the run's workers do them."""
    searched, need = ClosedSets.searched(config), config.options.set_neighbours
    corpus = searchable.corpus
    scratch = corpus.ngrams.scratch()
    search, pairs = Stopwatch(), Stopwatch()
    for pool, rows in searchable.by_pool(np.arange(len(corpus))):
        for first in range(0, len(rows), config.batch_size):
            targets = rows[first : first + config.batch_size]
            with search.timed():
                sims, local = nearest_in_pool(pool, targets, searched)
            candidates, sim_pv = other_images(corpus, pool, targets, sims, local, searched)
            with pairs.timed():
                pairs_allowed(corpus, targets, candidates, sim_pv, config.rules, scratch, need)
    return search.seconds, pairs.seconds


def bare_kernels(version: str, options: GenerateOptions) -> dict[str, float]:
    """Each kernel stage's counter -> the bare kernel's seconds on ``version``'s data."""
    # one faiss thread, as each of the run's workers has (runner.worker_threads): faiss's
    # default, both cores, searched the 25k run in 10.4 s against 19.9 on one thread
    config = options.strategy_config(worker_threads=1)
    if not isinstance(config.options, ClosedSetsOptions):
        raise ValueError(f"{version}: the bare kernels are those of closed sets' stages")
    directory = corpus_folder(version)
    encoder = bare_encoder(directory, options)
    searchable = load_searchable(directory, config.decoy_pool, config.index)
    captions = searchable.corpus.captions
    pv = bare_pv_training(captions["text"], captions["caption_id"], options)
    search, pairs = bare_search_and_pairs(searchable, config)
    seconds = (encoder, pv, search, pairs)
    return {key: value for (key, _), value in zip(KERNEL_STAGES, seconds, strict=True)}


def kernel_rows(busy_ms: dict[str, float], bare: dict[str, float]) -> list[tuple[str, ...]]:
    """The table's rows: each kernel stage's pipeline busy time, its bare kernel's and their
    ratio; issue 45's three together, then all four; then the rest of the counted busy time.

    >>> busy = {"sentences/encode_ms": 4000, "pv/train_ms": 3000,
    ...         "neighbourhoods/search_ms": 2000, "decoys/allowed_pairs_ms": 1000,
    ...         "read/read_ms": 10000}
    >>> bare = {"sentences/encode_ms": 4.0, "pv/train_ms": 2.0,
    ...         "neighbourhoods/search_ms": 2.0, "decoys/allowed_pairs_ms": 0.5}
    >>> [row[-1] for row in kernel_rows(busy, bare)[1:]]
    ['1.00x', '1.50x', '1.00x', '2.00x', '1.33x', '1.18x', '50% of the counted busy time']
    """
    pipeline = {key: busy_ms.get(key, 0) / 1000 for key, _ in KERNEL_STAGES}
    rows = [("kernel stage", "pipeline busy", "bare kernel", "ratio")]
    rows += [ratio_row(label, pipeline[key], bare[key]) for key, label in KERNEL_STAGES]
    for label, keys in (
        ("gensim, faiss and the validity kernel", ISSUE_KERNELS),
        ("the four", [key for key, _ in KERNEL_STAGES]),
    ):
        rows.append(
            ratio_row(label, sum(pipeline[key] for key in keys), sum(bare[key] for key in keys))
        )
    counted = sum(busy_ms.values()) / 1000
    rest = counted - sum(pipeline.values())
    rows.append(
        ("the rest", f"{rest:.0f}s", "-", f"{100 * rest / counted:.0f}% of the counted busy time")
    )
    return rows


def ratio_row(label: str, pipeline: float, bare: float) -> tuple[str, ...]:
    """ "-" for a stage the run did not have (no validity model: no sentence encoder)."""
    ratio = f"{pipeline / bare:.2f}x" if bare > 0 else "-"
    return (label, f"{pipeline:.1f}s", f"{bare:.1f}s", ratio)
