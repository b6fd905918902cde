"""``dmc-evaluate``'s metrics: a contrastive model's accuracy beside the version's text-only
audit, the image margin and, for closed sets, the set score.

The metrics have the trainer's shape (``transforms.trainer.metrics``: ``num_options``,
``chance``, ``models`` rows with dev/test results), so its table and plot read them; the
text-only rows are the ones ``generate`` audited the version with (its statistics.json).
An instance whose image was not scored is counted by why: not found, or unreadable.
"""

import pyarrow as pa

from transforms.trainer.metrics import (
    EVALUATION_SPLITS,
    metrics_table,
    set_counts,
    set_table,
    split_result,
)
from transforms.vision.zero_shot import MISSING, UNREADABLE, problem_kind

SHOWN_UNREADABLE = 5  # unreadable images named in the table; metrics.json lists them all


def split_rows(scores: pa.Table) -> dict[str, list[dict]]:
    """The scores file's rows of each evaluated split that has any."""
    rows = scores.to_pylist()
    by_split = {
        split: [row for row in rows if row["split"] == split] for split in EVALUATION_SPLITS
    }
    return {split: members for split, members in by_split.items() if members}


def model_row(name: str, by_split: dict[str, list[dict]], sets: bool) -> dict:
    """The model's row: accuracy over the instances whose image was found; with ``sets``,
    the set score over the sets whose images were all found."""
    row: dict = {"model": name, "input": "image+text", "trained": False}
    for split, rows in by_split.items():
        found = [r for r in rows if r["image_found"]]
        if found:
            row[split] = split_result(sum(r["correct"] for r in found), len(found))
    if sets:
        row["sets"] = {}
        for split, rows in by_split.items():
            whole = {r["option_set"] for r in rows} - {
                r["option_set"] for r in rows if not r["image_found"]
            }
            outcomes = [(r["option_set"], r["correct"]) for r in rows if r["option_set"] in whole]
            if outcomes:
                row["sets"][split] = split_result(*set_counts(outcomes))
    return row


def image_margin(model: dict, text_rows: list[dict]) -> dict:
    """Per split, the model's accuracy minus the best text-only row's: what the image adds.

    >>> image_margin({"dev": {"accuracy": 0.6}},
    ...              [{"model": "hub", "dev": {"accuracy": 0.25}}])["dev"]
    {'margin': 0.35, 'best_text_only': 'hub'}
    """
    margins = {}
    for split in EVALUATION_SPLITS:
        rows = [row for row in text_rows if split in row]
        if split in model and rows:
            best = max(rows, key=lambda row: row[split]["accuracy"])
            margin = model[split]["accuracy"] - best[split]["accuracy"]
            margins[split] = {"margin": round(margin, 12), "best_text_only": best["model"]}
    return margins


def problem_counts(by_split: dict[str, list[dict]], kind: str) -> dict[str, int]:
    """Per split, the instances whose image was not scored for this kind of problem."""
    return {
        split: sum(problem_kind(r["image_problem"]) == kind for r in rows)
        for split, rows in by_split.items()
    }


def unreadable_images(rows: list[dict]) -> list[dict]:
    """Each image file that was there but could not be decoded, once, with PIL's reason.

    >>> unreadable_images([{"image_file": "b.png", "image_problem": "not an image"},
    ...                    {"image_file": "a.png", "image_problem": "not found"},
    ...                    {"image_file": "b.png", "image_problem": "not an image"}])
    [{'file': 'b.png', 'why': 'not an image'}]
    """
    why = {r["image_file"]: r["image_problem"] for r in rows}
    return [
        {"file": name, "why": reason}
        for name, reason in sorted(why.items())
        if problem_kind(reason) == UNREADABLE
    ]


def evaluation_metrics(
    scores: pa.Table, *, name: str, audit: dict, strategy: str, num_options: int, sets: bool
) -> dict:
    """The metrics file: the model's row after the audit's text-only rows, chance 1/k, the
    image margin, the strategy, and per split the instances whose image was not found or
    could not be decoded (those files listed with PIL's reason)."""
    by_split = split_rows(scores)
    model = model_row(name, by_split, sets)
    text_rows = [row for row in audit.get("models", []) if row["input"] == "text"]
    return {
        "strategy": strategy,
        "num_options": num_options,
        "chance": 1 / num_options,
        "models": [*text_rows, model],
        "image_margin": image_margin(model, text_rows),
        "images_not_found": problem_counts(by_split, MISSING),
        "images_unreadable": problem_counts(by_split, UNREADABLE),
        "unreadable_images": unreadable_images(scores.to_pylist()),
    }


def evaluation_table(metrics: dict) -> str:
    """The trainer's Table 3 shape for the model and the text-only rows, then the image
    margin, the set score (closed sets) and the instances left without an image, by why."""
    lines = [f"strategy: {metrics['strategy']} ({metrics['num_options']} options)", ""]
    lines.append(metrics_table(metrics))
    for split, margin in metrics["image_margin"].items():
        lines.append(
            f"image margin {split}: {100 * margin['margin']:+.1f} points (accuracy minus the "
            f"best text-only row's, {margin['best_text_only']})"
        )
    sets = set_table(metrics)
    if sets:
        lines += ["", sets]
    for key, what in (
        ("images_not_found", "was not found under --images"),
        ("images_unreadable", "is there but unreadable"),
    ):
        if any(metrics[key].values()):
            counts = ", ".join(f"{split} {count}" for split, count in metrics[key].items())
            lines.append(f"instances whose image {what} (not scored): {counts}")
    unreadable = metrics["unreadable_images"]
    lines += [f"  {image['file']}: {image['why']}" for image in unreadable[:SHOWN_UNREADABLE]]
    if len(unreadable) > SHOWN_UNREADABLE:
        lines.append(f"  ... {len(unreadable)} unreadable images in all, listed in metrics.json")
    return "\n".join(lines)
