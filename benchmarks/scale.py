"""COCO-scale benchmark: end-to-end runs, the simSURF kernel against nltk, index recall.

    .venv/bin/python -m benchmarks.scale                      # 124k images (~600k captions)
    .venv/bin/python -m benchmarks.scale --num_images 5000    # a quick look
    .venv/bin/python -m benchmarks.scale --runs cc3m --max_rss_gib 22   # 3.3M captions

A small untimed run of each strategy first compiles numba's kernels into their cache, so
no timed stage counts the compilation. Prints tables: per run, wall time, busy time of
each stage (from the run's Beam counters, summed over workers; "-" where the run has no
such stage) and peak RSS of all processes; per checked run and split, the captions that are
the target of an instance (coverage) and the mean decoy simPV; then simSURF
pairs/s of the kernel and of nltk on the same pairs with their ratio and
largest difference; then recall@N of the IVF index against exact search on a
50k-caption sample and on the full corpus (of the first run). Each run's wall time,
peak RSS and stage times also go to ``<output>/results.json``, which
``benchmarks.growth`` plots against corpus size; a run whose processes pass
``--max_rss_gib`` is stopped there and recorded as stopped.

The cc3m run is the closed_sets run (the default strategy with all its
defaults, dim 256, 10 epochs, 2 workers) on a corpus of its own, whatever
--num_images and --captions_per_image say: 660,000 images with five captions
each, 3.3 million captions like Conceptual Captions. CC3M itself has one
caption per image, but 3.3 million one-caption images are beyond
make_corpus's 660,000 (the generator builds the whole document in memory:
1.3 GiB for 660,000 one-caption images, so some 7 GiB for 3.3 million), so
the benchmark matches CC3M's caption count, not its shape;
``--captions_per_image 1`` gives the shape at smaller sizes.
"""

import argparse
import collections
import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import faiss
import numpy as np
from nltk.translate.bleu_score import brevity_penalty, sentence_bleu

from benchmarks.kernels import ENCODER_SAMPLE, bare_kernels, drift_line, host_probe, kernel_rows
from pipelines.options import GenerateOptions
from pipelines.store.versions import completed_dataset, read_manifest
from schemas.layout import STATISTICS_FILE, corpus_folder, dataset_path
from tests.support.dataset_checks import (
    SPLITS,
    check_formats_agree,
    check_instances,
    check_validity,
    read_corpus,
    read_parquet,
    written_dataset,
)
from transforms.corpus.index import build_index
from transforms.corpus.store import load_corpus
from transforms.corpus.surface import encode_ngrams, sim_surf_batch
from transforms.corpus.synthetic import CAPTIONS_PER_IMAGE, write_coco
from transforms.files import read_json
from transforms.progress import LOAD
from transforms.strategies.closed_sets.leftovers import DEPTH_COUNTERS, LEFTOVER_DEPTHS
from transforms.strategies.invariants import no_decoy_describes_the_image
from transforms.strategies.registry import STRATEGIES
from transforms.trainer.dataset_audit import verdict

