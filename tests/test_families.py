"""One end-to-end run per decoy family beyond MC-IC, checked on what it wrote."""

import json
import os

import pytest

from pipelines.make_corpus import main as make_corpus
from pipelines.options import GenerateOptions
from tests.conftest import SMALL, generated
from tests.dataset_checks import check_dataset
from transforms.language.forced_choice_tasks import OTHER_CAPTIONS
from transforms.strategies.registry import STRATEGIES


def family_dataset(corpus: str, directory: str, decoys: str, **changes) -> GenerateOptions:
    options = GenerateOptions(input=corpus, output=directory, decoys=decoys, **SMALL, **changes)
    return generated(options)[1]


def test_madlibs_easy_has_four_options_of_other_images(synthetic_corpus, tmp_path):
    options = family_dataset(synthetic_corpus, str(tmp_path), "madlibs_easy")
    rows = check_dataset(options, sample=20)
    assert STRATEGIES["madlibs_easy"].num_options == 4
    every = [row for split in rows.values() for row in split]
    assert every and all(len(row["options"]) == 4 for row in every)
    with open(os.path.join(options.output, "statistics.json")) as handle:
        statistics = json.load(handle)
    assert statistics["options_per_instance"] == 4
    assert statistics["text_only_audit"]["chance"] == pytest.approx(0.25)


def test_madlibs_hard_decoys_come_from_the_images_closest_to_the_targets_objects(tmp_path):
    corpus = str(tmp_path / "captions_synthetic.json")
    instances = str(tmp_path / "instances_synthetic.json")
    make_corpus(
        ["--output", corpus, "--num_images", "300", "--seed", "0", "--instances", instances]
    )
    for objects in (instances, ""):
        options = family_dataset(
            corpus, str(tmp_path / f"hard{bool(objects)}"), "madlibs_hard", objects=objects
        )
        rows = check_dataset(options, sample=20)
        with open(os.path.join(options.output, "statistics.json")) as handle:
            report = json.load(handle)["strategy"]["same_objects"]
        assert report["decoys"] == 3 * sum(len(split) for split in rows.values())
        assert report["sharing_at_least_one_object"] > 0.9


@pytest.mark.parametrize("task", [name for name, s in STRATEGIES.items() if s.num_options == 2])
def test_each_forced_choice_task_builds_two_option_instances_by_its_rule(
    coco_subset, tmp_path, task
):
    options = family_dataset(coco_subset, str(tmp_path), task)
    rows = check_dataset(options, sample=10)
    built = sum(len(split) for split in rows.values())
    with open(os.path.join(options.output, "statistics.json")) as handle:
        statistics = json.load(handle)
    assert built >= 10, statistics["skipped"]
    edited = sum(statistics["splits"][split]["edited_decoys"] for split in rows)
    whole_captions = STRATEGIES[task].task.pool == OTHER_CAPTIONS
    assert edited == (0 if whole_captions else built)
