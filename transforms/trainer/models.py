"""The paper's models (Ding et al. 2016, section 4 and Table 3) in numpy.

Every model turns a :class:`~schemas.examples.Batch` into scores of shape
(n, k) (k options per instance: 5, 4 or 2) and answers with the
highest-scoring option, so one accuracy function serves them all. Losses and
gradients are small pure functions (checked against finite differences in the
tests); ``fit_*`` functions train on the train split and select on dev, as
the paper does:

- Baseline-I2C / Baseline-C2I: ridge regression image -> target caption /
  target caption -> image, trained on targets only; the answer is the option
  nearest to the predicted caption (I2C) or whose predicted image is nearest
  to the image (C2I). The ridge penalty is chosen on dev.
- Baseline-LinM: bilinear ``f(i, c) = i^T Theta c`` trained with Eq. 2's hinge
  on the worst offending decoy by stochastic subgradient steps. Eq. 2 as
  printed has no margin, which ``Theta = 0`` satisfies with zero loss, so the
  usual margin of 1 is used.
- FFNN: two ReLU hidden layers and a 2-class softmax over each (image,
  option) pair (Eq. 3), Adagrad with clipped gradients (section 5.1); the
  answer is the option with the highest "yes" probability.
- Text-FFNN: the same network without the image: each option's vector, its
  difference to the mean of the other k - 1, and its length, BLEU hub and PV
  hub scores relative to the other k - 1. It measures how much of a dataset
  is solvable without looking at the image.
- Bigram LM: Hodosh & Hockenmaier 2016's text-only baseline, a bigram language
  model of the train targets; the most probable option wins
  (``transforms/trainer/language_model.py``).

LinM and the FFNNs keep the epoch with the best dev accuracy.
"""

import copy
import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from schemas.examples import Batch
from transforms.trainer.language_model import BigramLM, fit_bigram_lm

MARGIN = 1.0
RELATIVE_TEXT_FEATURES = ("length", "hub_bleu", "hub_pv")


def answers(scores: np.ndarray) -> np.ndarray:
    """The chosen option per instance; ties go to the first option.

    Examples hold their options in text order (``features.build_example``), so a
    tie goes to the alphabetically first text: a function of the option texts
    answers an option set alike whatever order the instance stored it in.
    """
    return np.argmax(scores, axis=1)


def accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(answers(scores) == labels)) if len(labels) else 0.0


@dataclass(frozen=True)
class Scaler:
    """Per-column standardisation with the train split's statistics."""

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray) -> "Scaler":
        """Statistics in x's dtype, so float32 features stay float32 (half the memory)."""
        rows = x.reshape(-1, x.shape[-1])
        mean, scale = rows.mean(axis=0), np.maximum(rows.std(axis=0), 1e-6)
        return cls(mean.astype(x.dtype), scale.astype(x.dtype))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean) / self.scale

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}_mean": self.mean, f"{prefix}_scale": self.scale}


@dataclass(frozen=True)
class TrainConfig:
    """The fits' settings; defaults and meanings live in ``pipelines.options.TrainOptions``."""

    ridge_alphas: tuple[float, ...]
    epochs: int
    batch_size: int
    linm_learning_rate: float
    linm_l2: float
    ffnn_hidden: tuple[int, ...]
    ffnn_learning_rate: float
    clip_norm: float
    seed: int


# Baseline-I2C and Baseline-C2I: ridge regression on targets.


def ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Weights and bias minimising ||x W + b - y||^2 + alpha ||W||^2 (bias unpenalised)."""
    x_mean, y_mean = x.mean(axis=0), y.mean(axis=0)
    xc = x - x_mean
    gram = xc.T @ xc + alpha * np.eye(x.shape[1])
    weights = np.linalg.solve(gram, xc.T @ (y - y_mean))
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


def targets(batch: Batch) -> np.ndarray:
    """The target option's vector of every instance, (n, dim)."""
    return batch.options[np.arange(len(batch)), batch.labels]


def fit_regression(
    name: str, train: Batch, dev: Batch, config: TrainConfig, *, direction: str
) -> Regression:
    """Ridge on train targets, the penalty with the best dev accuracy."""
    images, captions = train.images.astype(np.float64), targets(train).astype(np.float64)
    source, goal = (images, captions) if direction == "i2c" else (captions, images)
    scaler = Scaler.fit(source)
    best, history = None, {}
    for alpha in config.ridge_alphas:
        weights, bias = ridge(scaler(source), goal, alpha)
        model = Regression(name, direction, scaler, weights, bias, {})
        history[str(alpha)] = round(accuracy(model.scores(dev), dev.labels), 4)
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


# Training loop shared by LinM and the FFNNs.

Params = list[np.ndarray]


def sgd(learning_rate: float) -> Callable[[Params, Params], None]:
    def update(params: Params, grads: Params) -> None:
        for param, grad in zip(params, grads, strict=True):
            param -= learning_rate * grad

    return update


