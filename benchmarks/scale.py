"""COCO-scale benchmark: end-to-end runs, the simSURF kernel against nltk, index recall.

    .venv/bin/python -m benchmarks.scale                      # 124k images (~600k captions)
    .venv/bin/python -m benchmarks.scale --num_images 5000    # a quick look

Prints one table: per run, wall time, busy time of each stage (from the
run's Beam counters, summed over workers) and peak RSS of all processes;
then simSURF pairs/s of the kernel and of nltk on the same pairs with their
ratio and largest difference; then recall@N of the IVF index against exact
search on a 50k-caption sample and on the full corpus.
"""

import argparse
import dataclasses
import os
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass

import faiss
import numpy as np
import pyarrow.parquet as pq
from nltk.translate.bleu_score import brevity_penalty, sentence_bleu

from pipelines.options import GenerateOptions
from pipelines.versions import completed_dataset, read_manifest
from tests.dataset_checks import (
    check_closed_sets,
    check_decoys_recomputed,
    check_formats_agree,
    check_instances,
    check_validity,
    read_parquet,
)
from transforms.corpus.index import build_index
from transforms.corpus.store import load_corpus
from transforms.corpus.surface import encode_ngrams, sim_surf_batch
from transforms.corpus.synthetic import write_coco

STAGES = (
    ("pv/train_ms", "PV training"),
    ("corpus/encode_and_write_ms", "corpus n-grams + write"),
    ("index/build_ms", "index build"),
    ("neighbourhoods/search_ms", "neighbour search"),
    ("decoys/choose_ms", "scoring + choice"),
    ("decoys/allowed_pairs_ms", "allowed pairs"),
    ("closed_sets/form_ms", "set forming"),
)


@dataclass(frozen=True)
class Run:
    label: str
    pv_dim: int
    pv_epochs: int
    workers: int
    decoys: str = "mcic"


def peak_rss_of_tree(root_pid: int, stop: threading.Event, result: list) -> None:
    """Samples the summed RSS of a process and all its descendants."""
    peak = 0
    while not stop.is_set():
        children: dict[int, list[int]] = {}
        rss: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
                rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                continue
        total, stack = 0, [root_pid]
        while stack:
            pid = stack.pop()
            total += rss.get(pid, 0)
            stack.extend(children.get(pid, []))
        peak = max(peak, total)
        stop.wait(0.5)
    result.append(peak)