# generate's flags of the validity rule that the benchmark passes on: which encoder, and at
# what threshold (the tests pass a tiny one; the benchmark's own runs take the defaults)
VALIDITY_FLAGS = ("validity_model", "validity_threshold")
STAGES = (
    ("driver/inputs_ms", "input checksums"),
    ("driver/build_ms", "pipeline construction"),
    ("read/read_ms", "reading"),
    ("pv/train_ms", "PV training"),
    ("load/pv_model_ms", "PV model loads"),
    ("pv/infer_ms", "PV inference"),
    ("corpus/assemble_ms", "PV assembly"),
    ("load/sentence_encoder_ms", "encoder loads"),
    ("sentences/encode_ms", "sentence encoder"),
    ("sentences/assemble_ms", "encoder assembly"),
    ("corpus/encode_and_write_ms", "corpus n-grams + write"),
    ("index/build_ms", "index build"),
    ("load/corpus_ms", "corpus loads"),
    ("neighbourhoods/search_ms", "neighbour search"),
    ("decoys/choose_ms", "scoring + choice"),
    ("decoys/allowed_pairs_ms", "allowed pairs"),
    ("closed_sets/form_ms", "set forming"),
    ("closed_sets/leftover_graphs_ms", "leftover graphs"),
    ("closed_sets/grants_ms", "border grants"),
    ("closed_sets/border_ms", "border sets"),
    ("closed_sets/selections_ms", "set selections"),
    ("instances/build_ms", "instances"),
    ("spill/write_ms", "spill writes"),
    ("spill/read_ms", "spill reads"),
    ("write/write_ms", "writing"),
    ("driver/statistics_ms", "statistics"),
    ("driver/audit_ms", "text-only audit"),
    ("driver/card_and_inventory_ms", "card + inventory"),
)
LABELS = dict(STAGES)
# Stages that run in one process whatever the worker count.
ONE_PROCESS = {
    "driver/inputs_ms",
    "driver/build_ms",
    "pv/train_ms",
    "corpus/encode_and_write_ms",
    "corpus/assemble_ms",
    "sentences/assemble_ms",
    "index/build_ms",
    "driver/statistics_ms",
    "driver/audit_ms",
    "driver/card_and_inventory_ms",
}
# What each worker process pays once, whatever the worker count: loading the corpus or a
# model into its Shared handle (transforms.progress.timed_load). More workers do not shrink it.
PER_WORKER = {key for key, _ in STAGES if key.startswith(f"{LOAD}/")}


def timed_steps(manifest: dict) -> dict[str, int]:
    """A run's counters and the driver's own step times (the manifest keeps them apart)."""
    return {**manifest["metrics"], **manifest.get("timings", {})}


def amdahl(metrics: dict, wall: float, workers: int) -> dict:
    """Busy seconds in one process and in parallel stages, and the wall time projected for
    more workers: T(w) = rest + one-process + a worker's loads + the other parallel / w,
    where ``rest`` (what no stage counter times: starting the workers, moving elements
    between stages, the runner's own work) is taken not to shrink at all, so the projection
    is pessimistic.

    >>> busy = {"pv/train_ms": 10_000, "neighbourhoods/search_ms": 76_000, "load/corpus_ms": 4_000}
    >>> projection = amdahl(busy, 70, 2)
    >>> projection["share"], projection["rest"], round(projection[8]), round(projection[40])
    (0.1111111111111111, 20.0, 42, 34)
    """
    timed = {key: metrics.get(key, 0) / 1000 for key, _ in STAGES}
    serial = sum(seconds for key, seconds in timed.items() if key in ONE_PROCESS)
    parallel = sum(seconds for key, seconds in timed.items() if key not in ONE_PROCESS)
    loads = sum(seconds for key, seconds in timed.items() if key in PER_WORKER)
    rest = max(0.0, wall - serial - parallel / workers)
    projection = {"serial": serial, "parallel": parallel, "rest": rest}
    projection["share"] = serial / (serial + parallel) if serial + parallel else 0.0
    for count in (8, 40):
        projection[count] = rest + serial + loads / workers + (parallel - loads) / count
    return projection


def stage_speedups(one: dict, two: dict, least_ms: int = 1000) -> list[tuple[str, ...]]:
    """Each parallel stage's speed-up from 1 worker to 2: 1-worker busy (the stage's wall in
    one process) over half the 2-worker busy (its wall if the two share it evenly). A worker
    left idle at the stage's end is not seen here: that wait is in the uncounted time. The
    one worker runs on one core (:func:`on_cores`). Stages under ``least_ms`` on one worker
    are left out.

    >>> stage_speedups({"neighbourhoods/search_ms": 68_000, "pv/train_ms": 60_000},
    ...                {"neighbourhoods/search_ms": 107_000, "pv/train_ms": 62_000})[1:]
    [('neighbour search', '68s', '107s', '1.27x')]
    """
    rows = [("parallel stage", "1 worker busy", "2 workers busy", "speed-up")]
    for key, label in STAGES:
        if key in ONE_PROCESS or key in PER_WORKER or one.get(key, 0) < least_ms:
            continue
        seconds = one[key] / 1000, two.get(key, 0) / 1000
        speedup = f"{2 * seconds[0] / seconds[1]:.2f}x" if seconds[1] else "-"
        rows.append((label, f"{seconds[0]:.0f}s", f"{seconds[1]:.0f}s", speedup))
    return rows


