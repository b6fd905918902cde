"""End to end on the real COCO 2017 validation captions (25,014 captions), defaults."""

import json

import pytest

from pipelines.store.versions import read_manifest
from schemas.layout import STATISTICS_FILE, dataset_path
from tests.support.dataset_checks import check_dataset, read_parquet
from transforms.corpus.encoders.registry import DEFAULT_MODEL
from transforms.corpus.sentences import VALIDITY_MODEL
from transforms.corpus.split import SPLITS
from transforms.strategies.validity import DESCRIBES_RULE


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


# Both tests read one run, which one worker makes: the other goes on with other tests
pytestmark = pytest.mark.xdist_group("coco_val2017")

SURFING = "a person riding a surf board on a wave"
# Two captions of other images that say what SURFING says, in another order: BLEU and PV let
# them through; the default validity model (the real all-MiniLM-L6-v2 weights) does not.
SURFING_REWORDED = {"a person on a surf board riding a wave", "a man riding a wave on a surf board"}


@pytest.mark.slow
def test_no_coco_decoy_rewords_a_caption_of_its_image(coco_dataset):
    output, _ = coco_dataset
    rows = [row for split in SPLITS for row in read_parquet(output, split)]
    surfing = [row for row in rows if row["options"][row["label"]] == SURFING]
    assert surfing  # the target is in the dataset, with decoys
    assert not any(SURFING_REWORDED & set(row["options"]) for row in surfing)
    manifest = read_manifest(output)
    [model] = [entry for entry in manifest["inputs"] if VALIDITY_MODEL in entry]
    assert model["path"] == DEFAULT_MODEL and len(model["sha256"]) == 64
    with open(dataset_path(output, STATISTICS_FILE)) as handle:
        statistics = json.load(handle)
    assert statistics["validity"][f"validity/{DESCRIBES_RULE}"] > 0
    assert min(s["coverage"]["share"] for s in statistics["splits"].values()) >= 0.95
