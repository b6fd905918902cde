"""Baseline-LinM, the FFNN and the Text-FFNN (Ding et al. 2016, sections 4.1-4.2) in PyTorch.

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

:func:`train_epochs` is the loop every network here and in ``vec2seq.py``
trains with: shuffled minibatches streamed from train, one pass per epoch,
the epoch with the best dev accuracy kept (the paper's model selection).
"""

import copy
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np
import torch
from torch import nn

from schemas.examples import Batch
from transforms.progress import Ticker, report
from transforms.seeds import keyed_int
from transforms.trainer.models import TrainConfig, source_accuracy
from transforms.trainer.scaling import Scaler, fit_scaler
from transforms.trainer.stream import FitData

MARGIN = 1.0
RELATIVE_TEXT_FEATURES = ("length", "hub_bleu", "hub_pv")

Loss = Callable[[Batch], dict[str, torch.Tensor]]  # "loss" is minimised; other parts are logged


def seeded(seed: int, key: str) -> torch.Generator:
    return torch.Generator().manual_seed(keyed_int(seed, key) % 2**63)


def tensor(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))


class Trainable(Protocol):
    """A model whose scores read a PyTorch module that training updates in place."""

    name: str
    module: nn.Module

    def scores(self, batch: Batch) -> np.ndarray: ...


def steps_done(steps: int, per_epoch: int) -> str:
    """ "300 of 1250" once the first epoch has counted an epoch's steps, "300" before."""
    return f"{steps} of {per_epoch}" if per_epoch else str(steps)


def train_epochs(
    model: Trainable,
    loss: Loss,
    optimizer: torch.optim.Optimizer,
    data: FitData,
    config: TrainConfig,
    *,
    epochs: int,
    clip_norm: float | None,
) -> dict:
    """Trains ``model.module`` in place on minibatches of ``config.batch_size`` and leaves it
    with the weights of the epoch with the best dev accuracy (``model.scores`` reads the
    module); returns the selection record (best epoch, dev accuracy and mean training losses
    per epoch). Reports each epoch's dev accuracy, and its steps every few seconds (a
    Vec2seq epoch takes minutes), as progress lines of ``config.stage``."""
    module, name = model.module, model.name
    best_state, best_accuracy, best_epoch = copy.deepcopy(module.state_dict()), -1.0, 0
    history: list[float] = []
    losses: dict[str, list[float]] = {}
    ticker, per_epoch = Ticker(), 0
    for epoch in range(1, epochs + 1):
        module.train()
        sums: dict[str, float] = {}
        steps = 0
        shuffle = keyed_int(config.seed, f"{name} epoch {epoch}")
        for batch in data.train.batches(config.batch_size, seed=shuffle):
            optimizer.zero_grad()
            parts = loss(batch)
            parts["loss"].backward()
            if clip_norm is not None:
                nn.utils.clip_grad_norm_(module.parameters(), clip_norm)
            optimizer.step()
            for part, value in parts.items():
                sums[part] = sums.get(part, 0.0) + float(value.detach())
            steps += 1
            if ticker.due():
                step = steps_done(steps, per_epoch)
                report(config.stage, "%s epoch %d of %d, step %s", name, epoch, epochs, step)
        per_epoch = steps
        module.eval()
        with torch.no_grad():
            history.append(round(source_accuracy(model.scores, data.dev), 4))
        for part, total in sums.items():
            losses.setdefault(part, []).append(round(total / max(steps, 1), 5))
        report(
            config.stage, "%s epoch %d of %d: dev accuracy %.4f", name, epoch, epochs, history[-1]
        )
        if history[-1] > best_accuracy:
            best_state = copy.deepcopy(module.state_dict())
            best_accuracy, best_epoch = history[-1], epoch
    module.load_state_dict(best_state)
    module.eval()
    return {
        "epoch": best_epoch,
        "dev_by_epoch": history,
        **{f"train_{part}_by_epoch": values for part, values in losses.items()},
    }


# Baseline-LinM: bilinear compatibility with Eq. 2's hinge.


class BilinearModule(nn.Module):
    def __init__(self, image_dim: int, option_dim: int):
        super().__init__()
        self.theta = nn.Parameter(torch.zeros(image_dim, option_dim))

    def forward(self, images: torch.Tensor, options: torch.Tensor) -> torch.Tensor:
        """f(i, c_j) = i^T Theta c_j for every option, (n, k)."""
        return torch.einsum("ne,nke->nk", images @ self.theta, options)


