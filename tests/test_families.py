"""One end-to-end run per decoy strategy, checked on what it wrote: the checks every
dataset passes and the strategy's own invariants, as TFDS's DatasetBuilderTestCase
does for every builder."""

import dataclasses
import json

import pytest

from pipelines.make_corpus import main as make_corpus
from pipelines.options import GenerateOptions
from schemas.layout import dataset_path
from tests.support.dataset_checks import (
    SPLITS,
    check_dataset,
    read_corpus,
    read_parquet,
    written_dataset,
)
from tests.support.versions import SMALL, Shared
from transforms.english.forced_choice_tasks import OTHER_CAPTIONS
from transforms.strategies.closed_sets import ClosedSets
from transforms.strategies.invariants import InvariantBroken, WrittenDataset
from transforms.strategies.mcic import Mcic
from transforms.strategies.registry import STRATEGIES


def family_dataset(shared: Shared, corpus: str, decoys: str, **changes) -> GenerateOptions:
    options = GenerateOptions(input=corpus, output="", decoys=decoys, **SMALL, **changes)
    return shared.version(options)[1]


@pytest.mark.slow
@pytest.mark.parametrize("decoys", list(STRATEGIES))
def test_every_strategy_writes_a_dataset_that_passes_the_common_checks_and_its_own(
    strategy_dataset, decoys
):
    version, options = strategy_dataset(decoys)
    strategy = STRATEGIES[decoys]
    rows = check_dataset(options, sample=10)  # runs strategy.invariants too
    every = [row for split in rows.values() for row in split]
    assert every and {len(row["options"]) for row in every} == {strategy.num_options}
    with open(dataset_path(version, "statistics.json")) as handle:
        assert json.load(handle)["options_per_instance"] == strategy.num_options
    with open(dataset_path(version, "README.md"), encoding="utf-8") as handle:
        card = handle.read()
    assert all(f"```bibtex\n{reference}\n```" in card for reference in strategy.references)


def written(options) -> WrittenDataset:
    rows = {split: read_parquet(options.output, split) for split in SPLITS}
    return written_dataset(options, read_corpus(options.output), rows, sample=10)


def test_closed_sets_invariant_fails_on_a_set_missing_a_member(strategy_dataset):
    dataset = written(strategy_dataset("closed_sets")[1])
    [invariant] = ClosedSets.invariants
    invariant(dataset)
    dev = dataset.rows["dev"]
    with pytest.raises(InvariantBroken):
        invariant(dataclasses.replace(dataset, rows={**dataset.rows, "dev": dev[1:]}))


def test_mcic_invariants_fail_on_a_decoy_that_is_not_algorithm_1s(strategy_dataset):
    dataset = written(strategy_dataset("mcic")[1])
    for invariant in Mcic.invariants:
        invariant(dataset)
    assert dataset.exact_search  # so the decoys are compared with brute force's
    dev = dataset.rows["dev"]

    def decoys(row: dict) -> list[str]:
        return [option for i, option in enumerate(row["options"]) if i != row["label"]]

    # each instance shows the next one's decoys
    swapped = [
        {**row, "options": [row["options"][row["label"]], *decoys(after)], "label": 0}
        for row, after in zip(dev, [*dev[1:], dev[0]], strict=True)
    ]
    tampered = dataclasses.replace(dataset, rows={"dev": swapped}, sample=len(swapped))
    with pytest.raises(InvariantBroken):
        Mcic.invariants[1](tampered)


def test_madlibs_easy_has_four_options_and_its_audit_a_chance_of_one_in_four(strategy_dataset):
    options = strategy_dataset("madlibs_easy")[1]
    assert STRATEGIES["madlibs_easy"].num_options == 4
    with open(dataset_path(options.output, "statistics.json")) as handle:
        statistics = json.load(handle)
    assert statistics["text_only_audit"]["chance"] == pytest.approx(0.25)


@pytest.mark.slow
def test_madlibs_hard_decoys_come_from_the_images_closest_to_the_targets_objects(shared, tmp_path):
    corpus = str(tmp_path / "captions_synthetic.json")
    instances = str(tmp_path / "instances_synthetic.json")
    make_corpus(
        ["--output", corpus, "--num_images", "300", "--seed", "0", "--instances", instances]
    )
    for objects in (instances, ""):
        options = family_dataset(shared, corpus, "madlibs_hard", objects=objects)
        rows = check_dataset(options, sample=20)
        with open(dataset_path(options.output, "statistics.json")) as handle:
            report = json.load(handle)["strategy"]["same_objects"]
        assert report["decoys"] == 3 * sum(len(split) for split in rows.values())
        assert report["sharing_at_least_one_object"] > 0.9


# slow: a version of each task's own, which the slow tests over every strategy read too
@pytest.mark.slow
@pytest.mark.parametrize("task", [name for name, s in STRATEGIES.items() if s.num_options == 2])
def test_each_forced_choice_task_builds_two_option_instances_by_its_rule(strategy_dataset, task):
    options = strategy_dataset(task)[1]  # its checks: the test over every strategy above
    rows = {split: read_parquet(options.output, split) for split in SPLITS}
    built = sum(len(split) for split in rows.values())
    with open(dataset_path(options.output, "statistics.json")) as handle:
        statistics = json.load(handle)
    assert built >= 10, statistics["skipped"]
    edited = sum(statistics["splits"][split]["edited_decoys"] for split in rows)
    whole_captions = STRATEGIES[task].task.pool == OTHER_CAPTIONS
    assert edited == (0 if whole_captions else built)