def busy_shares(metrics: dict, largest: int = 3) -> str:
    """The ``largest`` stages' shares of the counted busy time, largest first: the sentence
    encoder's is a target of issue "Decoys that do not describe the image" (at most 35%).

    >>> busy_shares({"pv/train_ms": 1_000, "sentences/encode_ms": 3_000}, largest=2)
    'sentence encoder 75%, PV training 25%'
    """
    timed = {label: metrics.get(key, 0) for key, label in STAGES}
    total = sum(timed.values()) or 1
    ranked = sorted(timed.items(), key=lambda item: -item[1])[:largest]
    return ", ".join(f"{label} {100 * busy / total:.0f}%" for label, busy in ranked)


@dataclass(frozen=True)
class Run:
    label: str
    pv_dim: int
    pv_epochs: int
    workers: int
    decoys: str = "mcic"
    corpus: tuple[int, int] | None = None  # its own (images, captions per image), else the flags'
    cores: int = 0  # the cores its processes may run on (the first of this one's); 0: all


def on_cores(count: int) -> Callable[[], None] | None:
    """What a child process runs first to keep itself and its own children on the first
    ``count`` of this process's cores (None: on all). A worker on one core is the unit the
    1 -> 2 workers speed-ups compare, as on Dataflow, where each SDK process has its own vCPU
    and one thread (``runner.worker_threads``): on all the cores, one worker's PyTorch and
    faiss use both, and a second worker cannot speed their stages up."""
    if not count:
        return None
    first = set(sorted(os.sched_getaffinity(0))[:count])
    return lambda: os.sched_setaffinity(0, first)


# Reading a process's PSS walks its page tables: 0.06-0.11 s a worker at 1.2M captions. Every
# 0.5 s, beside the RSS, it took about 6% of the 2-core machine from the 250k run it measured.
PSS_EVERY = 5.0


def peak_rss_of_tree(root_pid: int, stop: threading.Event, result: list, limit: int) -> None:
    """Samples the summed RSS of a process and all its descendants, and the process's own
    (generate's: the local runner, which holds what crosses a shuffle in memory); kills the
    process group when the sum passes ``limit`` bytes (0: no limit). Appends both peaks,
    then the peak of the summed PSS (:func:`proportional_size`), read at most every
    ``PSS_EVERY`` seconds (and at the stop) when the summed RSS could raise it (PSS <= RSS)."""
    peak = root_peak = proportional_peak = 0
    proportional_read = -math.inf
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
        tree, stack = [], [root_pid]
        while stack:
            pid = stack.pop()
            tree.append(pid)
            stack.extend(children.get(pid, []))
        total = sum(rss.get(pid, 0) for pid in tree)
        peak, root_peak = max(peak, total), max(root_peak, rss.get(root_pid, 0))
        now, over = time.monotonic(), bool(limit) and total > limit
        if total > proportional_peak and (over or now - proportional_read >= PSS_EVERY):
            proportional_peak = max(proportional_peak, sum(map(proportional_size, tree)))
            proportional_read = now
        if over:
            os.killpg(root_pid, signal.SIGKILL)
            break
        stop.wait(0.5)
    result.extend((peak, root_peak, proportional_peak))


