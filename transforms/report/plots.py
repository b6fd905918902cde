"""PNG plots of a dataset's statistics and of a trainer's metrics (matplotlib, no display).

Each function takes the JSON the pipelines already write (``statistics.json``,
``metrics.json``) and returns PNG bytes, so the plots show exactly what those
files say. The PNGs carry no software version or time: reruns write the same bytes.
"""

import io

import numpy as np
from matplotlib.figure import Figure  # not pyplot: no global state, no display needed

from schemas.layout import SIMILARITIES_PLOT, SKIPPED_PLOT, SPLIT_SIZES_PLOT
from transforms.corpus.split import SPLITS
from transforms.dataset.statistics import DECOY_MEASURES

MEASURE_LABELS = {"sim_pv": "simPV", "sim_surf": "simSURF", "score": "Score"}
# simPV is a cosine; simSURF a BLEU (0..1); Score, of the decoys kept, above 0
MEASURE_LOWS = {"sim_pv": -1.0, "sim_surf": 0.0, "score": 0.0}
TEXT_COLOUR, IMAGE_COLOUR = "#c44e52", "#4c72b0"
BEFORE_SPLIT = "before split"  # skipped before the captions were split


def png_bytes(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def measure_range(name: str, statistics: dict) -> tuple[float, float]:
    """The x range of a measure's histogram (:data:`MEASURE_LOWS` to 1), widened to -1 when
    some split's decoys go below that (a Score with a negative simPV, from a strategy that
    keeps any candidate)."""
    lowest = min(
        (split["decoys"][name].get("min", 0.0) for split in statistics["splits"].values()),
        default=0.0,
    )
    return (MEASURE_LOWS[name] if lowest >= MEASURE_LOWS[name] else -1.0), 1.0


def similarity_curves(statistics: dict) -> dict[str, tuple[tuple[float, float], list]]:
    """Per measure, its x range and one (label, edges, share of decoys) curve per split that
    has decoys, the bins cut to the range."""
    curves = {}
    for name in DECOY_MEASURES:
        low, high = measure_range(name, statistics)
        lines = []
        for split in SPLITS:
            values = statistics["splits"][split]["decoys"][name]
            if not values["count"]:
                continue
            edges = np.array(values["histogram"]["edges"])
            share = np.array(values["histogram"]["counts"]) / values["count"]
            inside = (edges[:-1] >= low) & (edges[1:] <= high)
            edges = edges[np.append(inside, False) | np.insert(inside, 0, False)]
            lines.append((f"{split} (mean {values['mean']:.3f})", edges, share[inside]))
        curves[name] = ((low, high), lines)
    return curves


def decoy_similarities(statistics: dict) -> bytes:
    """simPV, simSURF and Score of the chosen decoys: one panel each, one line per split."""
    figure = Figure(figsize=(13, 3.6), layout="tight")
    axes = figure.subplots(1, len(DECOY_MEASURES))
    curves = similarity_curves(statistics)
    for axis, (name, (limits, lines)) in zip(axes, curves.items(), strict=True):
        for label, edges, share in lines:
            axis.stairs(share, edges, label=label)
        axis.set_xlim(*limits)
        axis.set_title(f"decoy {MEASURE_LABELS[name]} to the target")
        axis.set_xlabel(MEASURE_LABELS[name])
        axis.set_ylabel("share of decoys")
        axis.legend(fontsize="small")
    return png_bytes(figure)


def split_sizes(statistics: dict) -> bytes:
    """Images and instances per split."""
    figure = Figure(figsize=(6, 3.6), layout="tight")
    axis = figure.subplots()
    positions = np.arange(len(SPLITS))
    for offset, key in ((-0.2, "images"), (0.2, "instances")):
        counts = [statistics["splits"][split][key] for split in SPLITS]
        bars = axis.bar(positions + offset, counts, width=0.4, label=key)
        axis.bar_label(bars, labels=[f"{count:,}" for count in counts], fontsize="small")
    axis.set_xticks(positions, SPLITS)
    axis.set_ylabel("count")
    axis.set_title("split sizes")
    axis.legend()
    return png_bytes(figure)


def skip_bars(statistics: dict) -> tuple[list[str], dict[str, list[int]]]:
    """Every skip reason, and per stage of the run its count of each: "before split" for
    what was dropped before the captions had a split (normalize/*: empty or duplicate
    captions), then each split's. The statistics count skips by split only for those
    with a split; the rest of a reason's total is the before-split share."""
    reasons = sorted(statistics["skipped"])
    by_split = {
        split: [statistics["splits"][split]["skipped"].get(r, 0) for r in reasons]
        for split in SPLITS
    }
    before = [
        statistics["skipped"][r] - sum(counts[row] for counts in by_split.values())
        for row, r in enumerate(reasons)
    ]
    return reasons, {BEFORE_SPLIT: before, **by_split}


def validity_bars(statistics: dict) -> list[tuple[str, int]]:
    """(rule, candidates it turned away) for each rule that turned some away."""
    return [
        (rule.split("/", 1)[-1], count) for rule, count in statistics["validity"].items() if count
    ]


def needs_log_scale(counts: list[int]) -> bool:
    """A log axis when the largest count is over a hundred times the smallest, so 25 beside
    5,013 still shows as a bar."""
    return bool(counts) and max(counts) > 100 * min(counts)


def skipped(statistics: dict) -> bytes:
    """Skipped captions by reason and stage; candidates the validity rules turned away.
    Each bar is labelled with its count."""
    reasons, stacks = skip_bars(statistics)
    rules = validity_bars(statistics)
    figure = Figure(figsize=(13, 3.6), layout="tight")
    left, right = figure.subplots(1, 2)
    rows = np.arange(len(reasons))
    start = np.zeros(len(reasons))
    for stage, counts in stacks.items():
        if any(counts):  # the last stack drawn ends at each reason's total: label it there
            outer = left.barh(rows, counts, left=start, label=stage)
            start += counts
    if reasons:  # room for the count labels at the bars' ends
        left.bar_label(outer, labels=[f"{int(total):,}" for total in start], padding=3)
        left.set_xlim(0, 1.15 * start.max())
        left.legend(fontsize="small", loc="lower right")
    right.margins(x=0.15)
    left.set_yticks(rows, reasons)
    left.set_xlabel("captions skipped")
    left.set_title("skipped captions by reason" if reasons else "no caption skipped")
    counts = [count for _, count in rules]
    bars = right.barh(np.arange(len(rules)), counts)
    right.bar_label(bars, labels=[f"{count:,}" for count in counts], padding=3)
    if needs_log_scale(counts):
        right.set_xscale("log")
    right.set_yticks(np.arange(len(rules)), [rule for rule, _ in rules])
    right.set_xlabel("candidates turned away" + (" (log scale)" if needs_log_scale(counts) else ""))
    right.set_title("validity rules" if rules else "validity rules turned nothing away")
    return png_bytes(figure)


# What ``generate`` writes beside the card: file name -> (caption, how it is drawn).
DATASET_PLOTS = {
    SIMILARITIES_PLOT: ("Decoy similarities per split", decoy_similarities),
    SPLIT_SIZES_PLOT: ("Split sizes", split_sizes),
    SKIPPED_PLOT: ("Skipped captions and validity rejections", skipped),
}


def dataset_plot_captions(statistics: dict) -> dict[str, str]:
    """The plots a version has (file name -> caption), without drawing them: the decoy
    similarities only when some decoy has them (edited decoys have none)."""
    similar = any(split["decoys"]["sim_pv"]["count"] for split in statistics["splits"].values())
    return {
        name: caption
        for name, (caption, _) in DATASET_PLOTS.items()
        if similar or name != SIMILARITIES_PLOT
    }


def dataset_plots(statistics: dict) -> dict[str, tuple[str, bytes]]:
    """File name -> (caption, PNG bytes) of the version's plots."""
    return {
        name: (caption, DATASET_PLOTS[name][1](statistics))
        for name, caption in dataset_plot_captions(statistics).items()
    }


def _model_label(row: dict) -> str:
    return f"{row['model']} (text)" if row["input"] == "text" else row["model"]


def accuracy(metrics: dict) -> bytes:
    """Accuracy per model and split with one-standard-deviation error bars; chance dashed.

    Text-only rows are drawn in their own colour and marked "(text)": anything they get
    above chance is solvable without the image. With an ``image_margin`` (dmc-evaluate), each
    split's title gives it.
    """
    models = metrics["models"]
    splits = [split for split in ("dev", "test") if any(split in row for row in models)]
    figure = Figure(figsize=(6 * len(splits), 0.45 * len(models) + 1.5), layout="tight")
    axes = figure.subplots(1, len(splits))
    for axis, split in zip(np.atleast_1d(axes), splits, strict=True):
        rows = [row for row in models if split in row]
        positions = np.arange(len(rows))[::-1]
        axis.barh(
            positions,
            [100 * row[split]["accuracy"] for row in rows],
            xerr=[100 * row[split]["std"] for row in rows],
            color=[TEXT_COLOUR if row["input"] == "text" else IMAGE_COLOUR for row in rows],
            capsize=3,
        )
        axis.set_yticks(positions, [_model_label(row) for row in rows])
        axis.axvline(100 * metrics["chance"], color="black", linestyle="--", label="chance")
        axis.set_xlim(0, 100)
        axis.set_xlabel("accuracy (%)")
        margin = metrics.get("image_margin", {}).get(split)  # dmc-evaluate's
        title = f"{split}: text-only rows red, image models blue"
        if margin:
            title += f"\nimage margin {100 * margin['margin']:+.1f} points"
        axis.set_title(title)
        axis.legend(fontsize="small", loc="lower right")
    return png_bytes(figure)
