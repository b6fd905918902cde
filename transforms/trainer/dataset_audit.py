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
from dataclasses import dataclass, replace

import numpy as np
import pyarrow.compute as pc

from schemas.examples import Batch
from schemas.layout import PARQUET, shard_pattern
from transforms.corpus.split import SPLITS
from transforms.files import read_named_parquet_files
from transforms.seeds import keyed_int
from transforms.threads import limit_torch
from transforms.trainer.features import (
    INSTANCE_COLUMNS,
    FeatureConfig,
    build_example,
    check_num_options,
    load_feature_space,
)
from transforms.trainer.metrics import EVALUATION_SPLITS, build_metrics, count_correct
from transforms.trainer.models import TrainConfig
from transforms.trainer.registry import fitters, missing_extra
from transforms.trainer.stream import FitData, InMemoryExamples
from transforms.trainer.text_rules import TEXT_RULES

# the audit's fitted rows -> what each measures (the untrained rules say it themselves)
LEARNED_AUDITS = {
    "Text-FFNN": "a network fitted on train's options alone (their words and PV vectors), "
    "with every cue text carries",
    "Bigram LM": "picks the option a bigram language model of train's targets finds likeliest "
    "(targets' own wording)",
}
# The audit's models are small: each op is too short to share among threads. run_local.sh on
# 2 idle cores fitted them in 40 s on 1 thread as on 2, and beside another busy process
# 2 threads took 4x as long, each op's threads waiting at its barrier for one descheduled.
AUDIT_THREADS = 1
AT_CHANCE_DEVIATIONS = 3.0  # binomial standard deviations from chance still read as chance
# --audit_gate: what an audit off chance does to publishing (see held_back)
WARN, FAIL = "warn", "fail"
AUDIT_GATES = (WARN, FAIL)


@dataclass(frozen=True)
class AuditConfig:
    features: FeatureConfig
    train: TrainConfig  # the learned audit's settings: the trainer's defaults
    train_sample: int  # train instances the learned audit is fitted on; 0: all


def read_split(
    directory: str, split: str, num_options: int, size: int, seed: int
) -> tuple[list[dict], frozenset, int]:
    """A split's instances (``size`` of them, chosen by a seeded key per example id,
    independent of file order; 0: all), every option text in the split (the novelty guess's
    memory of train) and k, the number of options each has (the same in every file;
    ``num_options`` 0: not known yet).

    Two passes over the files, so that only the sample becomes Python rows: the whole of a
    COCO 2014 train split as rows took 2 GiB and 13 s in the driver.
    """
    paths, keys, texts = [], [], set()
    for path, table in read_named_parquet_files(
        shard_pattern(directory, PARQUET, split), ["example_id", "options"]
    ):
        lengths = pc.list_value_length(table.column("options")).to_numpy(zero_copy_only=False)
        num_options = num_options or (int(lengths[0]) if len(lengths) else 0)
        wrong = np.flatnonzero(lengths != num_options)
        if len(wrong):
            check_num_options(table.slice(int(wrong[0]), 1).to_pylist()[0], num_options, path)
        texts.update(pc.unique(pc.list_flatten(table.column("options"))).to_pylist())
        ids = table.column("example_id").to_pylist()
        paths.append(path)
        keys.append(np.array([keyed_int(seed, f"audit {i}") for i in ids], np.uint64))
    chosen = np.ones(sum(map(len, keys)), bool)
    if size and len(chosen) > size:
        chosen[:] = False
        chosen[np.argsort(np.concatenate(keys), kind="stable")[:size]] = True
    rows, start = [], 0
    for path, file_keys in zip(paths, keys, strict=True):
        mine = np.flatnonzero(chosen[start : start + len(file_keys)])
        start += len(file_keys)
        if len(mine):
            table = next(read_named_parquet_files(path, list(INSTANCE_COLUMNS)))[1]
            rows.extend(table.take(mine).to_pylist())
    return rows, frozenset(texts), num_options