def proportional_size(pid: int) -> int:
    """A process's PSS in bytes (0 once it has exited): its RSS with each page it shares
    counted as its share. Summed over a run's processes it counts once what the workers
    map from one file (the sentence vectors, ``store.read_sentences``), which their summed
    RSS counts once per worker: 1.85 GB twice at 1.2M captions."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class OverBudget(Exception):
    """A run stopped because its processes passed ``--max_rss_gib``: (seconds, peak RSS)."""


def generate(
    corpus: str,
    output: str,
    run: Run,
    neighbours: int,
    held_out: int,
    max_rss: int = 0,
    validity: dict | None = None,
) -> dict:
    """One generate run, timed, its peak RSS sampled. OverBudget when it passes ``max_rss``
    bytes: a run too large for the machine stops before the machine runs out of memory.
    ``validity``: the validity rule's flags (VALIDITY_FLAGS), where not the defaults."""
    flags = {
        **(validity or {}),
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
        "log_file": f"{output}.progress.log",  # the stages' progress: stderr is not a terminal
    }
    if run.workers > 1:
        flags |= {"direct_running_mode": "multi_processing"}  # faiss: 1 thread a worker
    command = [sys.executable, "-m", "pipelines.generate"]
    command += [
        part
        for name, value in flags.items()
        for part in ((f"--{name}",) if value is None else (f"--{name}", str(value)))
    ]
    started = time.monotonic()
    with open(f"{output}.log", "w") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=on_cores(run.cores),
        )
        stop, peak = threading.Event(), []
        sampler = threading.Thread(target=peak_rss_of_tree, args=(process.pid, stop, peak, max_rss))
        sampler.start()
        code = process.wait()
        stop.set()
        sampler.join()
    if max_rss and peak[0] > max_rss:
        raise OverBudget(time.monotonic() - started, peak[0])
    if code:
        raise SystemExit(f"generate failed ({code}); see {output}.log")
    directory = completed_dataset(output)
    return {
        "wall": time.monotonic() - started,
        "peak_rss": peak[0],
        "runner_rss": peak[1],
        "peak_pss": peak[2],
        "manifest": read_manifest(directory),
        "directory": directory,
    }


RESULTS_FILE = "results.json"  # what benchmarks/growth.py plots, one entry per run


def run_entry(name: str, run: Run, size: tuple[int, int]) -> dict:
    """What results.json says of any run: which run, on what corpus."""
    images, per_image = size
    return {
        "run": name,
        "label": run.label,
        "decoys": run.decoys,
        "workers": run.workers,
        "images": images,
        "captions_per_image": per_image,
    }


def completed_entry(name: str, run: Run, result: dict) -> dict:
    """A completed run's entry: its wall time, peak RSS and stage busy times."""
    metrics = timed_steps(result["manifest"])
    return {
        **run_entry(name, run, result["corpus_size"]),
        "captions": metrics.get("corpus/captions", 0),
        "wall_s": round(result["wall"], 1),
        "peak_rss_bytes": result["peak_rss"],
        "runner_peak_rss_bytes": result["runner_rss"],
        "peak_pss_bytes": result["peak_pss"],
        "stages_ms": {key: metrics[key] for key, _ in STAGES if key in metrics},
        "commit": result["manifest"]["code"]["git_commit"],
    }


def record_result(path: str, entry: dict) -> None:
    """Adds a run's entry to ``path`` (other runs' entries in it are kept), for plotting
    growth across corpus sizes."""
    recorded = {}
    if os.path.exists(path):
        with open(path) as handle:
            recorded = json.load(handle)
    recorded[f"{entry['run']}@{entry['images']}x{entry['captions_per_image']}"] = entry
    with open(path, "w") as handle:
        json.dump(recorded, handle, indent=1, sort_keys=True)


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


