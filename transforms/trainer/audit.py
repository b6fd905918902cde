"""The text-only audit every generated dataset runs on itself (SPEC "Text-only audit").

A dataset whose target can be told from its decoys without the image does
not measure image understanding, so ``generate`` reports, for dev and test,
the untrained text-only rules (hub by BLEU and by PV cosine, longest option,
novelty guess) and the learned text-only model (Text-FFNN, fitted on a seeded
sample of train and selected on dev, with the trainer's default settings),
and a one-line verdict on the best of them.

It runs in the driver after the pipeline, from the files written (as the
statistics do): a sample of train and the dev and test splits, at COCO 2014
scale about 20k + 20k instances and a minute of fitting.
"""

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from schemas.examples import Batch
from schemas.layout import PARQUET, shard_pattern
from transforms.corpus.split import SPLITS
from transforms.files import read_parquet_files
from transforms.seeds import keyed_rng
from transforms.trainer.features import (
    INSTANCE_COLUMNS,
    FeatureConfig,
    build_example,
    load_feature_space,
)
from transforms.trainer.fit import CHANCE, EVALUATION_SPLITS, build_metrics, count_correct
from transforms.trainer.models import FITTERS, TrainConfig

LEARNED_AUDIT = "Text-FFNN"
AT_CHANCE_DEVIATIONS = 3.0  # binomial standard deviations above chance still read as chance


@dataclass(frozen=True)
class AuditConfig:
    features: FeatureConfig
    train: TrainConfig  # the learned audit's settings: the trainer's defaults
    train_sample: int  # train instances the learned audit is fitted on; 0: all


def read_split(directory: str, split: str) -> list[dict]:
    pattern = shard_pattern(directory, PARQUET, split)
    tables = list(read_parquet_files(pattern, list(INSTANCE_COLUMNS)))
    return pa.concat_tables(tables).to_pylist() if tables else []


def sample(instances: list[dict], size: int, seed: int) -> list[dict]:
    """``size`` instances chosen by a seeded key per example id: independent of file order."""
    if not size or len(instances) <= size:
        return instances
    keys = [keyed_rng(seed, f"audit {row['example_id']}").random() for row in instances]
    return [instances[k] for k in sorted(np.argsort(keys, kind="stable")[:size])]


def verdict(metrics: dict) -> dict:
    """The best text-only row on test (dev when there is no test) and whether it is chance."""
    split = next(s for s in reversed(EVALUATION_SPLITS) if s in metrics["models"][0])
    best = max(metrics["models"], key=lambda row: row[split]["accuracy"])
    result = best[split]
    bound = CHANCE + AT_CHANCE_DEVIATIONS * math.sqrt(CHANCE * (1 - CHANCE) / result["total"])
    at_chance = result["accuracy"] <= bound
    line = (
        f"text-only best: {100 * result['accuracy']:.1f}% on {split} ({best['model']}; "
        f"chance {100 * CHANCE:.0f}%): "
        + ("at chance" if at_chance else "ABOVE CHANCE: the options give the target away")
    )
    return {"model": best["model"], "split": split, **result, "at_chance": at_chance, "line": line}


def audit_dataset(directory: str, config: AuditConfig) -> dict:
    """The audit rows (as ``pipelines.train``'s metrics) and the verdict, for ``directory``."""
    space = load_feature_space(config.features)
    rows = {split: read_split(directory, split) for split in SPLITS}
    seen = frozenset(option for row in rows["train"] for option in row["options"])
    scratch = space.corpus.ngrams.scratch()
    rows["train"] = sample(rows["train"], config.train_sample, config.train.seed)
    examples = {
        split: [build_example(row, space, seen, scratch) for row in split_rows]
        for split, split_rows in rows.items()
    }
    if not examples["train"] or not examples["dev"]:
        return {"skipped": "the learned audit needs train and dev instances"}
    model = FITTERS[LEARNED_AUDIT](
        LEARNED_AUDIT,
        Batch.stack(examples["train"]),
        Batch.stack(examples["dev"]),
        config.train,
    )
    evaluated = [e for split in EVALUATION_SPLITS for e in examples[split]]
    metrics = build_metrics(count_correct(evaluated, [model]), [model])
    metrics["train_instances"] = len(examples["train"])
    metrics["verdict"] = verdict(metrics)
    return metrics