def adagrad(params: Params, learning_rate: float, clip_norm: float) -> Callable:
    """Adagrad with the gradient clipped to ``clip_norm`` (paper: 0.01 and 4)."""
    accumulators = [np.zeros_like(param) for param in params]

    def update(params: Params, grads: Params) -> None:
        norm = np.sqrt(sum(float(np.sum(grad * grad)) for grad in grads))
        factor = min(1.0, clip_norm / max(norm, 1e-12))
        for param, grad, accumulator in zip(params, grads, accumulators, strict=True):
            grad = grad * factor
            accumulator += grad * grad
            param -= learning_rate * grad / (np.sqrt(accumulator) + 1e-8)

    return update


def train_epochs(
    params: Params,
    gradient: Callable[[Params, np.ndarray], Params],
    update: Callable[[Params, Params], None],
    dev_accuracy: Callable[[Params], float],
    *,
    size: int,
    epochs: int,
    batch_size: int,
    seed: int,
) -> tuple[Params, dict]:
    """Minibatch steps over shuffled train instances; keeps the best epoch on dev."""
    rng = np.random.default_rng(seed)
    best, best_accuracy, best_epoch, history = copy.deepcopy(params), -1.0, 0, []
    for epoch in range(1, epochs + 1):
        order = rng.permutation(size)
        for start in range(0, size, batch_size):
            update(params, gradient(params, order[start : start + batch_size]))
        history.append(round(dev_accuracy(params), 4))
        if history[-1] > best_accuracy:
            best, best_accuracy, best_epoch = copy.deepcopy(params), history[-1], epoch
    return best, {"epoch": best_epoch, "dev_by_epoch": history}


# Baseline-LinM: bilinear compatibility with Eq. 2's hinge.


def bilinear_scores(theta: np.ndarray, images: np.ndarray, options: np.ndarray) -> np.ndarray:
    """f(i, c_j) = i^T Theta c_j for every option, (n, k)."""
    return np.einsum("ne,nke->nk", images @ theta, options)


def hinge_loss(
    theta: np.ndarray, images: np.ndarray, options: np.ndarray, labels: np.ndarray, l2: float
) -> tuple[float, np.ndarray]:
    """Eq. 2 with margin 1, averaged, plus (l2 / 2)||Theta||^2; and its subgradient."""
    rows = np.arange(len(labels))
    scores = bilinear_scores(theta, images, options)
    target = scores[rows, labels]
    decoys = scores.copy()
    decoys[rows, labels] = -np.inf
    worst = np.argmax(decoys, axis=1)
    violation = MARGIN + decoys[rows, worst] - target
    active = violation > 0
    loss = float(np.sum(violation[active])) / len(labels) + 0.5 * l2 * float(np.sum(theta**2))
    difference = options[rows, worst] - options[rows, labels]
    grad = images[active].T @ difference[active] / len(labels) + l2 * theta
    return loss, grad


@dataclass(frozen=True)
class Bilinear:
    name: str
    image_scaler: Scaler
    option_scaler: Scaler
    theta: np.ndarray
    selection: dict = field(compare=False)
    uses_image: ClassVar[bool] = True

    def scores(self, batch: Batch) -> np.ndarray:
        return bilinear_scores(
            self.theta, self.image_scaler(batch.images), self.option_scaler(batch.options)
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            **self.image_scaler.arrays("image"),
            **self.option_scaler.arrays("option"),
            "theta": self.theta,
        }


def fit_bilinear(name: str, train: Batch, dev: Batch, config: TrainConfig) -> Bilinear:
    image_scaler, option_scaler = Scaler.fit(train.images), Scaler.fit(train.options)
    images, options = image_scaler(train.images), option_scaler(train.options)
    dev_images, dev_options = image_scaler(dev.images), option_scaler(dev.options)

    def gradient(params: Params, rows: np.ndarray) -> Params:
        loss_grad = hinge_loss(
            params[0], images[rows], options[rows], train.labels[rows], config.linm_l2
        )
        return [loss_grad[1]]

    def dev_accuracy(params: Params) -> float:
        return accuracy(bilinear_scores(params[0], dev_images, dev_options), dev.labels)

    params, selection = train_epochs(
        [np.zeros((images.shape[1], options.shape[2]))],
        gradient,
        sgd(config.linm_learning_rate),
        dev_accuracy,
        size=len(train),
        epochs=config.epochs,
        batch_size=config.batch_size,
        seed=config.seed,
    )
    return Bilinear(name, image_scaler, option_scaler, params[0], selection)


# FFNN: two ReLU layers and a 2-class softmax per (input, option) pair.


def init_network(sizes: Sequence[int], seed: int) -> Params:
    """[W1, b1, W2, b2, ...] with He-scaled weights."""
    rng = np.random.default_rng(seed)
    params: Params = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        params += [
            rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in),
            np.zeros(fan_out),
        ]
    return params


