"""Datasets generated once per test session and shared by the tests that check them."""

import os

import pytest

from pipelines.generate import run
from pipelines.options import GenerateOptions
from transforms.synthetic import write_coco

COCO_VAL2017 = os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "data", "coco", "captions_val2017.json"
)

SMALL = {"n_dev": 40, "n_test": 40, "neighbours": 60, "pv_dim": 64, "pv_epochs": 10}


@pytest.fixture(scope="session")
def synthetic_corpus(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("corpus") / "captions_synthetic.json")
    write_coco(path, seed=0, num_images=300)
    return path


@pytest.fixture(scope="session")
def small_dataset(synthetic_corpus, tmp_path_factory) -> tuple[str, GenerateOptions]:
    options = GenerateOptions(
        input=synthetic_corpus, output=str(tmp_path_factory.mktemp("small")), **SMALL
    )
    run(options)
    return options.output, options


@pytest.fixture(scope="session")
def small_dataset_split_pool(synthetic_corpus, tmp_path_factory) -> tuple[str, GenerateOptions]:
    options = GenerateOptions(
        input=synthetic_corpus,
        output=str(tmp_path_factory.mktemp("small_split")),
        decoy_pool="split",
        **SMALL,
    )
    run(options, ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"])
    return options.output, options


@pytest.fixture(scope="session")
def coco_dataset(tmp_path_factory) -> tuple[str, GenerateOptions]:
    assert os.path.exists(COCO_VAL2017), f"{COCO_VAL2017} is missing: ../shared must sit beside"
    options = GenerateOptions(input=COCO_VAL2017, output=str(tmp_path_factory.mktemp("coco")))
    run(options)
    return options.output, options


TRAINING = {**SMALL, "n_dev": 100, "n_test": 100}


@pytest.fixture(scope="session")
def training_corpus(tmp_path_factory) -> str:
    """1,000 synthetic images: 800 to train on, about 500 instances each in dev and test."""
    path = str(tmp_path_factory.mktemp("training_corpus") / "captions.json")
    write_coco(path, seed=1, num_images=1000)
    return path


def generated(tmp_path_factory, name: str, **options) -> str:
    output = str(tmp_path_factory.mktemp(name))
    run(GenerateOptions(output=output, **options))
    return output


@pytest.fixture(scope="session")
def mcic_dataset(training_corpus, tmp_path_factory) -> str:
    return generated(tmp_path_factory, "mcic", input=training_corpus, **TRAINING)


@pytest.fixture(scope="session")
def random_dataset(training_corpus, tmp_path_factory) -> str:
    """The same corpus with decoys drawn at random (--decoys random)."""
    return generated(tmp_path_factory, "random", input=training_corpus, decoys="random", **TRAINING)
