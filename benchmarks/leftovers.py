"""The border pass's leftover graphs offline, on a stopped closed-sets run's own leftovers.

A closed_sets run stopped in its leftover graphs (the cc3m run, 3.5 hours here) leaves the
batches the border pass reads in ``corpus/leftovers/``. This runs ``searched_deeper`` and
``leftover_graphs`` on a seeded sample of them, as the border pass does, in one process,
and counts the rows each of ``LEFTOVER_DEPTHS`` searched: what a leftover costs at that
corpus size, part by part, and why::

    .venv/bin/python -m benchmarks.leftovers --version OUT/cc3m/versions/ID
    .venv/bin/python -m benchmarks.leftovers --version OUT/closed_sets/latest --sampled

``--sampled`` takes any version with its corpus (a finished one too): it samples captions
of the split, searches them as the allowed pairs' stage does and counts every caption of
the split as waiting, as though every one were left over (87% were at 124k images, 99%
at 3.3M captions). So two corpus sizes compare side by side, by one method.

The sample runs twice; the table is of the second pass, with the mapped files warm, as a
worker has them after its first minutes. ``RUN_FLAGS`` must be the run's own (the
defaults, for the benchmark's runs): a stopped run has no manifest to read them from.
"""

import argparse
import glob
import io
import os
import pickle
import sys
import time
from collections.abc import Iterator

import numpy as np

from pipelines.options import GenerateOptions
from schemas.layout import LEFTOVERS_DIRECTORY, corpus_folder
from transforms.corpus.neighbours import SearchableCorpus, load_searchable, search
from transforms.strategies.closed_sets import ClosedSets
from transforms.strategies.closed_sets.leftovers import (
    LEFTOVER_DEPTHS,
    leftover_graphs,
    searched_deeper,
)
from transforms.strategies.closed_sets.pairs import Edges, first_allowed
from transforms.strategies.closed_sets.parts import PartKey
from transforms.strategies.config import StrategyConfig
from transforms.strategies.validity import pairs_allowed

Batch = tuple[PartKey, Edges]
# generate's flags the leftover graphs depend on beyond closed sets' defaults: the index's
# search settings and the validity rule
RUN_FLAGS = ("neighbours", "validity_model", "validity_threshold")


def batches(folder: str) -> Iterator[tuple[tuple[str, int], Batch]]:
    """Every spilled leftover batch under ``folder``, file by file (``spill._Spill``'s form:
    pickled (key, value) pairs in a row), each with where it starts: (path, offset)."""
    for path in sorted(glob.glob(os.path.join(folder, "*.pickles"))):
        with open(path, "rb") as handle:
            stream = io.BytesIO(handle.read())
        size = stream.getbuffer().nbytes
        while stream.tell() < size:
            start = stream.tell()
            yield (path, start), pickle.load(stream)


def batch_at(path: str, start: int) -> Batch:
    """The batch :func:`batches` found at ``start`` of ``path``."""
    with open(path, "rb") as handle:
        handle.seek(start)
        return pickle.load(handle)


def searched_edges(
    searchable: SearchableCorpus, split: str, rows: np.ndarray, config: StrategyConfig,
    scratch: np.ndarray, searched: int,
) -> Edges:  # fmt: skip
    """``rows``' edges as the allowed pairs' stage hands them on: the ``searched`` nearest
    captions of the split, the K nearest allowed ones of them first."""
    corpus, pool, k = searchable.corpus, searchable.pools[split], config.options.set_neighbours
    candidates, sim_pv = search(corpus, pool, rows, searched)
    allowed, _ = pairs_allowed(corpus, rows, candidates, sim_pv, config.rules, scratch, need=k)
    return Edges(rows, *first_allowed(candidates, sim_pv, allowed, k))


def stopped_leftovers(version: str, sample: int, seed: int) -> tuple[list[Batch], np.ndarray, int]:
    """A seeded sample of a stopped run's leftover batches, which captions wait for a set
    (``leftovers.Waiting``), and how many leftovers there are."""
    folder = os.path.join(corpus_folder(version), LEFTOVERS_DIRECTORY)
    waiting, starts, total = np.zeros(0, bool), [], 0
    for start, (_, edges) in batches(folder):  # one read of them all, for the waiting rows
        if len(edges.targets) and edges.targets.max() >= len(waiting):
            waiting = np.pad(waiting, (0, int(edges.targets.max()) + 1 - len(waiting)))
        waiting[edges.targets] = True
        starts.append(start)
        total += len(edges.targets)
    if not starts:
        raise SystemExit(f"{folder}: no leftover batches (the run was not stopped in that stage)")
    chosen = np.random.default_rng(seed).choice(len(starts), min(sample, len(starts)), False)
    return [batch_at(*starts[number]) for number in sorted(chosen)], waiting, total


