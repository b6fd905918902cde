"""Growth with corpus size: wall time, peak memory and stage costs of closed-sets runs.

    .venv/bin/python -m benchmarks.scale --runs closed_sets --num_images 25000 --output out/b25k
    .venv/bin/python -m benchmarks.scale --runs closed_sets --output out/b124k
    .venv/bin/python -m benchmarks.scale --runs cc3m --max_rss_gib 22 --output out/cc3m
    .venv/bin/python -m benchmarks.growth out/b25k/results.json out/b124k/results.json \\
        out/cc3m/results.json --plot docs/scale-growth.png

Reads the ``results.json`` each benchmark run adds to (the closed-sets runs on 2
workers) and prints, per corpus size, wall time, peak RSS, and each stage's busy
seconds per 100k captions. Near-linear growth keeps those per-caption costs flat; the
stage whose cost per caption rises most (in seconds) from the smallest corpus to the
largest is the one that bends the curve. The plot shows wall time and peak RSS against the
number of captions, beside proportional growth from the smallest run.
"""

import argparse
import json
import sys

import numpy as np
from matplotlib.figure import Figure

from benchmarks.scale import LABELS, STAGES, print_table
from transforms.report.plots import png_bytes

PER = 100_000  # stage costs are given per this many captions


def load_points(paths: list[str]) -> tuple[list[dict], list[dict]]:
    """The closed-sets runs on 2 workers in the ``results.json`` files, by corpus size (a
    later file's run of the same size replaces an earlier one's): (completed, stopped at
    the benchmark's ``--max_rss_gib``)."""
    points = {}
    for path in paths:
        with open(path) as handle:
            for entry in json.load(handle).values():
                if entry["decoys"] == "closed_sets" and entry["workers"] == 2:
                    points[entry["images"] * entry["captions_per_image"]] = entry
    ordered = [points[size] for size in sorted(points)]
    return (
        [entry for entry in ordered if "wall_s" in entry],
        [entry for entry in ordered if "stopped_after_s" in entry],
    )


def per_caption(point: dict) -> dict[str, float]:
    """Busy seconds of each stage the run has, per ``PER`` captions."""
    return {key: ms / 1000 * PER / point["captions"] for key, ms in point["stages_ms"].items()}


def bending_stage(points: list[dict]) -> tuple[str, float, float]:
    """The stage whose busy time per caption grows most, in seconds per ``PER`` captions,
    from the smallest corpus to the largest: (its label, before, after). A small stage
    that triples bends the curve less than a large one that grows by half.

    >>> bending_stage([{"captions": 10, "stages_ms": {"pv/train_ms": 1, "index/build_ms": 2}},
    ...                {"captions": 40, "stages_ms": {"pv/train_ms": 4, "index/build_ms": 12}}])
    ('index build', 20.0, 30.0)
    """
    first, last = per_caption(points[0]), per_caption(points[-1])
    key = max((key for key in first if key in last), key=lambda key: last[key] - first[key])
    return LABELS[key], first[key], last[key]


def growth_rows(points: list[dict]) -> list[tuple[str, ...]]:
    """A table: size, wall, peak RSS, wall per caption against the smallest run, and each
    stage's busy seconds per ``PER`` captions."""
    keys = [key for key, _ in STAGES if any(key in point["stages_ms"] for point in points)]
    rows = [
        ("images x captions", "captions", "wall", "peak RSS", "wall per caption",
         *(f"{LABELS[key]} /{PER // 1000}k" for key in keys)),
    ]  # fmt: skip
    base = points[0]["wall_s"] / points[0]["captions"]
    for point in points:
        costs = per_caption(point)
        rows.append(
            (
                f"{point['images']:,} x {point['captions_per_image']}",
                f"{point['captions']:,}",
                f"{point['wall_s'] / 60:.1f} min",
                f"{point['peak_rss_bytes'] / 2**30:.1f} GiB",
                f"{point['wall_s'] / point['captions'] / base:.2f}x",
                *(f"{costs[key]:.1f}s" if key in costs else "-" for key in keys),
            )
        )
    return rows


def growth_plot(points: list[dict], stopped: list[dict]) -> bytes:
    """Wall time and peak RSS against captions, with proportional growth from the first;
    runs stopped at the memory budget as crosses where they stopped."""
    captions = np.array([point["captions"] for point in points], dtype=float)
    ends = np.array([entry["images"] * entry["captions_per_image"] for entry in stopped])
    measures = (
        ("wall time (min)", "wall_s", "stopped_after_s", 60),
        ("peak RSS, all processes (GiB)", "peak_rss_bytes", "peak_rss_bytes", 2**30),
    )
    figure = Figure(figsize=(10, 3.8), layout="tight")
    for axis, (label, key, stopped_key, unit) in zip(figure.subplots(1, 2), measures, strict=True):
        values = np.array([point[key] / unit for point in points])
        axis.plot(captions / 1e6, values, "o-", label="measured")
        reach = np.concatenate([captions, ends]) if len(ends) else captions
        axis.plot(reach / 1e6, values[0] * reach / captions[0], "--", label="proportional")
        if stopped:
            at = [entry[stopped_key] / unit for entry in stopped]
            axis.plot(ends / 1e6, at, "x", markersize=10, label="stopped (memory budget)")
        for x, y in zip(captions / 1e6, values, strict=True):
            axis.annotate(f"{y:.1f}", (x, y), textcoords="offset points", xytext=(4, -12))
        axis.set_xlabel("captions (millions)")
        axis.set_ylabel(label)
        axis.legend(fontsize="small")
    figure.suptitle("closed sets, every default, 2 workers, this 2-core machine")
    return png_bytes(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", nargs="+", help="results.json files of benchmark runs")
    parser.add_argument("--plot", help="write the PNG here")
    args = parser.parse_args(argv)
    points, stopped = load_points(args.results)
    if len(points) < 2:
        parser.error("need closed-sets runs on 2 workers at two corpus sizes at least")
    print_table(growth_rows(points))
    stage, before, after = bending_stage(points)
    print(
        f"busy time per caption grows most in {stage}: {before:.1f}s -> {after:.1f}s per "
        f"{PER:,} captions from the smallest corpus to the largest"
    )
    for entry in stopped:
        print(
            f"stopped: {entry['images']:,} x {entry['captions_per_image']} captions, at "
            f"{entry['peak_rss_bytes'] / 2**30:.1f} GiB after "
            f"{entry['stopped_after_s'] / 60:.1f} min"
        )
    if args.plot:
        with open(args.plot, "wb") as handle:
            handle.write(growth_plot(points, stopped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
