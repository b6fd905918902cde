"""The validity model's speed: batch sizes and the encoder families, side by side.

The validity rule encodes every caption once (``transforms.corpus.sentences``), and at
124k synthetic images that stage is the largest share of a run's busy time
(docs/benchmarks.md). This times the model on real captions, on one thread as a Beam
worker runs it, in float32 at each batch size and in each other registered family (int8)
at the first, and says what each does to the vectors: the least cosine of a caption's
vector to the baseline's, and the share of caption pairs that land on the other side of
the rule's threshold::

    .venv/bin/python -m benchmarks.encoder          # 4,096 captions of COCO val2017
    .venv/bin/python -m benchmarks.encoder --batch_sizes 256,64 --repeats 5

The rows are timed in turns, so a machine's drift reaches them alike; float32 at the first
batch size is the baseline of the ratio column.
"""

import argparse
import datetime
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from benchmarks.validity import SHARED_DATA, machine
from pipelines.options.fields import ints
from transforms.corpus.encoders.registry import (
    DEFAULT_MODEL,
    ENCODERS,
    encoder_family,
    encoder_identity,
    resolve_model,
)
from transforms.corpus.encoders.sentence_transformers import SentenceTransformersEncoder
from transforms.corpus.sentences import DEFAULT_THRESHOLD
from transforms.threads import limit_torch

COCO_VAL2017 = SHARED_DATA / "coco" / "captions_val2017.json"


def caption_texts(path: str, count: int) -> list[str]:
    """The first ``count`` distinct caption texts of a COCO captions file, in its order."""
    with open(path, encoding="utf-8") as handle:
        annotations = json.load(handle)["annotations"]
    return list(dict.fromkeys(a["caption"].strip() for a in annotations))[:count]


def agreement(vectors: np.ndarray, baseline: np.ndarray, threshold: float) -> tuple[float, float]:
    """(least row cosine to ``baseline``, share of pairs of the first half against the
    second on the other side of ``threshold``)."""
    half = len(vectors) // 2
    rows = np.sum(vectors * baseline, axis=1)
    ours, theirs = vectors[:half] @ vectors[half:].T, baseline[:half] @ baseline[half:].T
    return float(rows.min()), float(np.mean((ours >= threshold) != (theirs >= threshold)))


def timed_in_turns(
    encoders: dict[str, Callable[[Sequence[str]], np.ndarray]], texts: list[str], repeats: int
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Each encoder's best time over ``repeats`` turns, and its vectors."""
    best, vectors = dict.fromkeys(encoders, float("inf")), {}
    for _ in range(repeats):
        for name, encode in encoders.items():
            start = time.perf_counter()
            vectors[name] = encode(texts)
            best[name] = min(best[name], time.perf_counter() - start)
    return best, vectors


def measure(texts: list[str], model: str, batch_sizes: list[int], repeats: int) -> str:
    folder, families = Path(resolve_model(model)), {f: encoder_family(f) for f in ENCODERS}
    encoders = {
        f"{family}, batches of {size}": encoder(folder, encoder_identity(model, family), size)
        for family, encoder in families.items()
        for size in (batch_sizes if encoder is SentenceTransformersEncoder else batch_sizes[:1])
    }
    baseline = next(iter(encoders))  # float32's family is the registry's first
    seconds, vectors = timed_in_turns(
        {name: encoder.encode for name, encoder in encoders.items()}, texts, repeats
    )
    rows = [
        f"{datetime.date.today()}, {machine()}; {model}, {len(texts):,} captions, 1 thread, "
        f"best of {repeats} turns; threshold {DEFAULT_THRESHOLD}",
        "",
        "| encoder | captions/s | ratio | least cosine to the baseline's | pairs across the "
        "threshold |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, took in seconds.items():
        least, moved = agreement(vectors[name], vectors[baseline], DEFAULT_THRESHOLD)
        rows.append(
            f"| {name} | {len(texts) / took:,.0f} | {seconds[baseline] / took:.2f}x | "
            f"{least:.4f} | {moved:.3%} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--captions", default=str(COCO_VAL2017), help="a COCO captions file")
    parser.add_argument("--count", type=int, default=4096, help="distinct captions encoded")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="the validity model")
    parser.add_argument(
        "--batch_sizes", type=ints, default=[256, 128, 64, 32], help="the first: the baseline"
    )
    parser.add_argument("--repeats", type=int, default=3, help="turns; each row's best counts")
    args = parser.parse_args(argv)
    limit_torch(1)
    print(measure(caption_texts(args.captions, args.count), args.model, args.batch_sizes,
                  args.repeats))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
