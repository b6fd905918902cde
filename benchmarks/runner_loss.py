"""Does Beam's local runner deliver every element? Its running modes side by side.

Two 124k-image closed-sets runs (2 workers, ``multi_processing``) failed the publish
guard: contiguous runs of one stage's output never reached the next stage, with no error
and no log line. This pipeline has the same shape with nothing of ours in it: parts that
emit records and leftovers, the leftovers grouped on one key into a second stage, both
outputs flattened and grouped by shard, as the writer does. It counts what arrives::

    .venv/bin/python -m benchmarks.runner_loss
    .venv/bin/python -m benchmarks.runner_loss --copies 2 --runs 3

``--copies 2`` runs two pipelines at once, so that the machine's cores are contended, as
when a laptop does other work. A run loses when fewer records arrive than were emitted.
Each mode runs with Beam's default flushing of the data streams (``timed``: by size and
every second) and with this project's (``size``: by size only, ``flush_by_size_only``).
"""

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from pipelines.runner import flush_by_size_only, run_to_completion
from transforms.dataset.write import shard_of

MODES = {"in_memory": 1, "multi_threading": 2, "multi_processing": 2}
# How the runner's gRPC data streams flush: Beam's default (by size, and every second), or
# by size only, as pipelines/runner.py sets it.
FLUSHES = ("timed", "size")
SHARDS = 20
SHAPE = ("parts", "per_part", "border", "size")  # the flags that size the pipeline


def part_records(part: int, per_part: int, text: str):
    """A part's records, and a leftover that goes on to the one-key stage."""
    for i in range(per_part):
        yield {"id": f"part-{part}-{i}", "text": text}
    yield beam.pvalue.TaggedOutput("leftovers", ("split", part))


def border_records(keyed: tuple, border: int, text: str):
    """A split's leftovers, all in one element -> records (closed sets' border pass)."""
    yield from ({"id": f"border-{i}", "text": text} for i in range(border))


def sharded(record: dict) -> tuple[int, dict]:
    return shard_of(record["id"], SHARDS), record


def count_arrived(grouped: tuple[int, dict]) -> None:
    for record in grouped[1]["records"]:
        Metrics.counter("arrived", record["id"].split("-")[0]).inc()


def arrived(
    mode: str, flush: str, parts: int, per_part: int, border: int, size: int
) -> dict[str, int]:
    """{"part": n, "border": m}: the records of each source that reached the last stage."""
    if flush == "size":
        flush_by_size_only()
    text = "x" * size
    flags = [f"--direct_num_workers={MODES[mode]}", f"--direct_running_mode={mode}"]
    pipeline = beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions(flags))
    formed = (
        pipeline
        | beam.Create(range(parts))
        | "Spread" >> beam.Reshuffle()
        | "Parts"
        >> beam.FlatMap(part_records, per_part, text).with_outputs("leftovers", main="records")
    )
    bordered = (
        formed.leftovers
        | beam.GroupByKey()
        | "Border" >> beam.FlatMap(border_records, border, text)
    )
    keyed = (formed.records, bordered) | beam.Flatten() | "Shard" >> beam.Map(sharded)
    every = pipeline | "EveryShard" >> beam.Create([(s, None) for s in range(SHARDS)])
    _ = {"records": keyed, "shard": every} | beam.CoGroupByKey() | beam.Map(count_arrived)
    counters = run_to_completion(pipeline)
    return {source: counters.get(f"arrived/{source}", 0) for source in ("part", "border")}


def trial(mode: str, flush: str, copies: int, sizes: list[str]) -> list[dict]:
    """``copies`` runs at once, each in its own process: what each emitted and received."""
    command = [sys.executable, "-m", "benchmarks.runner_loss", "--one", mode, "--flushes", flush]
    with ThreadPoolExecutor(copies) as pool:
        done = pool.map(
            lambda _: subprocess.run([*command, *sizes], capture_output=True, check=True),
            range(copies),
        )
        return [json.loads(run.stdout.decode().splitlines()[-1]) for run in done]


def table(rows: list[tuple]) -> str:
    lines = [
        "| mode | flush | runs | runs that lost records | records lost | mean wall s |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {mode} | {flush} | {runs} | {losing} | {lost:,} | {wall:.1f} |"
        for mode, flush, runs, losing, lost, wall in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(MODES), help="running modes, comma-separated")
    parser.add_argument(
        "--flushes", default=",".join(FLUSHES), help="timed (Beam's default), size (ours), or both"
    )
    parser.add_argument("--runs", type=int, default=3, help="trials per mode and flush")
    parser.add_argument("--copies", type=int, default=1, help="pipelines run at once per trial")
    parser.add_argument("--parts", type=int, default=16)
    parser.add_argument("--per_part", type=int, default=40_000, help="records each part emits")
    parser.add_argument(
        "--border", type=int, default=170_000, help="records the one-key stage emits"
    )
    parser.add_argument("--size", type=int, default=1200, help="bytes of text per record")
    parser.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)  # a single run, as JSON
    args = parser.parse_args(argv)
    shape = [getattr(args, name) for name in SHAPE]
    if args.one:
        started = time.perf_counter()
        counts = arrived(args.one, args.flushes, *shape)
        expected = args.parts * args.per_part + args.border
        print(
            json.dumps(
                {"lost": expected - sum(counts.values()), "wall": time.perf_counter() - started}
            )
        )
        return 0
    sizes = [f"--{name}={value}" for name, value in zip(SHAPE, shape, strict=True)]
    rows = []
    for mode in args.modes.split(","):
        for flush in args.flushes.split(","):
            runs = [run for _ in range(args.runs) for run in trial(mode, flush, args.copies, sizes)]
            lost = [run["lost"] for run in runs]
            wall = sum(run["wall"] for run in runs) / len(runs)
            rows.append((mode, flush, len(runs), sum(n > 0 for n in lost), sum(lost), wall))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