def hinge_loss(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Eq. 2 with margin 1 against the worst offending decoy, averaged over instances."""
    rows = torch.arange(len(labels))
    target = scores[rows, labels]
    decoys = scores.clone()
    decoys[rows, labels] = -torch.inf
    return torch.clamp(MARGIN + decoys.max(dim=1).values - target, min=0).mean()


@dataclass(frozen=True)
class Bilinear:
    name: str
    image_scaler: Scaler
    option_scaler: Scaler
    module: BilinearModule
    selection: dict = field(compare=False)
    uses_image: ClassVar[bool] = True

    def scores(self, batch: Batch) -> np.ndarray:
        with torch.no_grad():
            images = tensor(self.image_scaler(batch.images))
            return self.module(images, tensor(self.option_scaler(batch.options))).numpy()

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            **self.image_scaler.arrays("image"),
            **self.option_scaler.arrays("option"),
            "theta": self.module.theta.detach().numpy(),
        }


def fit_bilinear(name: str, data: FitData, config: TrainConfig) -> Bilinear:
    image_scaler = fit_scaler(data.train, lambda batch: batch.images)
    option_scaler = fit_scaler(data.train, lambda batch: batch.options)
    module = BilinearModule(len(image_scaler.mean), len(option_scaler.mean))
    model = Bilinear(name, image_scaler, option_scaler, module, {})

    def loss(batch: Batch) -> dict[str, torch.Tensor]:
        images, options = tensor(image_scaler(batch.images)), tensor(option_scaler(batch.options))
        hinge = hinge_loss(module(images, options), torch.from_numpy(batch.labels))
        return {"loss": hinge + 0.5 * config.linm_l2 * (module.theta**2).sum()}

    optimizer = torch.optim.SGD(module.parameters(), lr=config.linm_learning_rate)
    selection = train_epochs(
        model, loss, optimizer, data, config, epochs=config.epochs, clip_norm=None
    )
    return Bilinear(name, image_scaler, option_scaler, module, selection)


# FFNN: two ReLU layers and a 2-class softmax per (input, option) pair.


def feedforward(sizes: Sequence[int], generator: torch.Generator) -> nn.Sequential:
    """ReLU layers of ``sizes`` ending in 2 logits ("no", "yes"), He-initialised."""
    layers: list[nn.Module] = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        linear = nn.Linear(fan_in, fan_out)
        nn.init.kaiming_normal_(linear.weight, nonlinearity="relu", generator=generator)
        nn.init.zeros_(linear.bias)
        layers += [linear, nn.ReLU()]
    return nn.Sequential(*layers[:-1])


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


def yes_labels(batch: Batch) -> torch.Tensor:
    """1 for the target's pair, 0 for a decoy's, (n * k,) in the pairs' order."""
    yes = torch.zeros(batch.options.shape[:2], dtype=torch.int64)
    yes[torch.arange(len(batch)), torch.from_numpy(batch.labels)] = 1
    return yes.reshape(-1)


@dataclass(frozen=True)
class Classifier:
    name: str
    inputs: str  # a key of INPUTS
    scaler: Scaler
    module: nn.Sequential
    selection: dict = field(compare=False)

    @property
    def uses_image(self) -> bool:
        return self.inputs == "image"

    def pairs(self, batch: Batch) -> torch.Tensor:
        x = self.scaler(INPUTS[self.inputs](batch))
        return tensor(x.reshape(-1, x.shape[2]))

    def scores(self, batch: Batch) -> np.ndarray:
        """The log "yes" probability of every option."""
        with torch.no_grad():
            log_yes = torch.log_softmax(self.module(self.pairs(batch)), dim=1)[:, 1]
        return log_yes.numpy().reshape(batch.options.shape[:2])

    def arrays(self) -> dict[str, np.ndarray]:
        """w1, b1, w2, ...: each layer's (in, out) weights and bias."""
        linears = [layer for layer in self.module if isinstance(layer, nn.Linear)]
        weights = {}
        for number, linear in enumerate(linears, start=1):
            weights[f"w{number}"] = linear.weight.detach().numpy().T
            weights[f"b{number}"] = linear.bias.detach().numpy()
        return {**self.scaler.arrays("input"), **weights}


def fit_classifier(name: str, data: FitData, config: TrainConfig, *, inputs: str) -> Classifier:
    scaler = fit_scaler(data.train, INPUTS[inputs])
    sizes = (len(scaler.mean), *config.ffnn_hidden, 2)
    module = feedforward(sizes, seeded(config.seed, name))
    model = Classifier(name, inputs, scaler, module, {})

    def loss(batch: Batch) -> dict[str, torch.Tensor]:
        return {"loss": nn.functional.cross_entropy(module(model.pairs(batch)), yes_labels(batch))}

    optimizer = torch.optim.Adagrad(module.parameters(), lr=config.ffnn_learning_rate)
    selection = train_epochs(
        model, loss, optimizer, data, config, epochs=config.epochs, clip_norm=config.clip_norm
    )
    return Classifier(name, inputs, scaler, module, selection)
