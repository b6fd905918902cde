"""IVF index build time and recall against exact search, for k-means settings and scans
side by side.

The index build runs in one process (the global step of ``FindNeighbourhoods``), and
its time is the IVF training's k-means. This measures what fewer iterations or a
smaller training sample cost in recall, on a generated version's own PV vectors::

    .venv/bin/python -m benchmarks.index --embeddings OUT/versions/V/build/corpus/embeddings.npy
    .venv/bin/python -m benchmarks.index --embeddings ... --settings 10x64,5x40,4x40

Each setting is ``<iterations>x<points a cluster>``; the first is the baseline of the
ratio column. Recall@k is measured for the neighbours closed sets search (200) and
MC-IC's N (500), each with the default scan (``--ivf_scan``, ``--ivf_nprobe 0``). A
second table searches the default setting's index with each of ``--scans``: recall
against search time, the first scan the baseline.
"""

import argparse
import dataclasses
import sys
import time

import faiss
import numpy as np

from pipelines.options import GenerateOptions
from schemas.layout import BUILD, CORPUS_DIRECTORY, EMBEDDINGS_FILE
from transforms.corpus.index import IndexConfig, build_index, probes

SEARCHED = (200, 500)  # closed sets' K x depth, and MC-IC's N


def recall_at(
    index: faiss.Index, vectors: np.ndarray, asked: np.ndarray, truth: np.ndarray
) -> float:
    _, found = index.search(vectors[asked], truth.shape[1])
    return (
        float(np.mean([len(set(f) & set(t)) for f, t in zip(found, truth, strict=True)]))
        / (truth.shape[1])
    )


def measure(vectors: np.ndarray, settings: list[tuple[int, int]], queries: int, seed: int) -> str:
    asked = np.random.default_rng(seed).choice(
        len(vectors), min(queries, len(vectors)), replace=False
    )
    exact = faiss.IndexFlatIP(vectors.shape[1])
    exact.add(vectors)
    truth = {k: exact.search(vectors[asked], k)[1] for k in SEARCHED}
    defaults = GenerateOptions(input="", output="", seed=seed).index_config()
    rows = [
        f"{len(vectors):,} vectors of dim {vectors.shape[1]}, {len(asked):,} queries, "
        f"{faiss.omp_get_max_threads()} faiss threads",
        "| k-means | build | ratio | " + " | ".join(f"recall@{k}" for k in SEARCHED) + " |",
    ]
    baseline = None
    for iterations, points in settings:
        config = dataclasses.replace(
            defaults, exact_limit=0, kmeans_iterations=iterations, points_per_cluster=points
        )
        started = time.perf_counter()
        index = build_index(vectors, config)
        seconds = time.perf_counter() - started
        baseline = baseline or seconds
        recalls = []
        for k in SEARCHED:
            index.nprobe = probes(
                dataclasses.replace(config, neighbours=k), len(vectors), index.nlist
            )
            recalls.append(f"{recall_at(index, vectors, asked, truth[k]):.4f}")
        rows.append(
            f"| {iterations} x {points} a cluster (nlist {index.nlist}) | {seconds:.1f}s | "
            f"{baseline / seconds:.2f}x | " + " | ".join(recalls) + " |"
        )
    return "\n".join(rows)


def measure_scans(vectors: np.ndarray, scans: list[float], queries: int, seed: int) -> str:
    """Recall@k and search time of the default index at each scan (vectors a query scans,
    as a multiple of k), side by side."""
    asked = np.random.default_rng(seed).choice(
        len(vectors), min(queries, len(vectors)), replace=False
    )
    exact = faiss.IndexFlatIP(vectors.shape[1])
    exact.add(vectors)
    truth = {k: exact.search(vectors[asked], k)[1] for k in SEARCHED}
    config = dataclasses.replace(
        GenerateOptions(input="", output="", seed=seed).index_config(), exact_limit=0
    )
    index = build_index(vectors, config)
    rows = [
        "| --ivf_scan | " + " | ".join(f"nprobe, recall@{k}, search" for k in SEARCHED) + " |",
        "| ---: | " + " | ".join("---:" for _ in SEARCHED) + " |",
    ]
    baseline: dict[int, float] = {}
    for scan in scans:
        cells = []
        for k in SEARCHED:
            index.nprobe = probes(
                dataclasses.replace(config, neighbours=k, scan=scan), len(vectors), index.nlist
            )
            started = time.perf_counter()
            found = recall_at(index, vectors, asked, truth[k])
            seconds = time.perf_counter() - started
            baseline.setdefault(k, seconds)
            cells.append(f"{index.nprobe}, {found:.4f}, {seconds / baseline[k]:.2f}x")
        rows.append(f"| {scan:g} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def settings_of(text: str) -> list[tuple[int, int]]:
    """ "10x64,5x40" -> [(10, 64), (5, 40)]."""
    return [(int(a), int(b)) for a, b in (setting.split("x") for setting in text.split(","))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--embeddings",
        required=True,
        help=f"a version's {BUILD}/{CORPUS_DIRECTORY}/{EMBEDDINGS_FILE}",
    )
    default = f"10x64,{IndexConfig.kmeans_iterations}x{IndexConfig.points_per_cluster}"
    parser.add_argument("--settings", default=default, help=f"default: {default}")
    parser.add_argument(
        "--scans", default="", help="e.g. 20,24,30: also recall and search time at each scan"
    )
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    vectors = np.load(args.embeddings)
    print(measure(vectors, settings_of(args.settings), args.queries, args.seed), flush=True)
    if args.scans:
        scans = [float(scan) for scan in args.scans.split(",")]
        print(measure_scans(vectors, scans, args.queries, args.seed), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
