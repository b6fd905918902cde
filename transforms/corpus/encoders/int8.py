"""A sentence-transformers model whose linear layers compute in int8, each vector within
0.0075 cosine of float32's. On one CPU thread it encodes 1.3x float32's captions a second
on an Intel Xeon with AMX, and 2.4x on the AMD EPYC of the earlier benchmarks; on a
processor without VNNI (below), at most float32's (benchmarks/encoder.py,
docs/benchmarks.md).

Weights are quantised once, per output channel; a layer's input is quantised at each call
per token, by that token's own largest magnitude. So a caption's vector depends on its own
tokens, not on the captions it is batched with. (PyTorch's dynamic quantisation takes one
activation scale per batch, so there batch-mates matter, and its vectors came as far as
0.949 cosine from float32's.) The integer products are exact (int32 sums, below); what
stays in float32 (attention, layer norms, GELU) keeps float32's rounding, which a rounding
to int8 can now and then carry to about 1e-2 in a vector, so the pipeline still encodes
fixed batches.

Two captions' vectors can so stray from float32's by up to 0.045 radians between them (a
cosine 0.04 off near 0.5), so the rule compares this family's cosines that angle further
apart than ``--validity_threshold`` (``registry.INT8_MARGIN``): a decoy it keeps stays below
the threshold by the published float32 model too.

The integer products are exact only where the processor has VNNI (AVX-512 VNNI, AVX-VNNI
or AMX: Intel from Cascade Lake, AMD from Zen 4). Without it oneDNN, which
``torch._int_mm`` runs on, sums pairs of byte products in int16 and saturates (oneDNN's
"Nuances of int8 computations"): capped to AVX2 (``ONEDNN_MAX_CPU_ISA``), it got 99.9% of
random int8 products wrong. So each process checks once (:func:`int_mm_is_exact`), and
where the sums are not exact it sums the same products in float32 instead
(:func:`summed_in_float32`): the same integers, at 0.6-0.7x float32's speed.
"""

import functools
from pathlib import Path

import torch

from transforms.corpus.encoders.base import EncoderIdentity
from transforms.corpus.encoders.sentence_transformers import (
    BATCH_SIZE,
    SentenceTransformersEncoder,
)

INT8_LIMIT = 127  # symmetric int8: -127..127, so a scale maps the largest magnitude to 127
# float32 holds every integer below 2**24, so the sum of up to this many int8 products
# (each at most 127 * 127 in magnitude) is exact in any order of summation
EXACT_CHUNK = 2**24 // INT8_LIMIT**2


def int8_rows(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 rows, float32 (rows, 1) scales): each row of a 2-d tensor by its own largest
    magnitude; an all-zero row keeps scale 1 and stays zero.

    >>> q, scale = int8_rows(torch.tensor([[0.5, -1.0], [0.0, 0.0]]))
    >>> q.tolist(), scale.flatten().tolist()
    ([[64, -127], [0, 0]], [0.007874015718698502, 1.0])
    """
    largest = values.abs().amax(dim=1, keepdim=True)
    scale = torch.where(largest > 0, largest / INT8_LIMIT, torch.ones_like(largest))
    return torch.round(values / scale).to(torch.int8), scale


def summed_in_float32(rows: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:
    """``rows @ weight_t`` of two int8 matrices as int32, exactly, through float32 products
    summed over at most EXACT_CHUNK inputs at a time.

    >>> big = torch.full((1, 2000), 127, dtype=torch.int8)
    >>> summed_in_float32(big, big.t().contiguous()).item() == 2000 * 127 * 127
    True
    """
    products = torch.zeros(rows.shape[0], weight_t.shape[1], dtype=torch.int32)
    for start in range(0, rows.shape[1], EXACT_CHUNK):
        chunk = slice(start, start + EXACT_CHUNK)
        products += (rows[:, chunk].float() @ weight_t[chunk].float()).to(torch.int32)
    return products


@functools.cache
def int_mm_is_exact() -> bool:
    """Whether ``torch._int_mm`` sums int8 products exactly on this processor: a fixed
    random probe of a layer's size, against its sums in float64, which hold them whatever
    float32's matrix products are set to (once a process)."""
    generator = torch.Generator().manual_seed(0)
    rows, weight_t = (
        torch.randint(-INT8_LIMIT, INT8_LIMIT + 1, shape, generator=generator, dtype=torch.int8)
        for shape in ((256, 384), (384, 384))
    )
    exact = (rows.double() @ weight_t.double()).to(torch.int32)
    return torch.equal(torch._int_mm(rows, weight_t), exact)


def int8_products(rows: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:
    """``rows @ weight_t`` as int32, exactly on any processor."""
    if int_mm_is_exact():
        return torch._int_mm(rows, weight_t)
    return summed_in_float32(rows, weight_t)


class Int8Linear(torch.nn.Module):
    """``linear`` with int8 weights (per output channel) and int8 inputs (per token)."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        weight, scale = int8_rows(linear.weight.detach().float())
        self.register_buffer("weight_t", weight.t().contiguous())  # (in, out), as _int_mm takes
        self.register_buffer("weight_scale", scale.flatten())
        bias = linear.bias
        self.register_buffer("bias", None if bias is None else bias.detach().float())

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        rows = inputs.reshape(-1, inputs.shape[-1])
        quantised, scale = int8_rows(rows)
        outputs = int8_products(quantised, self.weight_t).float().mul_(scale)
        outputs.mul_(self.weight_scale)
        if self.bias is not None:
            outputs.add_(self.bias)
        return outputs.reshape(*inputs.shape[:-1], -1)


def int8_linears(module: torch.nn.Module) -> None:
    """Replaces every ``torch.nn.Linear`` under ``module`` by its Int8Linear, in place."""
    for name, child in module.named_children():
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, Int8Linear(child))
        else:
            int8_linears(child)


class Int8SentenceTransformersEncoder(SentenceTransformersEncoder):
    """:class:`SentenceTransformersEncoder` with every linear layer in int8."""

    def __init__(self, folder: Path, identity: EncoderIdentity, batch_size: int = BATCH_SIZE):
        super().__init__(folder, identity, batch_size)
        int8_linears(self._model)
