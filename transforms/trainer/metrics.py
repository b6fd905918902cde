"""Accuracy with its standard deviation per (model, split), and the Tables 3-5 report.

Shared by the trainer and by ``generate``'s text-only audit, so it imports nothing of the
``train`` extra. Chance is 1/k for a version with k options per instance.
"""

import math
from collections.abc import Iterable, Iterator

from schemas.examples import Batch, Example
from transforms.trainer.models import answers
from transforms.trainer.text_rules import TEXT_RULES

EVALUATION_SPLITS = ("dev", "test")
CAPTION_METRICS = ("ROUGE-L", "CIDEr")  # the keys of a model's captioning scores


def instance_outcomes(examples: list[Example], models: list) -> Iterator[tuple[str, Example, bool]]:
    """(model, example, answered right) for a batch of dev and test examples, every audit
    and model."""
    for split in EVALUATION_SPLITS:
        members = [example for example in examples if example.split == split]
        if not members:
            continue
        batch = Batch.stack(members)
        for model in (*TEXT_RULES, *models):
            right = answers(model.scores(batch)) == batch.labels
            for example, correct in zip(members, right.tolist(), strict=True):
                yield model.name, example, bool(correct)


def count_correct(
    examples: list[Example], models: list
) -> list[tuple[tuple[str, str], tuple[int, int]]]:
    """((model, split), (correct, total)) for a batch of examples, every audit and model."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for name, example, correct in instance_outcomes(examples, models):
        right, total = counts.get((name, example.split), (0, 0))
        counts[(name, example.split)] = (right + correct, total + 1)
    return list(counts.items())


def set_outcomes(examples: list[Example], models: list) -> list[tuple[tuple[str, str, str], bool]]:
    """((model, split, the closed set), answered right) per example."""
    return [
        ((name, example.split, example.option_set), correct)
        for name, example, correct in instance_outcomes(examples, models)
    ]


def add_counts(counts: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """Sums (correct, total) pairs: associative, so Beam may combine partial sums.

    >>> add_counts([(3, 10), (5, 10), (0, 4)])
    (8, 24)
    """
    correct, total = 0, 0
    for c, t in counts:
        correct, total = correct + c, total + t
    return correct, total


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


def build_metrics(
    counts: list,
    models: list,
    num_options: int,
    captioning: list | None = None,
    sets: list | None = None,
) -> dict:
    """The metrics file: chance (1/k), and per model its input, dev/test results, how it was
    selected, for a captioning model its captions' scores per split, and with ``sets``
    ((model, split), (sets all right, sets)) its set score. Models keep the order they
    were fitted in."""
    by_key, captioned, by_set = dict(counts), dict(captioning or []), dict(sets or [])
    rows = []
    for model in (*TEXT_RULES, *models):
        row = {
            "model": model.name,
            "input": "image+text" if model.uses_image else "text",
            "trained": model not in TEXT_RULES,
            **{
                split: split_result(*by_key[(model.name, split)])
                for split in EVALUATION_SPLITS
                if (model.name, split) in by_key
            },
            "selection": getattr(model, "selection", {}),
        }
        scores = {
            split: captioned[(model.name, split)]
            for split in EVALUATION_SPLITS
            if (model.name, split) in captioned
        }
        if scores:
            row["captioning"] = scores
        set_scores = {
            split: split_result(*by_set[(model.name, split)])
            for split in EVALUATION_SPLITS
            if (model.name, split) in by_set
        }
        if set_scores:
            row["sets"] = set_scores
        rows.append(row)
    return {"num_options": num_options, "chance": 1 / num_options, "models": rows}


def metrics_table(metrics: dict) -> str:
    """Table 3's shape: accuracy (%) and standard deviation on dev and test, every model."""
    width = max(18, *(len(row["model"]) + 2 for row in metrics["models"]))
    lines = [f"{'model':<{width}}{'input':<12}{'dev':>14}{'test':>14}"]
    for row in metrics["models"]:
        cells = [
            f"{100 * row[split]['accuracy']:.1f} ±{100 * row[split]['std']:.1f}"
            if split in row
            else "-"
            for split in EVALUATION_SPLITS
        ]
        lines.append(f"{row['model']:<{width}}{row['input']:<12}{cells[0]:>14}{cells[1]:>14}")
    chance = f"{100 * metrics['chance']:.1f}"
    lines.append(f"{'chance':<{width + 12}}{chance:>14}{chance:>14}")
    return "\n".join(lines)


def aligned(header: list[str], rows: list[list[str]]) -> str:
    """A plain-text table whose columns are as wide as their widest cell, header included,
    so no value, however long, pushes its row out of line: the first column to the left,
    the numbers to the right.

    >>> print(aligned(["model", "size"], [["A", "1024:512:256"]]))
    model          size
    A      1024:512:256
    """
    widths = [max(map(len, column)) for column in zip(header, *rows, strict=True)]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if column == 0 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in (header, *rows)
    )


def captioning_table(metrics: dict) -> str:
    """Tables 4 and 5's shape: per captioning model its size, lambda_gen, accuracy and its
    captions' ROUGE-L and CIDEr-D on dev and test ("" when no model captions)."""
    rows = [row for row in metrics["models"] if "captioning" in row]
    if not rows:
        return ""
    header = ["model", "size", "λgen"]
    header += [f"acc {split}" for split in EVALUATION_SPLITS]
    header += [f"{metric} {split}" for metric in CAPTION_METRICS for split in EVALUATION_SPLITS]
    lines = []
    for row in rows:
        accuracies = [
            f"{100 * row[split]['accuracy']:.1f}" if split in row else "-"
            for split in EVALUATION_SPLITS
        ]
        scores = [
            f"{row['captioning'][split][metric]:.3f}" if split in row["captioning"] else "-"
            for metric in CAPTION_METRICS
            for split in EVALUATION_SPLITS
        ]
        selection = row["selection"]
        cells = [row["model"], str(selection["size"]), f"{selection['lambda_gen']:g}"]
        lines.append([*cells, *accuracies, *scores])
    return aligned(header, lines)


def set_counts(outcomes: Iterable[tuple[str, bool]]) -> tuple[int, int]:
    """(sets all of whose instances are answered right, sets) from (set key, correct) of
    each instance: Winoground's group score, for closed sets.

    >>> set_counts([("a", True), ("a", True), ("b", True), ("b", False)])
    (1, 2)
    """
    right: dict[str, bool] = {}
    for key, correct in outcomes:
        right[key] = right.get(key, True) and correct
    return sum(right.values()), len(right)


def set_table(metrics: dict) -> str:
    """The set score of each model that has one ("" when none does): the share of closed
    sets whose instances are all answered right, each instance answered on its own."""
    rows = [row for row in metrics["models"] if "sets" in row]
    if not rows:
        return ""
    header = ["set score", *EVALUATION_SPLITS]
    lines = [
        [
            row["model"],
            *(
                f"{100 * row['sets'][split]['accuracy']:.1f} ±{100 * row['sets'][split]['std']:.1f}"
                f" of {row['sets'][split]['total']}"
                if split in row["sets"]
                else "-"
                for split in EVALUATION_SPLITS
            ),
        ]
        for row in rows
    ]
    return aligned(header, lines)