def check_output(output: str, neighbours: int, decoys: str) -> dict:
    """The core invariants on a COCO-scale output (tests/support/dataset_checks.py).

    Every instance is checked structurally, and against the texts of its
    target's image; Parquet, TFRecord and text are compared on dev and test
    (the spec-level TFRecord reader is pure Python: too slow for train's
    ~550k records); the strategy's own invariants run on 50 sampled instances
    where they recompute (candidate lists come from the approximate index, so
    they are not compared with brute force; closed sets are checked set by set).
    Every corpus caption is a target or skipped as a decoy drop. Returns the
    number of instances checked and, per split, its captions, how many are
    targets and the mean decoy simPV.
    """
    strategy = STRATEGIES[decoys]
    num_options = strategy.num_options
    rows = {split: read_parquet(output, split) for split in SPLITS}
    corpus = read_corpus(output)
    split_of = {caption["caption_id"]: caption["split"] for caption in corpus}
    split_sizes = collections.Counter(split_of.values())
    splits = {}
    for split, split_rows in rows.items():
        check_instances(split_rows, num_options)
        if split != "train":
            check_formats_agree(output, split, split_rows, num_options)
        targets = {row["target_caption_id"] for row in split_rows}
        assert all(split_of[target] == split for target in targets), split
        sim_pv = np.array([value for row in split_rows for value in row["decoy_sim_pv"]])
        splits[split] = {
            "captions": split_sizes[split],
            "targets": len(targets),
            "instances": len(split_rows),
            "mean_decoy_sim_pv": float(np.nanmean(sim_pv)) if sim_pv.size else float("nan"),
        }
    manifest = read_manifest(output)
    skipped = manifest["statistics"]["skipped"]
    drops = sum(count for key, count in skipped.items() if key.startswith("decoys/"))
    assert sum(split["targets"] for split in splits.values()) + drops == len(corpus)
    every = [row for split_rows in rows.values() for row in split_rows]
    validity = {name: manifest["options"][name] for name in VALIDITY_FLAGS}
    options = GenerateOptions(
        input="", output=output, neighbours=neighbours, decoys=decoys, **validity
    )
    check_validity(corpus, every, surf_limit=options.surf_limit, sample=500)
    written = written_dataset(options, corpus, rows, sample=50)
    no_decoy_describes_the_image(written)
    for invariant in strategy.invariants:
        invariant(written)
    return {"instances": len(every), "splits": splits}


def write_corpus(directory: str, num_images: int, captions_per_image: int) -> str:
    path = os.path.join(directory, f"captions_synthetic_{num_images}x{captions_per_image}.json")
    started = time.monotonic()
    write_coco(path, seed=0, num_images=num_images, captions_per_image=captions_per_image)
    print(
        f"corpus: {num_images:,} images x {captions_per_image} captions written in "
        f"{time.monotonic() - started:.1f}s ({os.path.getsize(path) / 2**20:,.0f} MiB)",
        flush=True,
    )
    return path


