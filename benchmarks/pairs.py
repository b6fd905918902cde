"""Closed sets' allowed pairs: every searched neighbour checked, against checking each
caption's neighbours only until it has its K allowed ones, side by side.

``_AllowedPairs`` keeps a caption's K (``--set_neighbours``) nearest neighbours that pass
the validity rules both ways round, out of the K x ``--set_search_depth`` searched. How
much stopping at the K-th allowed one saves depends on the corpus: on real captions
nearly every near pair is allowed. On a generated version's own corpus and indexes::

    .venv/bin/python -m benchmarks.pairs --dataset OUT/latest
    .venv/bin/python -m benchmarks.pairs --dataset OUT/latest --split dev --targets 1000

The version's own options (its manifest's) set K, the depth, the rules and the pools. The
check is the same in both rows, so are the K kept (the last column says so).
"""

import argparse
import sys
import time

import numpy as np

from pipelines.options import GenerateOptions
from pipelines.store.versions import read_manifest
from schemas.layout import corpus_folder
from transforms.corpus.neighbours import load_searchable, search
from transforms.strategies.closed_sets import ClosedSets
from transforms.strategies.closed_sets.pairs import first_allowed
from transforms.strategies.config import StrategyConfig
from transforms.strategies.validity import pairs_allowed


def version_config(version: str) -> StrategyConfig:
    """The closed-sets settings the version was generated with (its manifest's options)."""
    saved = read_manifest(version)["options"]
    if saved["decoys"] != ClosedSets.name:
        raise SystemExit(f"{version}: generated with --decoys {saved['decoys']}, not closed_sets")
    return ClosedSets.resolve(GenerateOptions(**saved).strategy_config())


def measure(version: str, split: str, targets: int, seed: int) -> str:
    strategy = version_config(version)
    k = strategy.options.set_neighbours
    searched = k * strategy.options.set_search_depth
    searchable = load_searchable(corpus_folder(version), strategy.decoy_pool, strategy.index)
    corpus, pool = searchable.corpus, searchable.pools[split]
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(pool.rows, min(targets, len(pool.rows)), replace=False))
    candidates, sim_pv = search(corpus, pool, rows, searched)
    scratch = corpus.ngrams.scratch()
    pairs_allowed(corpus, rows[:1], candidates[:1], sim_pv[:1], strategy.rules, scratch)  # JIT
    kept, lines, baseline, share = [], [], None, 0.0
    for label, need in ((f"all {searched} searched", 0), (f"until {k} allowed", k)):
        started = time.perf_counter()
        allowed, rejected = pairs_allowed(
            corpus, rows, candidates, sim_pv, strategy.rules, scratch, need=need
        )
        seconds = time.perf_counter() - started
        baseline = baseline or seconds
        if not need:  # the full check: the share of all searched pairs that are allowed
            share = float(allowed.mean())
        kept.append(first_allowed(candidates, sim_pv, allowed, k)[0])
        checked = int(allowed.sum() + rejected.sum())
        lines.append(
            f"| {label} | {seconds:.2f}s | {baseline / seconds:.2f}x | {checked:,} | "
            f"{(kept[-1] == kept[0]).all()} |"
        )
    return "\n".join(
        [
            f"{len(rows):,} {split} captions of {len(pool.rows):,}, {searched} neighbours each; "
            f"{share:.1%} of searched pairs allowed",
            "| check | time | ratio | pairs checked | same K kept |",
            *lines,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="a generated version's directory")
    parser.add_argument("--split", default="train")
    parser.add_argument("--targets", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(measure(args.dataset, args.split, args.targets, args.seed), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
