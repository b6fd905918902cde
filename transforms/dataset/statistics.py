"""The statistics file: the paper's Table 1 plus what was skipped and why.

Per split: unique images and instances, skips by reason, the decoys built
by editing a caption (forced choice), and the decoys' count, mean, min, max,
deciles and a histogram (bins of 0.05 over [-1, 1]) of simPV, simSURF and
Score; the decoys of all splits together too. Edited decoys carry no
similarities (NaN in the files) and are left out of the distributions.

Computed after the pipeline from the files it wrote (the instance Parquet
shards and the skipped-record files), so the statistics describe exactly
what a reader of the dataset gets. A combine over the instance stream gave
partial counts for a 600k-caption run on the multi-process FnApiRunner (its
timed flush dropped data between stages; now off, ``pipelines/runner.py``);
reading back ~four columns costs seconds.
"""

import json
from collections import Counter
from collections.abc import Callable

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from schemas.layout import (
    CAPTIONS_FILE,
    PARQUET,
    build_path,
    corpus_file,
    corpus_folder,
    shard_pattern,
)
from schemas.records import Skip
from transforms.corpus.normalize import TRUNCATED
from transforms.corpus.split import SPLITS
from transforms.corpus.store import CorpusRef
from transforms.dataset.write import Format, WriteShards, corpus_shards, shard_count, text_bytes
from transforms.files import list_files, parse_json, read_file, read_parquet_files, unfenced
from transforms.strategies.validity import RULES

DECOY_MEASURES = {"sim_pv": "decoy_sim_pv", "sim_surf": "decoy_sim_surf", "score": "decoy_score"}
HISTOGRAM_EDGES = np.linspace(-1.0, 1.0, 41)
SKIPPED_NAME = "skipped"
# <version>/build/skipped/skipped-SSSSS-of-NNNNN.jsonl
SKIPPED = Format(SKIPPED_NAME, ".jsonl", text_bytes)


def skipped_shards(ref: CorpusRef) -> int:
    return shard_count(ref.size, 0)


def skip_line(skip: Skip) -> str:
    """One line of a skipped-records file. json.dumps escapes every control character, and
    (ensure_ascii) U+2028/U+2029 too, so no id read from an input can break the line."""
    return json.dumps(skip._asdict(), sort_keys=True)


def parse_skip_lines(path: str, data: bytes) -> list[Skip]:
    """Inverse of :func:`skip_line` over a whole file: lines end at "\\n" only, as JSON
    lines do; a malformed line is an InputError naming the file and line."""
    lines = data.decode("utf-8").split("\n")
    return [
        Skip(**parse_json(f"{path}: line {number}", line))
        for number, line in enumerate(lines, 1)
        if line
    ]


class WriteSkips(beam.PTransform):
    """Skip records -> JSON lines under <output>/skipped/ (a version's build folder), one
    per skipped record."""

    def __init__(
        self, *, output: str, corpus: beam.PCollection, fence: Callable[[], None] = unfenced
    ):
        super().__init__()
        self._output, self._corpus, self._fence = output, corpus, fence

    def expand(self, skips):
        return (
            skips
            | "ToJson" >> beam.Map(skip_line)
            | "Write"
            >> WriteShards(
                output=self._output,
                name=SKIPPED_NAME,
                formats=(SKIPPED,),
                key=str,
                plan=corpus_shards(self._corpus, SKIPPED_NAME, skipped_shards),
                fence=self._fence,
            )
        )


def read_written(output: str) -> tuple[dict[str, pa.Table], list[Skip], dict[str, int]]:
    """The instance columns the statistics need, per split, every Skip, and the corpus's
    captions per split (none when the version has no corpus of its own)."""
    columns = ["image_id", "target_caption_id", "decoy_edits", *DECOY_MEASURES.values()]
    instances = {}
    for split in SPLITS:
        tables = list(read_parquet_files(shard_pattern(output, PARQUET, split), columns))
        instances[split] = pa.concat_tables(tables) if tables else None
    skips = [
        skip
        for path in list_files(build_path(output, SKIPPED.directory, "*.jsonl"))
        for skip in parse_skip_lines(path, read_file(path))
    ]
    corpus = corpus_file(corpus_folder(output), CAPTIONS_FILE)
    captions = {}
    if FileSystems.exists(corpus):
        table = next(read_parquet_files(corpus, ["split"]))
        captions = dict(Counter(table.column("split").to_pylist()))
    return instances, skips, captions


def describe(values: np.ndarray) -> dict:
    """Count, mean, extremes, deciles and a histogram of one similarity (NaN: not scored)."""
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return {"count": 0}
    deciles = np.quantile(values, np.linspace(0.1, 0.9, 9))
    return {
        "count": len(values),
        "mean": float(values.mean()),
        "min": float(values.min()),
        "max": float(values.max()),
        "deciles": [round(float(d), 6) for d in deciles],
        "histogram": {
            "edges": [round(float(e), 2) for e in HISTOGRAM_EDGES],
            "counts": np.histogram(np.clip(values, -1, 1), bins=HISTOGRAM_EDGES)[0].tolist(),
        },
    }


def coverage(table: pa.Table | None, captions: int) -> dict:
    """How many of a split's captions are the target of at least one instance.

    >>> coverage(pa.table({"target_caption_id": ["1", "1", "2"]}), 4)
    {'captions': 4, 'targets': 2, 'share': 0.5}
    """
    targets = 0 if table is None else len(set(table.column("target_caption_id").to_pylist()))
    return {
        "captions": captions,
        "targets": targets,
        "share": targets / captions if captions else 0,
    }