def network_logits(params: Params, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Logits and the input of every layer (for backpropagation)."""
    layers = [x]
    for weights, bias in zip(params[:-2:2], params[1:-2:2], strict=True):
        layers.append(np.maximum(layers[-1] @ weights + bias, 0.0))
    return layers[-1] @ params[-2] + params[-1], layers


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def cross_entropy(params: Params, x: np.ndarray, y: np.ndarray) -> tuple[float, Params]:
    """Eq. 3 averaged over pairs (y = 1: the option is the target), and its gradient."""
    logits, layers = network_logits(params, x)
    log_p = log_softmax(logits)
    loss = -float(np.mean(log_p[np.arange(len(y)), y]))
    delta = np.exp(log_p)
    delta[np.arange(len(y)), y] -= 1.0
    delta /= len(y)
    grads: Params = []
    for layer in range(len(params) // 2 - 1, -1, -1):
        grads = [layers[layer].T @ delta, delta.sum(axis=0), *grads]
        if layer:
            delta = (delta @ params[2 * layer].T) * (layers[layer] > 0)
    return loss, grads


def yes_probability(params: Params, x: np.ndarray) -> np.ndarray:
    return np.exp(log_softmax(network_logits(params, x)[0])[:, 1])


def others_mean(values: np.ndarray) -> np.ndarray:
    """For each option, the mean over the other k - 1 options (axis 1)."""
    count = values.shape[1]
    return (values.sum(axis=1, keepdims=True) - values) / (count - 1)


def pair_inputs(batch: Batch) -> np.ndarray:
    """(image, option) concatenated for every pair, (n, k, 2 dim)."""
    images = np.broadcast_to(
        batch.images[:, None, :], batch.options.shape[:2] + batch.images.shape[1:]
    )
    return np.concatenate([images, batch.options], axis=2)


def text_inputs(batch: Batch) -> np.ndarray:
    """Each option alone and relative to the other k - 1, (n, k, 2 dim + 3); no image."""
    relative = np.stack([batch.text_feature(name) for name in RELATIVE_TEXT_FEATURES], axis=2)
    return np.concatenate(
        [
            batch.options,
            batch.options - others_mean(batch.options),
            relative - others_mean(relative),
        ],
        axis=2,
    )


INPUTS: dict[str, Callable[[Batch], np.ndarray]] = {"image": pair_inputs, "text": text_inputs}


@dataclass(frozen=True)
class Classifier:
    name: str
    inputs: str  # a key of INPUTS
    scaler: Scaler
    params: tuple[np.ndarray, ...]
    selection: dict = field(compare=False)

    @property
    def uses_image(self) -> bool:
        return self.inputs == "image"

    def scores(self, batch: Batch) -> np.ndarray:
        x = self.scaler(INPUTS[self.inputs](batch))
        return yes_probability(list(self.params), x.reshape(-1, x.shape[2])).reshape(x.shape[:2])

    def arrays(self) -> dict[str, np.ndarray]:
        names = (f"{kind}{k}" for k in range(1, len(self.params) // 2 + 1) for kind in "wb")
        return {**self.scaler.arrays("input"), **dict(zip(names, self.params, strict=True))}


def fit_classifier(
    name: str, train: Batch, dev: Batch, config: TrainConfig, *, inputs: str
) -> Classifier:
    x_train, x_dev = INPUTS[inputs](train), INPUTS[inputs](dev)
    scaler = Scaler.fit(x_train)
    x_train, x_dev = scaler(x_train), scaler(x_dev)
    yes = np.zeros(x_train.shape[:2], dtype=np.int64)
    yes[np.arange(len(train)), train.labels] = 1

    def gradient(params: Params, rows: np.ndarray) -> Params:
        x = x_train[rows].reshape(-1, x_train.shape[2])
        return cross_entropy(params, x, yes[rows].reshape(-1))[1]

    def dev_accuracy(params: Params) -> float:
        scores = yes_probability(params, x_dev.reshape(-1, x_dev.shape[2]))
        return accuracy(scores.reshape(x_dev.shape[:2]), dev.labels)

    params = init_network((x_train.shape[2], *config.ffnn_hidden, 2), config.seed)
    best, selection = train_epochs(
        params,
        gradient,
        adagrad(params, config.ffnn_learning_rate, config.clip_norm),
        dev_accuracy,
        size=len(train),
        epochs=config.epochs,
        batch_size=config.batch_size,
        seed=config.seed,
    )
    return Classifier(name, inputs, scaler, tuple(best), selection)


def fit_target_lm(name: str, train: Batch, dev: Batch, config: TrainConfig) -> BigramLM:
    """The bigram LM of the train split's targets (nothing to select on dev)."""
    return fit_bigram_lm(name, train.texts[np.arange(len(train)), train.labels].tolist())


Model = Regression | Bilinear | Classifier | BigramLM

FITTERS: dict[str, Callable[[str, Batch, Batch, TrainConfig], Model]] = {
    "Baseline-I2C": functools.partial(fit_regression, direction="i2c"),
    "Baseline-C2I": functools.partial(fit_regression, direction="c2i"),
    "Baseline-LinM": fit_bilinear,
    "FFNN": functools.partial(fit_classifier, inputs="image"),
    "Text-FFNN": functools.partial(fit_classifier, inputs="text"),
    "Bigram LM": fit_target_lm,
}
