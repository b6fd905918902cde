"""Fitting and evaluating the models as Beam stages, and the Table 3 report.

**Fitting is a global step.** Every model's loss (ridge's normal equations,
the epochs of subgradient or Adagrad steps, the dev selection after each
epoch) needs the whole train split and dev split at hand, so
:class:`FitModels` gathers the train and dev Examples with ``ToList`` onto
one worker and fits the models there one after another; what flows on is the
fitted models (kilobytes to a few MB each), which every evaluating worker
receives as a side input. Cost: that worker holds every train and dev
Example ((1 + k) * dim float32, 6 KB at dim 256 and k = 5, and the k option
texts) plus the arrays stacked and
scaled from them; on COCO val2017 (20k train and dev instances) the whole
process peaked at 2.0 GB, so COCO 2014's ~570k need a high-memory worker or a
smaller ``--dim``.

**Evaluation is parallel.** :class:`Evaluate` scores batches of dev and test
Examples with every model and counts correct answers per (model, split).
Chance is 1/k for a version with k options per instance.
"""

import io
import math
from collections.abc import Iterable, Iterator

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems

from schemas.examples import Batch, Example
from transforms.errors import InputError
from transforms.files import write_file, write_json
from transforms.progress import timed
from transforms.trainer.audits import AUDITS
from transforms.trainer.models import FITTERS, Model, TrainConfig, answers

FIT_SPLITS = ("train", "dev")
EVALUATION_SPLITS = ("dev", "test")


def fit_and_write(examples: list[Example], *, config: TrainConfig, output: str) -> Iterator[Model]:
    """Fits every model on train (selected on dev), writes each to <output>/models/<name>.npz."""
    by_split = {split: [e for e in examples if e.split == split] for split in FIT_SPLITS}
    for split, members in by_split.items():
        if not members:
            raise InputError(f"the dataset has no {split} instances: the trainer needs some")
    train, dev = (Batch.stack(by_split[split]) for split in FIT_SPLITS)
    for name, fit in FITTERS.items():
        with timed("train", f"fit_{name}"):
            model = fit(name, train, dev, config)
        arrays = io.BytesIO()
        np.savez(arrays, **model.arrays())
        write_file(FileSystems.join(output, "models", f"{name}.npz"), arrays.getvalue())
        yield model


class FitModels(beam.PTransform):
    """Examples -> one fitted model per element. The global step (module docstring)."""

    def __init__(self, *, config: TrainConfig, output: str):
        super().__init__()
        self._config, self._output = config, output

    def expand(self, examples):
        return (
            examples
            | "TrainAndDev" >> beam.Filter(lambda example: example.split in FIT_SPLITS)
            | "Gather" >> beam.combiners.ToList()
            | "Fit" >> beam.FlatMap(fit_and_write, config=self._config, output=self._output)
        )


def count_correct(
    examples: list[Example], models: list
) -> list[tuple[tuple[str, str], tuple[int, int]]]:
    """((model, split), (correct, total)) for a batch of examples, every audit and model."""
    counts = []
    for split in EVALUATION_SPLITS:
        members = [example for example in examples if example.split == split]
        if not members:
            continue
        batch = Batch.stack(members)
        for model in (*AUDITS, *models):
            correct = int(np.sum(answers(model.scores(batch)) == batch.labels))
            counts.append(((model.name, split), (correct, len(batch))))
    return counts


def add_counts(counts: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """Sums (correct, total) pairs: associative, so Beam may combine partial sums.

    >>> add_counts([(3, 10), (5, 10), (0, 4)])
    (8, 24)
    """
    correct, total = 0, 0
    for c, t in counts:
        correct, total = correct + c, total + t
    return correct, total


class Evaluate(beam.PTransform):
    """Examples + fitted models -> ((model, split), (correct, total)), for dev and test."""

    def __init__(self, *, models):
        super().__init__()
        self._models = models

    def expand(self, examples):
        return (
            examples
            | "DevAndTest" >> beam.Filter(lambda example: example.split in EVALUATION_SPLITS)
            | "Batch" >> beam.BatchElements(min_batch_size=256, max_batch_size=2048)
            | "Score" >> beam.FlatMap(count_correct, models=beam.pvalue.AsList(self._models))
            | "Sum" >> beam.CombinePerKey(add_counts)
        )


def binomial_std(successes: int, trials: int) -> float:
    """The standard deviation sqrt(p (1 - p) / n) of a share p estimated from n trials.

    >>> round(binomial_std(828, 1000), 4)
    0.0119
    """
    if trials == 0:
        return 0.0
    share = successes / trials
    return math.sqrt(share * (1 - share) / trials)


def split_result(correct: int, total: int) -> dict:
    """Accuracy with its binomial standard deviation sqrt(p (1 - p) / n), as in Table 3.

    >>> {k: round(v, 4) for k, v in split_result(300, 1000).items()}
    {'accuracy': 0.3, 'std': 0.0145, 'correct': 300, 'total': 1000}
    """
    accuracy = correct / total
    return {
        "accuracy": accuracy,
        "std": binomial_std(correct, total),
        "correct": correct,
        "total": total,
    }


def build_metrics(counts: list, models: list, num_options: int) -> dict:
    """The metrics file: chance (1/k), and per model its input, dev/test results and how it
    was selected."""
    by_key = dict(counts)
    rows = []
    for model in (*AUDITS, *sorted(models, key=lambda m: list(FITTERS).index(m.name))):
        rows.append(
            {
                "model": model.name,
                "input": "image+text" if model.uses_image else "text",
                "trained": model not in AUDITS,
                **{
                    split: split_result(*by_key[(model.name, split)])
                    for split in EVALUATION_SPLITS
                    if (model.name, split) in by_key
                },
                "selection": getattr(model, "selection", {}),
            }
        )
    return {"num_options": num_options, "chance": 1 / num_options, "models": rows}


class WriteMetrics(beam.PTransform):
    """Counts + fitted models -> the metrics file (one write, after every count is in)."""

    def __init__(self, *, models, path: str, num_options: int):
        super().__init__()
        self._models, self._path, self._num_options = models, path, num_options

    def expand(self, counts):
        return (
            counts
            | "Gather" >> beam.combiners.ToList()
            | "Metrics"
            >> beam.Map(
                build_metrics,
                models=beam.pvalue.AsList(self._models),
                num_options=self._num_options,
            )
            | "Write" >> beam.Map(lambda metrics, path: write_json(path, metrics), self._path)
        )


def metrics_table(metrics: dict) -> str:
    """Table 3's shape: accuracy (%) and standard deviation on dev and test, every model."""
    lines = [f"{'model':<18}{'input':<12}{'dev':>14}{'test':>14}"]
    for row in metrics["models"]:
        cells = [
            f"{100 * row[split]['accuracy']:.1f} ±{100 * row[split]['std']:.1f}"
            if split in row
            else "-"
            for split in EVALUATION_SPLITS
        ]
        lines.append(f"{row['model']:<18}{row['input']:<12}{cells[0]:>14}{cells[1]:>14}")
    chance = f"{100 * metrics['chance']:.1f}"
    lines.append(f"{'chance':<30}{chance:>14}{chance:>14}")
    return "\n".join(lines)