def sampled_leftovers(
    searchable: SearchableCorpus, config: StrategyConfig, sample: int, seed: int,
    scratch: np.ndarray, split: str = "train",
) -> tuple[list[Batch], np.ndarray, int]:  # fmt: skip
    """``sample`` batches of the split's captions, searched, with every caption of the split
    waiting: :func:`stopped_leftovers`' form for any version."""
    rows, searched = searchable.pools[split].rows, ClosedSets.searched(config)
    size = min(len(rows), sample * config.batch_size)
    chosen = np.sort(np.random.default_rng(seed).choice(rows, size, replace=False))
    picked = [
        ((split, -1, ""), searched_edges(searchable, split, part, config, scratch, searched))
        for part in np.array_split(chosen, -(-size // config.batch_size))
    ]
    waiting = np.zeros(len(searchable.corpus), bool)
    waiting[rows] = True
    return picked, waiting, len(rows)


def measure(
    version: str, sample: int, seed: int, options: GenerateOptions, *, sampled: bool = False
) -> list[str]:
    config = options.strategy_config(worker_threads=1)
    searched = ClosedSets.searched(config)
    if not os.path.isdir(corpus_folder(version)):
        raise SystemExit(f"{version}: not a version (no {corpus_folder(version)})")
    if not sampled:  # read first: the leftovers' folder may be missing
        picked, waiting, total = stopped_leftovers(version, sample, seed)
    searchable = load_searchable(corpus_folder(version), config.decoy_pool, config.index)
    corpus = searchable.corpus
    scratch = corpus.ngrams.scratch()
    if sampled:
        picked, waiting, total = sampled_leftovers(searchable, config, sample, seed, scratch)
    for _ in range(2):  # the first pass warms the mapped files and numba's kernels
        by_part: dict[tuple[str, int], np.ndarray] = {}
        for (split, part, _), edges in sorted(picked, key=lambda item: item[0][:2]):
            pool = searchable.pools[split]
            started = time.perf_counter()
            deeper, short = searched_deeper(
                corpus, pool, edges, config.rules, scratch, searched, waiting
            )
            middle = time.perf_counter()
            leftover_graphs(corpus, pool, deeper, config.rules, scratch)
            ended = time.perf_counter()
            row = np.array([len(edges.targets), *short, middle - started, ended - middle])
            by_part[split, part] = by_part.get((split, part), 0) + row
    depths = [f"searched {depth}x" for depth in LEFTOVER_DEPTHS]
    header = ["part", "leftovers", "ms a leftover", *depths, f"short after {LEFTOVER_DEPTHS[-1]}x"]
    lines = [
        f"{total:,} {'captions of the split' if sampled else 'leftovers'}; {len(picked)} "
        f"batches sampled (seed {seed}), {searched} searched first",
        "| " + " | ".join([*header, "deeper searches + walks ms", "graphs ms"]) + " |",
    ]
    for name, row in [*by_part.items(), (("all", -1), sum(by_part.values()))]:
        leftovers, *short, deeper_seconds, graph_seconds = row
        shares = [f"{rows / leftovers:.1%}" for rows in short]
        milliseconds = [1000 * seconds / leftovers for seconds in (deeper_seconds, graph_seconds)]
        part = name[0] if name[1] < 0 else f"{name[0]} {name[1]}"
        cells = [part, f"{leftovers:,.0f}", f"{sum(milliseconds):.2f}", *shares]
        lines.append("| " + " | ".join([*cells, *(f"{ms:.2f}" for ms in milliseconds)]) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", required=True, help="a stopped closed_sets run's version")
    parser.add_argument("--batches", type=int, default=24, help="leftover batches sampled")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sampled", action="store_true", help="sampled captions, not a stopped run's leftovers"
    )
    for name in RUN_FLAGS:
        parser.add_argument(f"--{name}", type=type(getattr(GenerateOptions, name)))
    args = parser.parse_args(argv)
    given = {name: getattr(args, name) for name in RUN_FLAGS}
    options = GenerateOptions(
        input="", output="", decoys=ClosedSets.name,
        **{name: value for name, value in given.items() if value is not None},
    )  # fmt: skip
    lines = measure(args.version, args.batches, args.seed, options, sampled=args.sampled)
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
