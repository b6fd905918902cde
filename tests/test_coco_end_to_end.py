"""End to end on the real COCO 2017 validation captions (25,014 captions), defaults."""

import json

import pytest

from schemas.layout import dataset_path
from tests.support.dataset_checks import check_dataset


@pytest.mark.slow
def test_coco_val2017_with_default_options(coco_dataset):
    output, options = coco_dataset
    assert (options.n_dev, options.n_test, options.neighbours) == (2000, 2000, 500)
    rows = check_dataset(options, sample=25)
    with open(dataset_path(output, "statistics.json")) as handle:
        statistics = json.load(handle)
    assert statistics["skipped"]["normalize/duplicate_caption"] > 0
    # A closed-set caption may be the target of more than one instance: count targets.
    targets = {row["target_caption_id"] for split_rows in rows.values() for row in split_rows}
    assert len(targets) + sum(statistics["skipped"].values()) == 25014