def chance_bound(chance: float, total: int) -> float:
    """How far from chance an accuracy on ``total`` instances still reads as chance:
    AT_CHANCE_DEVIATIONS binomial standard deviations.

    >>> round(chance_bound(0.2, 400), 3)
    0.06
    """
    return AT_CHANCE_DEVIATIONS * math.sqrt(chance * (1 - chance) / total)


def verdict(metrics: dict) -> dict:
    """The text-only row furthest from chance on test (dev when there is no test), and whether
    it is still chance. Below chance gives the target away too: a model that avoids the
    target marks it (on two options, its reverse answer is right)."""
    split = next(s for s in reversed(EVALUATION_SPLITS) if s in metrics["models"][0])
    chance = metrics["chance"]
    best = max(metrics["models"], key=lambda row: abs(row[split]["accuracy"] - chance))
    result = best[split]
    at_chance = abs(result["accuracy"] - chance) <= chance_bound(chance, result["total"])
    side = "ABOVE" if result["accuracy"] > chance else "BELOW"
    line = (
        f"text-only furthest from chance: {100 * result['accuracy']:.1f}% on {split} "
        f"({best['model']}; chance {100 * chance:.0f}%): "
        + ("at chance" if at_chance else f"{side} CHANCE: the options give the target away")
    )
    return {"model": best["model"], "split": split, **result, "at_chance": at_chance, "line": line}


def row_meanings() -> dict[str, str]:
    """Audit row -> what it measures, for the card under the audit's table."""
    return {rule.name: rule.meaning for rule in TEXT_RULES} | LEARNED_AUDITS


def held_back(gate: str, audit: dict) -> str | None:
    """The verdict's line when ``gate`` keeps the version from being published: under
    ``fail``, an audit off chance. An audit that could not run (no dev split) holds
    nothing back: it found no leak to refuse.

    >>> audit = {"verdict": {"at_chance": False, "line": "text-only ... ABOVE CHANCE"}}
    >>> held_back(FAIL, audit), held_back(WARN, audit), held_back(FAIL, {"skipped": "..."})
    ('text-only ... ABOVE CHANCE', None, None)
    """
    verdict = audit.get("verdict")
    if gate == FAIL and verdict is not None and not verdict["at_chance"]:
        return verdict["line"]
    return None


def audit_dataset(directory: str, config: AuditConfig) -> dict:
    """The audit rows (as ``pipelines.train``'s metrics) and the verdict, for ``directory``."""
    space = load_feature_space(config.features)
    rows, texts, num_options = {}, {}, 0
    for split in SPLITS:
        size = config.train_sample if split == "train" else 0
        rows[split], texts[split], num_options = read_split(
            directory, split, num_options, size, config.train.seed
        )
    seen = texts["train"]
    scratch = space.corpus.ngrams.scratch()
    examples = {
        split: [build_example(row, space, seen, scratch) for row in split_rows]
        for split, split_rows in rows.items()
    }
    if not examples["train"] or not examples["dev"]:
        return {"skipped": "the learned audit needs train and dev instances"}
    limit_torch(AUDIT_THREADS)
    data = FitData(*(InMemoryExamples(Batch.stack(examples[split])) for split in ("train", "dev")))
    learned = [name for name in LEARNED_AUDITS if name in fitters()]
    train = replace(config.train, stage="audit")  # its lines are the audit's
    models = [fitters()[name](name, data, train) for name in learned]
    evaluated = [e for split in EVALUATION_SPLITS for e in examples[split]]
    metrics = build_metrics(count_correct(evaluated, models), models, num_options)
    metrics["train_instances"] = len(examples["train"])
    if len(learned) < len(LEARNED_AUDITS):
        left_out = ", ".join(name for name in LEARNED_AUDITS if name not in learned)
        metrics["left_out"] = f"{left_out}: {missing_extra()}"
    metrics["verdict"] = verdict(metrics)
    return metrics
