"""The validity model's speed: batch sizes and int8 weights, side by side.

The validity rule encodes every caption once (``transforms.corpus.sentences``), and at
124k synthetic images that stage is the largest share of a run's busy time
(docs/benchmarks.md). This times the default encoder on real captions, on one thread as
a Beam worker runs it, at each batch size and with PyTorch's dynamic int8 quantisation of
its linear layers, and says what each does to the vectors: the least cosine of a caption's
vector to the baseline's, and the share of caption pairs that land on the other side of
the rule's threshold::

    .venv/bin/python -m benchmarks.encoder          # 4,096 captions of COCO val2017
    .venv/bin/python -m benchmarks.encoder --batch_sizes 256,64 --repeats 5

The rows are timed in turns, so a machine's drift reaches them alike; the first batch
size is the baseline of the ratio column, and the int8 row uses it too.
"""

import argparse
import copy
import datetime
import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from benchmarks.validity import SHARED_DATA, machine
from pipelines.options.fields import ints
from transforms.corpus.encoders.registry import DEFAULT_MODEL, encoder_identity, resolve_model
from transforms.corpus.encoders.sentence_transformers import SentenceTransformersEncoder
from transforms.corpus.sentences import DEFAULT_THRESHOLD
from transforms.threads import limit_torch

COCO_VAL2017 = SHARED_DATA / "coco" / "captions_val2017.json"


def caption_texts(path: str, count: int) -> list[str]:
    """The first ``count`` distinct caption texts of a COCO captions file, in its order."""
    with open(path, encoding="utf-8") as handle:
        annotations = json.load(handle)["annotations"]
    return list(dict.fromkeys(a["caption"].strip() for a in annotations))[:count]


def int8_weights(encoder: SentenceTransformersEncoder) -> SentenceTransformersEncoder:
    """A copy of ``encoder`` whose linear layers compute in int8, with per-channel weight
    scales and each batch's activation scale (PyTorch's dynamic quantisation)."""
    quantized = copy.deepcopy(encoder)
    with warnings.catch_warnings():  # PyTorch deprecates it for torchao: docs/benchmarks.md
        warnings.simplefilter("ignore")
        # a benchmark's look inside: the package's encoder offers no other precision
        quantized._model = torch.ao.quantization.quantize_dynamic(
            quantized._model, {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}
        )
    return quantized


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
    folder, identity = Path(resolve_model(model)), encoder_identity(model)
    encoders = {
        f"float32, batches of {size}": SentenceTransformersEncoder(folder, identity, size)
        for size in batch_sizes
    }
    baseline = next(iter(encoders))
    encoders[f"int8, batches of {batch_sizes[0]}"] = int8_weights(encoders[baseline])
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
