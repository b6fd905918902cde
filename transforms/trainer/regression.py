"""Baseline-I2C and Baseline-C2I (Ding et al. 2016, section 4.1): ridge regression on targets.

I2C maps the image to its target caption's vector and answers the option
nearest the prediction; C2I maps the target caption to the image's vector and
answers the option whose predicted image is nearest the image. Ridge has a
closed form, so it needs no optimiser: one pass over train accumulates the
moments (sums and the Gram matrix, dim x dim) and every penalty in
``--ridge_alphas`` is solved from them, the best on dev kept.
"""

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from schemas.examples import Batch
from transforms.trainer.models import (
    PASS_BATCH,
    TrainConfig,
    source_accuracy,
    targets,
)
from transforms.trainer.scaling import Scaler, fit_scaler
from transforms.trainer.stream import FitData


@dataclass
class Moments:
    """What ridge needs of (x, y): counts, sums and cross products, in float64."""

    count: int
    x_sum: np.ndarray
    y_sum: np.ndarray
    xx: np.ndarray
    xy: np.ndarray

    @classmethod
    def of(cls, pairs: Iterable[tuple[np.ndarray, np.ndarray]]) -> "Moments":
        moments = None
        for x, y in pairs:
            x, y = x.astype(np.float64), y.astype(np.float64)
            if moments is None:
                columns, goals = x.shape[1], y.shape[1]
                moments = cls(
                    0,
                    np.zeros(columns),
                    np.zeros(goals),
                    np.zeros((columns, columns)),
                    np.zeros((columns, goals)),
                )
            moments.count += len(x)
            moments.x_sum += x.sum(axis=0)
            moments.y_sum += y.sum(axis=0)
            moments.xx += x.T @ x
            moments.xy += x.T @ y
        return moments

    def ridge(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """Weights and bias minimising ||x W + b - y||^2 + alpha ||W||^2 (bias unpenalised)."""
        x_mean, y_mean = self.x_sum / self.count, self.y_sum / self.count
        gram = self.xx - self.count * np.outer(x_mean, x_mean) + alpha * np.eye(len(x_mean))
        weights = np.linalg.solve(gram, self.xy - self.count * np.outer(x_mean, y_mean))
        return weights, y_mean - x_mean @ weights


@dataclass(frozen=True)
class Regression:
    name: str
    direction: str  # "i2c": image -> caption; "c2i": caption -> image
    scaler: Scaler
    weights: np.ndarray
    bias: np.ndarray
    selection: dict = field(compare=False)
    uses_image: ClassVar[bool] = True

    def scores(self, batch: Batch) -> np.ndarray:
        """Minus the distance between predicted and actual embeddings."""
        if self.direction == "i2c":
            predicted = self.scaler(batch.images) @ self.weights + self.bias
            return -np.linalg.norm(batch.options - predicted[:, None, :], axis=2)
        predicted = self.scaler(batch.options) @ self.weights + self.bias
        return -np.linalg.norm(predicted - batch.images[:, None, :], axis=2)

    def arrays(self) -> dict[str, np.ndarray]:
        return {**self.scaler.arrays("input"), "weights": self.weights, "bias": self.bias}


def images(batch: Batch) -> np.ndarray:
    return batch.images


SIDES: dict[str, tuple[Callable[[Batch], np.ndarray], Callable[[Batch], np.ndarray]]] = {
    "i2c": (images, targets),
    "c2i": (targets, images),
}


def fit_regression(name: str, data: FitData, config: TrainConfig, *, direction: str) -> Regression:
    """Ridge on train targets, the penalty with the best dev accuracy."""
    source, goal = SIDES[direction]
    scaler = fit_scaler(data.train, source)
    moments = Moments.of(
        (scaler(source(batch)), goal(batch)) for batch in data.train.batches(PASS_BATCH)
    )
    best, history = None, {}
    for alpha in config.ridge_alphas:
        weights, bias = moments.ridge(alpha)
        model = Regression(name, direction, scaler, weights, bias, {})
        history[str(alpha)] = round(source_accuracy(model.scores, data.dev), 4)
        if best is None or history[str(alpha)] > history[str(best[0])]:
            best = (alpha, model)
    alpha, model = best
    return Regression(
        name,
        direction,
        scaler,
        model.weights,
        model.bias,
        {"alpha": alpha, "dev_by_alpha": history},
    )


FIT_I2C = functools.partial(fit_regression, direction="i2c")
FIT_C2I = functools.partial(fit_regression, direction="c2i")