def small_train(statistics: dict) -> str | None:
    """Why to rerun with other split sizes, when train holds under half of the images:
    --n_dev and --n_test are image counts whose defaults suit COCO 2014's 124k images, so on
    a small corpus they take most of it and the trainer and the audit fit on little.

    >>> small_train({"splits": {"train": {"images": 1000}, "dev": {"images": 2000},
    ...                         "test": {"images": 2000}}})  # doctest: +NORMALIZE_WHITESPACE
    'train holds 1,000 of the 5,000 images (20%): --n_dev and --n_test count images (2,000
    and 2,000 here); for a corpus this size, e.g. --n_dev 500 --n_test 500'
    """
    images = {split: values["images"] for split, values in statistics["splits"].items()}
    total = sum(images.values())
    if not total or 2 * images.get("train", 0) >= total:
        return None
    return (
        f"train holds {images.get('train', 0):,} of the {total:,} images "
        f"({100 * images.get('train', 0) / total:.0f}%): --n_dev and --n_test count images "
        f"({images.get('dev', 0):,} and {images.get('test', 0):,} here); for a corpus this "
        f"size, e.g. --n_dev {total // 10} --n_test {total // 10}"
    )


def unaccounted(statistics: dict) -> int:
    """Captions that are neither the target of an instance nor skipped by the decoy stage:
    0 unless a stage lost records (a bug, never an input's fault); 0 without coverage.

    >>> unaccounted({"splits": {"dev": {"coverage": {"captions": 5, "targets": 3}}},
    ...              "skipped": {"decoys/closed_set_no_5_clique": 1, "normalize/empty": 4}})
    1
    """
    coverage = [
        values["coverage"] for values in statistics["splits"].values() if "coverage" in values
    ]
    if not coverage:
        return 0
    drops = sum(n for reason, n in statistics["skipped"].items() if reason.startswith("decoys/"))
    return sum(c["captions"] - c["targets"] for c in coverage) - drops


def compute_statistics(
    instances: dict[str, pa.Table | None],
    skips: list[Skip],
    captions: dict[str, int],
    counters: dict[str, int],
) -> dict:
    """``captions``: the corpus's captions per split, for each split's coverage (none: no
    coverage); ``counters``: the run's Beam counters, for what no file records (validity
    rejections). The first three are what :func:`read_written` returns."""
    by_reason = Counter(skip.reason for skip in skips)
    by_split = {split: Counter() for split in SPLITS}
    for skip in skips:
        if skip.split:
            by_split[skip.split][skip.reason] += 1
    splits, decoys = {}, {name: [] for name in DECOY_MEASURES}
    options_per_instance = None
    for split in SPLITS:
        table = instances[split]
        rows = 0 if table is None else table.num_rows
        images = 0 if table is None else len(set(table.column("image_id").to_pylist()))
        values = {
            name: np.zeros(0)
            if table is None
            else table.column(column).combine_chunks().flatten().to_numpy()
            for name, column in DECOY_MEASURES.items()
        }
        edits = [] if table is None else table.column("decoy_edits").to_pylist()
        if edits:
            options_per_instance = len(edits[0]) + 1
        splits[split] = {
            "images": images,
            "instances": rows,
            "skipped": dict(sorted(by_split[split].items())),
            "edited_decoys": sum(1 for row in edits for edit in row if edit),
            "decoys": {name: describe(v) for name, v in values.items()},
        }
        if captions:
            splits[split]["coverage"] = coverage(table, captions.get(split, 0))
        for name, v in values.items():
            decoys[name].append(v)
    return {
        "options_per_instance": options_per_instance,
        "splits": splits,
        "total": {
            "images": sum(s["images"] for s in splits.values()),
            "instances": sum(s["instances"] for s in splits.values()),
        },
        "skipped": dict(sorted(by_reason.items())),
        "validity": {f"validity/{rule}": counters.get(f"validity/{rule}", 0) for rule in RULES},
        "truncated_captions": counters.get(TRUNCATED, 0),  # kept, cut to their first 30 tokens
        "decoys": {name: describe(np.concatenate(parts)) for name, parts in decoys.items()},
    }


def table_one(statistics: dict) -> str:
    """The paper's Table 1 from a statistics dict, as printed after a run."""
    rows = [f"{'split':<8}{'#unique images':>16}{'# instances':>14}{'skipped':>10}{'coverage':>10}"]
    for split in (*SPLITS[1:], SPLITS[0]):
        values = statistics["splits"][split]
        share = values.get("coverage", {}).get("share")
        rows.append(
            f"{split:<8}{values['images']:>16,}{values['instances']:>14,}"
            f"{sum(values['skipped'].values()):>10,}"
            + (f"{share:>10.1%}" if share is not None else "")
        )
    total = statistics["total"]
    rows.append(f"{'total':<8}{total['images']:>16,}{total['instances']:>14,}")
    for reason, count in statistics["skipped"].items():
        rows.append(f"skipped {reason}: {count:,}")
    rejected = ", ".join(f"{k.split('/')[1]} {v:,}" for k, v in statistics["validity"].items() if v)
    rows.append(f"validity rules turned away: {rejected or 'nothing'}")
    for name, values in statistics["decoys"].items():
        if values["count"]:
            rows.append(
                f"decoy {name}: mean {values['mean']:.3f}, min {values['min']:.3f}, "
                f"median {values['deciles'][4]:.3f}, max {values['max']:.3f}"
            )
    return "\n".join(rows)
