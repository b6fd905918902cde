"""Per-column standardisation with the train split's statistics, accumulated batch by batch
(scikit-learn's ``StandardScaler.partial_fit``: the split is never held at once)."""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.preprocessing import StandardScaler

from schemas.examples import Batch
from transforms.trainer.models import PASS_BATCH
from transforms.trainer.stream import ExampleSource


@dataclass(frozen=True)
class Scaler:
    mean: np.ndarray  # float32 (columns,)
    scale: np.ndarray  # float32 (columns,); 1 for a constant column

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale).astype(np.float32)

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}_mean": self.mean, f"{prefix}_scale": self.scale}


def fit_scaler(source: ExampleSource, inputs: Callable[[Batch], np.ndarray]) -> Scaler:
    """Statistics of the last axis of ``inputs`` over every train batch."""
    scaler = StandardScaler()
    for batch in source.batches(PASS_BATCH):
        x = inputs(batch)
        scaler.partial_fit(x.reshape(-1, x.shape[-1]))
    return Scaler(scaler.mean_.astype(np.float32), scaler.scale_.astype(np.float32))
