"""Sets PyTorch's threads before anything imports PyTorch, then prints how many it runs
(tests/test_threads.py)::

    python -m tests.support.torch_threads_probe THREADS
"""

import sys

from transforms.threads import limit_torch

if __name__ == "__main__":
    assert "torch" not in sys.modules
    limit_torch(int(sys.argv[1]))
    import torch

    print(torch.get_num_threads())
