"""The text-only audit every generated dataset runs on itself (SPEC "Text-only audit").

A dataset whose target can be told from its decoys without the image does
not measure image understanding, so ``generate`` reports, for dev and test,
the untrained text-only rules (hub by BLEU and by PV cosine, longest option,
novelty guess) and the learned text-only models (Text-FFNN and the bigram LM,
fitted on a seeded sample of train, Text-FFNN selected on dev, with the
trainer's default settings), and a one-line verdict on the best of them
against chance 1/k. The Text-FFNN needs the ``train`` extra (PyTorch);
without it the audit says in ``left_out`` that it was left out.

It runs in the driver after the pipeline, from the files written (as the
statistics do): a sample of train and the dev and test splits, at COCO 2014
scale about 20k + 20k instances and a minute of fitting.
"""

import math
from dataclasses import dataclass

import numpy as np

from schemas.examples import Batch
from schemas.layout import PARQUET, shard_pattern
from transforms.corpus.split import SPLITS
from transforms.files import read_named_parquet_files
from transforms.seeds import keyed_rng
from transforms.trainer.features import (
    INSTANCE_COLUMNS,
    FeatureConfig,
    build_example,
    check_num_options,
    load_feature_space,
)
from transforms.trainer.metrics import EVALUATION_SPLITS, build_metrics, count_correct
from transforms.trainer.models import TrainConfig
from transforms.trainer.registry import FITTERS, MISSING_EXTRA
from transforms.trainer.stream import FitData, InMemoryExamples

LEARNED_AUDITS = ("Text-FFNN", "Bigram LM")
AT_CHANCE_DEVIATIONS = 3.0  # binomial standard deviations from chance still read as chance


@dataclass(frozen=True)
class AuditConfig:
    features: FeatureConfig
    train: TrainConfig  # the learned audit's settings: the trainer's defaults
    train_sample: int  # train instances the learned audit is fitted on; 0: all


def read_splits(directory: str) -> tuple[dict[str, list[dict]], int]:
    """Every split's instances and k, the number of options each has (the same in every file)."""
    rows, num_options = {split: [] for split in SPLITS}, 0
    for split in SPLITS:
        pattern = shard_pattern(directory, PARQUET, split)
        for path, table in read_named_parquet_files(pattern, list(INSTANCE_COLUMNS)):
            for instance in table.to_pylist():
                num_options = num_options or len(instance["options"])
                check_num_options(instance, num_options, path)
                rows[split].append(instance)
    return rows, num_options


def sample(instances: list[dict], size: int, seed: int) -> list[dict]:
    """``size`` instances chosen by a seeded key per example id: independent of file order."""
    if not size or len(instances) <= size:
        return instances
    keys = [keyed_rng(seed, f"audit {row['example_id']}").random() for row in instances]
    return [instances[k] for k in sorted(np.argsort(keys, kind="stable")[:size])]


def verdict(metrics: dict) -> dict:
    """The text-only row furthest from chance on test (dev when there is no test), and whether
    it is still chance. Below chance gives the target away too: a model that avoids the
    target marks it (on two options, its reverse answer is right)."""
    split = next(s for s in reversed(EVALUATION_SPLITS) if s in metrics["models"][0])
    chance = metrics["chance"]
    best = max(metrics["models"], key=lambda row: abs(row[split]["accuracy"] - chance))
    result = best[split]
    bound = AT_CHANCE_DEVIATIONS * math.sqrt(chance * (1 - chance) / result["total"])
    at_chance = abs(result["accuracy"] - chance) <= bound
    side = "ABOVE" if result["accuracy"] > chance else "BELOW"
    line = (
        f"text-only furthest from chance: {100 * result['accuracy']:.1f}% on {split} "
        f"({best['model']}; chance {100 * chance:.0f}%): "
        + ("at chance" if at_chance else f"{side} CHANCE: the options give the target away")
    )
    return {"model": best["model"], "split": split, **result, "at_chance": at_chance, "line": line}


def audit_dataset(directory: str, config: AuditConfig) -> dict:
    """The audit rows (as ``pipelines.train``'s metrics) and the verdict, for ``directory``."""
    space = load_feature_space(config.features)
    rows, num_options = read_splits(directory)
    seen = frozenset(option for row in rows["train"] for option in row["options"])
    scratch = space.corpus.ngrams.scratch()
    rows["train"] = sample(rows["train"], config.train_sample, config.train.seed)
    examples = {
        split: [build_example(row, space, seen, scratch) for row in split_rows]
        for split, split_rows in rows.items()
    }
    if not examples["train"] or not examples["dev"]:
        return {"skipped": "the learned audit needs train and dev instances"}
    data = FitData(*(InMemoryExamples(Batch.stack(examples[split])) for split in ("train", "dev")))
    learned = [name for name in LEARNED_AUDITS if name in FITTERS]
    models = [FITTERS[name](name, data, config.train) for name in learned]
    evaluated = [e for split in EVALUATION_SPLITS for e in examples[split]]
    metrics = build_metrics(count_correct(evaluated, models), models, num_options)
    metrics["train_instances"] = len(examples["train"])
    if len(learned) < len(LEARNED_AUDITS):
        left_out = ", ".join(name for name in LEARNED_AUDITS if name not in learned)
        metrics["left_out"] = f"{left_out}: {MISSING_EXTRA}"
    metrics["verdict"] = verdict(metrics)
    return metrics