def generate(corpus: str, output: str, run: Run, neighbours: int, held_out: int) -> dict:
    flags = {
        "input": corpus,
        "output": output,
        "n_dev": held_out,
        "n_test": held_out,
        "pv_dim": run.pv_dim,
        "pv_epochs": run.pv_epochs,
        "pv_workers": run.workers,
        "neighbours": neighbours,
        "decoys": run.decoys,
        "direct_num_workers": run.workers,
        "force": None,  # a new version each time: an "up to date" run would time nothing
    }
    if run.workers > 1:
        flags |= {"direct_running_mode": "multi_processing", "search_threads": 1}
    command = [sys.executable, "-m", "pipelines.generate"]
    command += [
        part
        for name, value in flags.items()
        for part in ((f"--{name}",) if value is None else (f"--{name}", str(value)))
    ]
    started = time.monotonic()
    with open(f"{output}.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        stop, peak = threading.Event(), []
        sampler = threading.Thread(target=peak_rss_of_tree, args=(process.pid, stop, peak))
        sampler.start()
        code = process.wait()
        stop.set()
        sampler.join()
    if code:
        raise SystemExit(f"generate failed ({code}); see {output}.log")
    directory = completed_dataset(output)
    return {
        "wall": time.monotonic() - started,
        "peak_rss": peak[0],
        "manifest": read_manifest(directory),
        "directory": directory,
    }


def kernel_against_nltk(captions: list[tuple[str, ...]], pairs: int, seed: int = 0) -> dict:
    """Both on the same (target, candidate) pairs: neighbouring rows, similar captions."""
    rng = np.random.default_rng(seed)
    table = encode_ngrams(captions)
    targets = rng.integers(0, len(captions) - 64, size=pairs // 50)
    candidates = targets[:, None] + 1 + np.arange(50)[None, :]
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = np.array(
            [
                [
                    sentence_bleu([captions[t]], captions[c])
                    / brevity_penalty(len(captions[t]), len(captions[c]))
                    for c in row
                ]
                for t, row in zip(targets, candidates, strict=True)
            ]
        )
    nltk_seconds = time.perf_counter() - started
    scratch = table.scratch()
    sim_surf_batch(table, targets[:1], candidates[:1], scratch)  # compile outside the timing
    repeats = 50
    started = time.perf_counter()
    for _ in range(repeats):
        ours = sim_surf_batch(table, targets, candidates, scratch)
    kernel_seconds = (time.perf_counter() - started) / repeats
    return {
        "pairs": candidates.size,
        "nonzero": int((reference > 0).sum()),
        "nltk_pairs_per_s": candidates.size / nltk_seconds,
        "kernel_pairs_per_s": candidates.size / kernel_seconds,
        "max_abs_diff": float(np.abs(ours - reference).max()),
    }


def recall(embeddings: np.ndarray, options: GenerateOptions, queries: int, seed: int = 0) -> str:
    """recall@N of the IVF index (forced, default parameters) against exact search."""
    rng = np.random.default_rng(seed)
    asked = rng.choice(len(embeddings), size=min(queries, len(embeddings)), replace=False)
    exact = faiss.IndexFlatIP(embeddings.shape[1])
    exact.add(embeddings)
    _, truth = exact.search(embeddings[asked], options.neighbours)
    index = build_index(embeddings, dataclasses.replace(options.index_config(), exact_limit=0))
    _, found = index.search(embeddings[asked], options.neighbours)
    hits = np.mean([len(set(f) & set(t)) for f, t in zip(found, truth, strict=True)])
    return (
        f"{hits / options.neighbours:.4f} on {len(embeddings):,} captions "
        f"(nlist {index.nlist}, nprobe {index.nprobe}, {len(asked):,} queries)"
    )


def check_output(output: str, neighbours: int, decoys: str) -> int:
    """The core invariants on a COCO-scale output (tests/dataset_checks.py).

    Every instance is checked structurally, and against the texts of its
    target's image; Parquet, TFRecord and text are compared on dev and test
    (the spec-level TFRecord reader is pure Python: too slow for train's
    ~550k records); sampled decoys are recomputed with nltk. For mcic,
    candidate lists come from the approximate index, so they are not
    compared with brute force; closed sets are checked set by set. Returns
    the number of instances checked.
    """
    rows = {split: read_parquet(output, split) for split in ("train", "dev", "test")}
    corpus = pq.read_table(os.path.join(output, "corpus", "captions.parquet")).to_pylist()
    for split, split_rows in rows.items():
        check_instances(split_rows)
        if split != "train":
            check_formats_agree(output, split, split_rows)
        if decoys == "closed_sets":
            check_closed_sets(split_rows)
    every = [row for split_rows in rows.values() for row in split_rows]
    check_validity(corpus, every, surf_limit=0.5, sample=500)
    if decoys == "mcic":
        check_decoys_recomputed(
            output,
            every,
            neighbours=neighbours,
            lam=0.3,
            surf_limit=0.5,
            decoy_pool="all",
            sample=50,
            exact_search=False,
        )
    return len(every)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--num_images", type=int, default=124_000)
    parser.add_argument("--neighbours", type=int, default=500)
    parser.add_argument("--output", default="out/benchmark")
    parser.add_argument(
        "--runs",
        default="scale,closed_sets,1worker,paper",
        help="which of: scale (mcic, dim 256, 10 epochs, 2 workers), closed_sets (the same "
        "with closed-set decoys), 1worker (scale on 1 worker), paper (mcic, dim 1024, 5 epochs, "
        "2 workers)",
    )
    args = parser.parse_args(argv)
    all_runs = {
        "scale": Run("dim 256, 10 epochs, 2 workers", 256, 10, 2),
        "closed_sets": Run("closed sets: dim 256, 10 epochs, 2 workers", 256, 10, 2, "closed_sets"),
        "1worker": Run("dim 256, 10 epochs, 1 worker", 256, 10, 1),
        "paper": Run("paper: dim 1024, 5 epochs, 2 workers", 1024, 5, 2),
    }
    os.makedirs(args.output, exist_ok=True)
    corpus = os.path.join(args.output, f"captions_synthetic_{args.num_images}.json")
    started = time.monotonic()
    write_coco(corpus, seed=0, num_images=args.num_images)
    print(f"corpus: {args.num_images:,} images written in {time.monotonic() - started:.1f}s")

    results = {}
    for name in args.runs.split(","):
        run = all_runs[name]
        output = os.path.join(args.output, name)
        held_out = min(2000, args.num_images // 5)  # the paper's 2,000 where the corpus allows
        results[name] = generate(corpus, output, run, args.neighbours, held_out)
        print(f"ran {run.label}: {results[name]['wall']:.0f}s", flush=True)

    first_name = args.runs.split(",")[0]
    for name, result in results.items():
        if all_runs[name].workers > 1 and all_runs[name].pv_dim == 256:
            checked = check_output(result["directory"], args.neighbours, all_runs[name].decoys)
            print(f"invariants hold on all {checked:,} instances of the {name} run")
    first = results[first_name]
    counters = first["manifest"]["metrics"]
    captions_total = first["manifest"]["statistics"]
    rows = [("run", *(label for _, label in STAGES), "wall", "peak RSS")]
    for name, result in results.items():
        metrics = result["manifest"]["metrics"]
        rows.append(
            (
                all_runs[name].label,
                *(f"{metrics.get(key, 0) / 1000:.0f}s" for key, _ in STAGES),
                f"{result['wall'] / 60:.1f} min",
                f"{result['peak_rss'] / 2**30:.1f} GiB",
            )
        )
    print()
    print(
        f"corpus: {args.num_images:,} images, {counters['corpus/captions']:,} captions, "
        f"N = {args.neighbours}, {counters.get('decoys/scored_pairs', 0):,} pairs scored; "
        f"instances {sum(s['instances'] for s in captions_total['splits'].values()):,}"
    )
    print("stage times are busy seconds summed over workers (= wall for one worker)")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if "1worker" in results and "scale" in results:
        speedup = results["1worker"]["wall"] / results["scale"]["wall"]
        print(f"1 -> 2 workers: {speedup:.2f}x faster end to end")

    loaded = load_corpus(os.path.join(results[first_name]["directory"], "corpus"))
    documents = [tuple(text.split()) for text in loaded.captions["text"]]
    kernel = kernel_against_nltk(documents, pairs=20_000)
    print()
    print(
        f"simSURF on {kernel['pairs']:,} pairs ({kernel['nonzero']:,} nonzero): "
        f"kernel {kernel['kernel_pairs_per_s']:,.0f} pairs/s, "
        f"nltk {kernel['nltk_pairs_per_s']:,.0f} pairs/s, "
        f"ratio {kernel['kernel_pairs_per_s'] / kernel['nltk_pairs_per_s']:,.0f}x, "
        f"max |difference| {kernel['max_abs_diff']:.1e}"
    )

    options = GenerateOptions(input=corpus, output=args.output, neighbours=args.neighbours)
    sample = np.random.default_rng(1).choice(
        len(loaded), size=min(50_000, len(loaded)), replace=False
    )
    print(
        f"IVF recall@{args.neighbours}, sample: "
        f"{recall(loaded.embeddings[np.sort(sample)], options, queries=2000)}"
    )
    print(f"IVF recall@{args.neighbours}, all: {recall(loaded.embeddings, options, queries=1000)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
