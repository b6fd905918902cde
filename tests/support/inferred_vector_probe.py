"""Prints the trainer's inferred PV vector of a text, as hex, in whatever process this is:
run twice under different ``PYTHONHASHSEED`` s, the two must agree (tests/test_train.py)::

    python -m tests.support.inferred_vector_probe DATASET TEXT
"""

import sys

from pipelines.options import TrainOptions
from transforms.trainer.features import load_feature_space

if __name__ == "__main__":
    dataset, text = sys.argv[1:]
    space = load_feature_space(TrainOptions(dataset=dataset, output="").feature_config(dataset))
    sys.stdout.write(space.inferred_vector(text).tobytes().hex())
