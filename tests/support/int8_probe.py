"""An int8 linear layer's outputs on fixed random inputs, so that a test can compare them
with a process whose oneDNN is capped to another instruction set (tests/test_encoders.py)::

    python -m tests.support.int8_probe OUTPUT.npy

saves them and prints whether ``torch._int_mm`` was exact in that process.
"""

import sys

import numpy as np
import torch

from transforms.corpus.encoders.int8 import Int8Linear, int_mm_is_exact


def probe_outputs() -> np.ndarray:
    """The same bytes in any process whose int8 products are exact; PyTorch's global
    random state is left as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layer = Int8Linear(torch.nn.Linear(1536, 384))
        inputs = torch.randn(300, 1536) * torch.rand(300, 1)  # rows of differing scales
        return layer(inputs).numpy()


if __name__ == "__main__":
    np.save(sys.argv[1], probe_outputs())
    print(int_mm_is_exact())
