"""What every model of the trainer shares: scores, answers, settings, the bigram LM's fit.

Every model turns a :class:`~schemas.examples.Batch` into scores of shape
(n, k) (k options per instance: 5, 4 or 2) and answers with the
highest-scoring option, so one accuracy function serves them all. Fitters
read the train and dev splits through a :class:`~transforms.trainer.stream.FitData`,
in minibatches, never as whole arrays. The models (Ding et al. 2016, section 4
and Table 3) live one family per module and are registered in
``transforms/trainer/registry.py``:

- ``regression.py``: Baseline-I2C / -C2I, ridge regression on targets;
- ``neural.py`` (PyTorch): Baseline-LinM, the FFNN and the Text-FFNN;
- ``vec2seq.py`` (PyTorch): Vec2seq+FFNN, which also generates captions;
- ``language_model.py``: the bigram LM of Hodosh & Hockenmaier 2016.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from schemas.examples import Batch
from transforms.trainer.language_model import BigramLM, fit_bigram_lm
from transforms.trainer.stream import ExampleSource, FitData

PASS_BATCH = 1024  # examples per batch when a pass only reads (statistics, dev accuracy)
DECODINGS = ("greedy", "beam")  # how a captioning model generates (Table 5's captions)


class Model(Protocol):
    name: str
    selection: dict
    uses_image: bool

    def scores(self, batch: Batch) -> np.ndarray: ...

    def arrays(self) -> dict[str, np.ndarray]: ...


@runtime_checkable
class Captioner(Protocol):
    """A model that also captions images from their vectors (Vec2seq+FFNN)."""

    name: str

    def captions(self, images: np.ndarray, *, decoding: str, beam_size: int) -> list[str]: ...

    def caption_scores(
        self, hypotheses: dict[str, str], references: dict[str, list[str]]
    ) -> dict[str, float]:
        """CIDEr-D and ROUGE-L of one caption per image against the image's captions."""


def answers(scores: np.ndarray) -> np.ndarray:
    """The chosen option per instance; ties go to the first option.

    Examples hold their options in text order (``features.build_example``), so a
    tie goes to the alphabetically first text: a function of the option texts
    answers an option set alike whatever order the instance stored it in.
    """
    return np.argmax(scores, axis=1)


def accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(answers(scores) == labels)) if len(labels) else 0.0


def source_accuracy(scores: Callable[[Batch], np.ndarray], source: ExampleSource) -> float:
    """Accuracy over a whole split, read one batch at a time."""
    correct = total = 0
    for batch in source.batches(PASS_BATCH):
        correct += int(np.sum(answers(scores(batch)) == batch.labels))
        total += len(batch)
    return correct / total if total else 0.0


def targets(batch: Batch) -> np.ndarray:
    """The target option's vector of every instance, (n, dim)."""
    return batch.options[np.arange(len(batch)), batch.labels]


def target_texts(batch: Batch) -> list[str]:
    return batch.texts[np.arange(len(batch)), batch.labels].tolist()


@dataclass(frozen=True)
class Vec2seqSize:
    """Table 4's model size: the GRUs' state (and word embedding) size, the FFNN's two
    hidden layers."""

    state: int
    hidden: tuple[int, int]

    def __str__(self) -> str:
        return f"{self.state}:{self.hidden[0]}:{self.hidden[1]}"


@dataclass(frozen=True)
class TrainConfig:
    """The fits' settings; defaults and meanings live in pipelines/options/train.py."""

    ridge_alphas: tuple[float, ...]
    epochs: int
    batch_size: int
    linm_learning_rate: float
    linm_l2: float
    ffnn_hidden: tuple[int, ...]
    ffnn_learning_rate: float
    clip_norm: float
    seed: int
    vec2seq_sizes: tuple[Vec2seqSize, ...] = (Vec2seqSize(256, (256, 64)),)
    lambda_gen: tuple[float, ...] = (1.0,)
    vec2seq_epochs: int = 5
    vec2seq_learning_rate: float = 0.01
    vocabulary_min_count: int = 5
    decoding: str = "greedy"
    beam_size: int = 3
    fit_buffer: int = 10_000
    stage: str = "train"  # what the fits' progress lines say they belong to (generate: "audit")


def fit_target_lm(name: str, data: FitData, config: TrainConfig) -> BigramLM:
    """The bigram LM of the train split's targets (nothing to select on dev); it holds their
    texts, not the examples."""
    captions = [text for batch in data.train.batches(PASS_BATCH) for text in target_texts(batch)]
    return fit_bigram_lm(name, captions)
