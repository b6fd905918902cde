"""Datasets generated once per test session and shared by the tests that check them."""

import dataclasses
import json
import os
import sys

import pytest

from transforms.threads import THREAD_VARIABLES

# One thread per library in every test process and every process a test starts (they
# inherit the environment): set before numpy, faiss or torch start their thread pools. Two
# test workers share two cores; a pool per core in each would oversubscribe them.
for _variable in THREAD_VARIABLES:
    os.environ[_variable] = "1"
assert "numpy" not in sys.modules, "numpy was imported before its thread count was set"

from pipelines.generate import run  # noqa: E402
from pipelines.options import GenerateOptions  # noqa: E402
from transforms.corpus.synthetic import write_coco  # noqa: E402

COCO_VAL2017 = os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "data", "coco", "captions_val2017.json"
)


def generated(options: GenerateOptions, beam_args: list[str] | None = None):
    """(version directory, the options as the run saw them: output = that directory)."""
    directory = run(options, beam_args).version.directory
    return directory, dataclasses.replace(options, output=directory)


SMALL = {"n_dev": 40, "n_test": 40, "neighbours": 60, "pv_dim": 64, "pv_epochs": 10}
SMALL_MCIC = {**SMALL, "decoys": "mcic"}


def written_corpus(tmp_path_factory, *, seed: int, num_images: int) -> str:
    path = str(tmp_path_factory.mktemp("corpus") / "captions_synthetic.json")
    write_coco(path, seed=seed, num_images=num_images)
    return path


@pytest.fixture(scope="session")
def synthetic_corpus(tmp_path_factory) -> str:
    return written_corpus(tmp_path_factory, seed=0, num_images=300)


@pytest.fixture(scope="session")
def small_dataset(synthetic_corpus, tmp_path_factory) -> tuple[str, GenerateOptions]:
    options = GenerateOptions(
        input=synthetic_corpus, output=str(tmp_path_factory.mktemp("small")), **SMALL_MCIC
    )
    return generated(options)


@pytest.fixture(scope="session")
def small_dataset_split_pool(synthetic_corpus, tmp_path_factory) -> tuple[str, GenerateOptions]:
    options = GenerateOptions(
        input=synthetic_corpus,
        output=str(tmp_path_factory.mktemp("small_split")),
        decoy_pool="split",
        **SMALL,
    )
    return generated(
        options, ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"]
    )


@pytest.fixture(scope="session")
def coco_dataset(tmp_path_factory) -> tuple[str, GenerateOptions]:
    assert os.path.exists(COCO_VAL2017), f"{COCO_VAL2017} is missing: ../shared must sit beside"
    options = GenerateOptions(input=COCO_VAL2017, output=str(tmp_path_factory.mktemp("coco")))
    return generated(options)


@pytest.fixture(scope="session")
def coco_subset(tmp_path_factory) -> str:
    """The first 600 images of COCO val2017 with their captions, as a file in a temporary
    folder: real caption language (two people, scenes) at a test's size."""
    with open(COCO_VAL2017, encoding="utf-8") as handle:
        document = json.load(handle)
    images = document["images"][:600]
    kept = {image["id"] for image in images}
    subset = {
        **document,
        "images": images,
        "annotations": [a for a in document["annotations"] if a["image_id"] in kept],
    }
    path = tmp_path_factory.mktemp("coco_subset") / "captions_val2017_subset.json"
    path.write_text(json.dumps(subset), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def strategy_dataset(coco_subset, tmp_path_factory):
    """``--decoys`` name -> (version, options) of a tiny dataset on the COCO subset, made once
    per strategy however many tests read it."""
    made: dict[str, tuple[str, GenerateOptions]] = {}

    def dataset(decoys: str) -> tuple[str, GenerateOptions]:
        if decoys not in made:
            output = str(tmp_path_factory.mktemp(decoys))
            made[decoys] = generated(
                GenerateOptions(input=coco_subset, output=output, decoys=decoys, **SMALL)
            )
        return made[decoys]

    return dataset


TRAINING = {**SMALL, "n_dev": 100, "n_test": 100}


@pytest.fixture(scope="session")
def training_corpus(tmp_path_factory) -> str:
    """1,000 synthetic images: 800 to train on, about 500 instances each in dev and test."""
    return written_corpus(tmp_path_factory, seed=1, num_images=1000)


@pytest.fixture(scope="session")
def mcic_dataset(training_corpus, tmp_path_factory) -> str:
    output = str(tmp_path_factory.mktemp("mcic"))
    options = GenerateOptions(input=training_corpus, output=output, decoys="mcic", **TRAINING)
    return generated(options)[0]


@pytest.fixture(scope="session")
def closed_sets_dataset(training_corpus, tmp_path_factory) -> tuple[str, GenerateOptions]:
    """The same corpus with closed-set decoys (the default strategy)."""
    output = str(tmp_path_factory.mktemp("closed_sets"))
    return generated(GenerateOptions(input=training_corpus, output=output, **TRAINING))


@pytest.fixture(scope="session")
def random_dataset(training_corpus, tmp_path_factory) -> str:
    """The same corpus with decoys drawn at random (--decoys random)."""
    output = str(tmp_path_factory.mktemp("random"))
    options = GenerateOptions(input=training_corpus, output=output, decoys="random", **TRAINING)
    return generated(options)[0]
