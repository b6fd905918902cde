"""The statistics file: the paper's Table 1 plus what was skipped and why.

Per split: unique images and instances. Skips: one count per reason (and per
split where the record had one). Decoys: count, mean, min, max and a
histogram (bins of 0.05 over [-1, 1]) of simPV, simSURF and Score.
"""

import json
import math
from collections import Counter
from dataclasses import dataclass, field

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas.records import Skip
from transforms.split import SPLITS

DECOY_MEASURES = {"sim_pv": "decoy_sim_pv", "sim_surf": "decoy_sim_surf", "score": "decoy_score"}
HISTOGRAM_BINS = 40
BIN_WIDTH = 2.0 / HISTOGRAM_BINS


@dataclass
class Summary:
    """Count, sum, min, max and histogram of a stream of values in [-1, 1]."""

    count: int = 0
    total: float = 0.0
    low: float = math.inf
    high: float = -math.inf
    histogram: list[int] = field(default_factory=lambda: [0] * HISTOGRAM_BINS)

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.low, self.high = min(self.low, value), max(self.high, value)
        self.histogram[min(max(int((value + 1.0) / BIN_WIDTH), 0), HISTOGRAM_BINS - 1)] += 1

    def merge(self, other: "Summary") -> None:
        self.count += other.count
        self.total += other.total
        self.low, self.high = min(self.low, other.low), max(self.high, other.high)
        self.histogram = [a + b for a, b in zip(self.histogram, other.histogram, strict=True)]

    def describe(self) -> dict:
        empty = self.count == 0
        return {
            "count": self.count,
            "mean": None if empty else self.total / self.count,
            "min": None if empty else self.low,
            "max": None if empty else self.high,
            "histogram": {
                "edges": [round(-1.0 + i * BIN_WIDTH, 2) for i in range(HISTOGRAM_BINS + 1)],
                "counts": self.histogram,
            },
        }


class StatisticsFn(beam.CombineFn):
    """Instances and Skips -> the statistics dict."""

    def create_accumulator(self):
        return {
            "instances": Counter(),
            "images": {split: set() for split in SPLITS},
            "skipped": Counter(),
            "decoys": {name: Summary() for name in DECOY_MEASURES},
        }

    def add_input(self, accumulator, element):
        if isinstance(element, Skip):
            accumulator["skipped"][(element.reason, element.split)] += 1
            return accumulator
        accumulator["instances"][element["split"]] += 1
        accumulator["images"][element["split"]].add(element["image_id"])
        for name, column in DECOY_MEASURES.items():
            for value in element[column]:
                accumulator["decoys"][name].add(value)
        return accumulator

    def merge_accumulators(self, accumulators):
        merged = self.create_accumulator()
        for accumulator in accumulators:
            merged["instances"].update(accumulator["instances"])
            merged["skipped"].update(accumulator["skipped"])
            for split in SPLITS:
                merged["images"][split] |= accumulator["images"][split]
            for name in DECOY_MEASURES:
                merged["decoys"][name].merge(accumulator["decoys"][name])
        return merged

    def extract_output(self, accumulator):
        skipped = Counter()
        by_split = {split: Counter() for split in SPLITS}
        for (reason, split), count in accumulator["skipped"].items():
            skipped[reason] += count
            if split:
                by_split[split][reason] += count
        return {
            "splits": {
                split: {
                    "images": len(accumulator["images"][split]),
                    "instances": accumulator["instances"][split],
                    "skipped": dict(sorted(by_split[split].items())),
                }
                for split in SPLITS
            },
            "total": {
                "images": sum(len(images) for images in accumulator["images"].values()),
                "instances": sum(accumulator["instances"].values()),
            },
            "skipped": dict(sorted(skipped.items())),
            "decoys": {name: summary.describe() for name, summary in accumulator["decoys"].items()},
        }


def write_json(path: str, value: dict) -> str:
    with FileSystems.create(path) as handle:
        handle.write(json.dumps(value, indent=2, sort_keys=True).encode("utf-8"))
    return path


class WriteStatistics(beam.PTransform):
    """(instances, skips) -> <output>/statistics.json."""

    def __init__(self, *, output: str):
        super().__init__()
        self._path = FileSystems.join(output, "statistics.json")

    def expand(self, instances_and_skips):
        return (
            instances_and_skips
            | "Flatten" >> beam.Flatten()
            | "Combine" >> beam.CombineGlobally(StatisticsFn())
            | "Write" >> beam.Map(lambda statistics, path: write_json(path, statistics), self._path)
        )


def table_one(statistics: dict) -> str:
    """The paper's Table 1 from a statistics dict, as printed after a run."""
    rows = [f"{'split':<8}{'#unique images':>16}{'# instances':>14}{'skipped':>10}"]
    for split in (*SPLITS[1:], SPLITS[0]):
        values = statistics["splits"][split]
        rows.append(
            f"{split:<8}{values['images']:>16,}{values['instances']:>14,}"
            f"{sum(values['skipped'].values()):>10,}"
        )
    total = statistics["total"]
    rows.append(f"{'total':<8}{total['images']:>16,}{total['instances']:>14,}")
    for reason, count in statistics["skipped"].items():
        rows.append(f"skipped {reason}: {count:,}")
    for name, values in statistics["decoys"].items():
        if values["count"]:
            rows.append(
                f"decoy {name}: mean {values['mean']:.3f}, min {values['min']:.3f}, "
                f"max {values['max']:.3f}"
            )
    return "\n".join(rows)