def held_out_images(images: int) -> int:
    """Dev and test images each: the paper's 2,000 where the corpus allows."""
    return min(2000, images // 5)


def warm_up_size(neighbours: int) -> tuple[int, int]:
    """The warm-up corpus (images x captions): the fewest images whose dev and test splits
    hold ``neighbours`` candidates and a fifth more (duplicates go). At the default 500, 600
    images compile every kernel a 2,000-image run calls (the same 33 in an empty numba
    cache, 2026-11-29), in a quarter of that run's time."""
    return 6 * neighbours // CAPTIONS_PER_IMAGE, CAPTIONS_PER_IMAGE


def warm_up(corpus: str, output: str, runs: list[Run], neighbours: int, validity: dict) -> None:
    """One small untimed run of each strategy first: numba compiles the kernels once per
    install, into its cache beside the sources, and a timed run that did it would count the
    compilation in its stages, once in each worker (set forming at 25k: 41 busy s on 2
    workers of a fresh install, 11 s on 1 worker after it)."""
    started = time.monotonic()
    held_out = held_out_images(warm_up_size(neighbours)[0])
    for decoys in sorted({run.decoys for run in runs}):
        run = Run(f"warm-up ({decoys})", pv_dim=32, pv_epochs=1, workers=1, decoys=decoys)
        output_of_run = os.path.join(output, f"warm_up_{decoys}")
        generate(corpus, output_of_run, run, neighbours, held_out, validity=validity)
    print(f"kernels compiled in warm-up runs: {time.monotonic() - started:.0f}s", flush=True)


def run_line(name: str, run: Run, result: dict) -> str:
    """What a run was given and what it made: corpus, search, instances."""
    manifest = result["manifest"]
    counters, options = manifest["metrics"], manifest["options"]
    images, per_image = result["corpus_size"]
    if run.decoys == "closed_sets":
        search = (
            f"sets of 5 among K = {options.get('set_neighbours')} of "
            f"{options.get('set_neighbours', 0) * options.get('set_search_depth', 0):,} searched, "
            f"{counters.get('closed_sets/sets', 0):,} sets; {deeper_line(counters)}"
        )
    else:
        search = (
            f"N = {options['neighbours']}, {counters.get('decoys/scored_pairs', 0):,} pairs scored"
        )
    instances = sum(split["instances"] for split in manifest["statistics"]["splits"].values())
    return (
        f"{name}: {images:,} images x {per_image} captions, "
        f"{counters['corpus/captions']:,} after de-duplication; {search}; "
        f"{instances:,} instances"
    )


def deeper_line(counters: dict) -> str:
    """How many leftovers the border pass had, and how many it searched deeper at each
    depth: what a leftover costs grows with them.

    >>> deeper_line({"closed_sets/leftovers": 200, "closed_sets/leftovers_searched_4x": 100,
    ...              "closed_sets/leftovers_searched_16x": 50})
    '200 leftovers: 50% searched 4x deeper, 25% 16x, 0% short after'
    """
    total = counters.get("closed_sets/leftovers", 0)
    shares = [counters.get(f"closed_sets/{name}", 0) / (total or 1) for name in DEPTH_COUNTERS]
    depths = [f"{shares[0]:.0%} searched {LEFTOVER_DEPTHS[0]}x deeper"]
    deeper = zip(LEFTOVER_DEPTHS[1:], shares[1:-1], strict=True)
    depths += [f"{share:.0%} {depth}x" for depth, share in deeper]
    return f"{total:,} leftovers: {', '.join(depths)}, {shares[-1]:.0%} short after"


def print_table(rows: list[tuple]) -> None:
    for row in rows:
        print("| " + " | ".join(row) + " |")


ALL_RUNS = {
    "scale": Run("dim 256, 10 epochs, 2 workers", 256, 10, 2),
    "closed_sets": Run("closed sets: dim 256, 10 epochs, 2 workers", 256, 10, 2, "closed_sets"),
    "closed_sets_1worker": Run(
        "closed sets: dim 256, 10 epochs, 1 worker on 1 core", 256, 10, 1, "closed_sets", cores=1
    ),
    "1worker": Run("dim 256, 10 epochs, 1 worker on 1 core", 256, 10, 1, cores=1),
    "paper": Run("paper: dim 1024, 5 epochs, 2 workers", 1024, 5, 2),
    "cc3m": Run(
        "cc3m: closed sets, 3.3M captions, dim 256, 10 epochs, 2 workers",
        256,
        10,
        2,
        "closed_sets",
        corpus=(660_000, 5),
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--num_images", type=int, default=124_000)
    parser.add_argument(
        "--captions_per_image",
        type=int,
        default=CAPTIONS_PER_IMAGE,
        help="of the synthetic corpus (1: Conceptual Captions' shape; default: 5)",
    )
    parser.add_argument("--neighbours", type=int, default=500)
    parser.add_argument("--output", default="out/benchmark")
    for name in VALIDITY_FLAGS:  # the generate runs' own, where given (their defaults: its)
        parser.add_argument(f"--{name}", type=type(getattr(GenerateOptions, name)))
    parser.add_argument(
        "--max_rss_gib",
        type=float,
        default=0,
        help="stop a run whose processes pass this many GiB together, and go on with the "
        "next (0: no limit; issue 45 gives the cc3m run 22)",
    )
    parser.add_argument(
        "--runs",
        default="closed_sets,closed_sets_1worker,scale,1worker,paper",
        help="which of: closed_sets (the default strategy, dim 256, 10 epochs, 2 workers), "
        "closed_sets_1worker (the same on 1 worker on 1 core), scale (mcic, dim 256, 10 "
        "epochs, 2 workers), 1worker (scale on 1 worker on 1 core), paper (mcic, dim 1024, "
        "5 epochs, 2 workers), "
        "cc3m (closed_sets on its own corpus of 660,000 images x 5 captions)",
    )
    args = parser.parse_args(argv)
    validity = {
        name: getattr(args, name) for name in VALIDITY_FLAGS if getattr(args, name) is not None
    }
    max_rss = int(args.max_rss_gib * 2**30)
    names = args.runs.split(",")
    unknown = [name for name in names if name not in ALL_RUNS]
    if unknown:
        parser.error(f"unknown runs {', '.join(unknown)}; the runs are {', '.join(ALL_RUNS)}")
    os.makedirs(args.output, exist_ok=True)
    corpora: dict[tuple[int, int], str] = {}
    results = {}
    results_path = os.path.join(args.output, RESULTS_FILE)
    probed = host_probe()  # beside the bare kernels' probe: the host's drift over the runs
    small = warm_up_size(args.neighbours)
    corpora[small] = write_corpus(args.output, *small)
    runs = [ALL_RUNS[name] for name in names]
    warm_up(corpora[small], args.output, runs, args.neighbours, validity)
    for name in names:
        run = ALL_RUNS[name]
        size = run.corpus or (args.num_images, args.captions_per_image)
        if size not in corpora:
            corpora[size] = write_corpus(args.output, *size)
        output = os.path.join(args.output, name)
        held_out = held_out_images(size[0])
        try:
            result = generate(
                corpora[size], output, run, args.neighbours, held_out, max_rss, validity
            )
        except OverBudget as stopped:
            seconds, peak = stopped.args
            print(
                f"stopped {run.label}: its processes passed --max_rss_gib "
                f"{args.max_rss_gib:g} ({peak / 2**30:.1f} GiB) after {seconds / 60:.1f} min",
                flush=True,
            )
            entry = {"stopped_after_s": round(seconds, 1), "peak_rss_bytes": peak}
            record_result(results_path, {**run_entry(name, run, size), **entry})
            continue
        results[name] = {**result, "corpus_size": size}
        print(f"ran {run.label}: {result['wall']:.0f}s", flush=True)
        record_result(results_path, completed_entry(name, run, results[name]))
    if not results:
        return 1

    coverage = [
        ("run", "split", "captions", "targets", "coverage", "instances", "mean decoy simPV")
    ]
    for name, result in results.items():
        if ALL_RUNS[name].workers > 1 and ALL_RUNS[name].pv_dim == 256:
            checked = check_output(result["directory"], args.neighbours, ALL_RUNS[name].decoys)
            print(f"invariants hold on all {checked['instances']:,} instances of the {name} run")
            for split, counts in checked["splits"].items():
                share = counts["targets"] / counts["captions"] if counts["captions"] else 0.0
                coverage.append(
                    (
                        name,
                        split,
                        f"{counts['captions']:,}",
                        f"{counts['targets']:,}",
                        f"{100 * share:.1f}%",
                        f"{counts['instances']:,}",
                        f"{counts['mean_decoy_sim_pv']:.3f}",
                    )
                )
    peaks = ("peak RSS", "peak PSS", "runner's peak RSS")
    rows = [("run", *(label for _, label in STAGES), "wall", *peaks)]
    for name, result in results.items():
        metrics = timed_steps(result["manifest"])
        rows.append(
            (
                ALL_RUNS[name].label,
                *(f"{metrics[key] / 1000:.0f}s" if key in metrics else "-" for key, _ in STAGES),
                f"{result['wall'] / 60:.1f} min",
                f"{result['peak_rss'] / 2**30:.1f} GiB",
                f"{result['peak_pss'] / 2**30:.1f} GiB",
                f"{result['runner_rss'] / 2**30:.1f} GiB",
            )
        )
    print()
    for name, result in results.items():
        print(run_line(name, ALL_RUNS[name], result))
    print("stage times are busy seconds summed over workers (= wall for one worker)")
    print_table(rows)
    for name, result in results.items():
        shares = busy_shares(timed_steps(result["manifest"]))
        print(f"largest shares of the counted busy time, {ALL_RUNS[name].label}: {shares}")
    for one, two in (("closed_sets_1worker", "closed_sets"), ("1worker", "scale")):
        if one in results and two in results:
            speedup = results[one]["wall"] / results[two]["wall"]
            print(f"{two}: 1 -> 2 workers {speedup:.2f}x faster end to end")
            print_table(
                stage_speedups(
                    timed_steps(results[one]["manifest"]), timed_steps(results[two]["manifest"])
                )
            )
    print()
    print("one-process stages: " + ", ".join(label for key, label in STAGES if key in ONE_PROCESS))
    projections = [
        ("run", "one-process busy", "parallel busy", "one-process share", "uncounted",
         "uncounted share", "8 workers", "40 workers"),
    ]  # fmt: skip
    for name, result in results.items():
        run = ALL_RUNS[name]
        projection = amdahl(timed_steps(result["manifest"]), result["wall"], run.workers)
        projections.append(
            (
                run.label,
                f"{projection['serial']:.0f}s",
                f"{projection['parallel']:.0f}s",
                f"{100 * projection['share']:.0f}%",
                f"{projection['rest']:.0f}s",
                f"{100 * projection['rest'] / result['wall']:.1f}%",
                f"{projection[8] / 60:.1f} min",
                f"{projection[40] / 60:.1f} min",
            )
        )
    print("Amdahl projection: uncounted time (what no stage times) held fixed, of the wall")
    print_table(projections)
    if len(coverage) > 1:
        print()
        print("coverage: the split's captions that are the target of an instance")
        print_table(coverage)
    for name, result in results.items():
        audit = read_json(dataset_path(result["directory"], STATISTICS_FILE)).get("text_only_audit")
        said = verdict(audit)["line"] if audit else "no text-only audit (no dev or test split)"
        print(f"{ALL_RUNS[name].label}: {said}")

    if "closed_sets" in results:  # the default strategy's run: its stages against bare kernels
        result = results["closed_sets"]
        manifest = result["manifest"]
        bare = bare_kernels(result["directory"], GenerateOptions(**manifest["options"]))
        busy = {key: value for key, value in timed_steps(manifest).items() if key in LABELS}
        print()
        print(
            "kernel stages against their bare kernels, on the closed_sets run's data, in this "
            f"process after the run (the encoder timed on at most {ENCODER_SAMPLE:,} of its "
            "texts, scaled to all)"
        )
        print_table(kernel_rows(busy, bare))
        print(drift_line(probed, host_probe()))

    first = next(iter(results.values()))
    loaded = load_corpus(corpus_folder(first["directory"]))
    documents = [tuple(text.split()) for text in loaded.captions["text"]]
    kernel = kernel_against_nltk(documents, pairs=20_000)
    del documents
    print()
    print(
        f"simSURF on {kernel['pairs']:,} pairs ({kernel['nonzero']:,} nonzero): "
        f"kernel {kernel['kernel_pairs_per_s']:,.0f} pairs/s, "
        f"nltk {kernel['nltk_pairs_per_s']:,.0f} pairs/s, "
        f"ratio {kernel['kernel_pairs_per_s'] / kernel['nltk_pairs_per_s']:,.0f}x, "
        f"max |difference| {kernel['max_abs_diff']:.1e}"
    )

    corpus = corpora[first["corpus_size"]]
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
