"""Runs an int8 linear layer on fixed random inputs and saves its outputs, so that a test can
compare processes whose oneDNN is capped to other instruction sets (tests/test_encoders.py)::

    python -m tests.support.int8_probe OUTPUT.npy

It prints whether ``torch._int_mm`` was exact in this process.
"""

import sys

import numpy as np
import torch

from transforms.corpus.encoders.int8 import Int8Linear, int_mm_is_exact

if __name__ == "__main__":
    torch.manual_seed(0)
    layer = Int8Linear(torch.nn.Linear(1536, 384))
    inputs = torch.randn(300, 1536) * torch.rand(300, 1)  # rows of differing scales
    np.save(sys.argv[1], layer(inputs).numpy())
    print(int_mm_is_exact())
