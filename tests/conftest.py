"""Datasets generated once per test session and shared by the tests that check them."""

import dataclasses
import hashlib
import json
import os
import pathlib
import shutil
import sys
from collections.abc import Callable

import pytest
from filelock import FileLock

from transforms.threads import THREAD_VARIABLES

# One thread per library in every test process and every process a test starts (they
# inherit the environment): set before numpy, faiss or torch start their thread pools. Two
# test workers share two cores; a pool per core in each would oversubscribe them.
for _variable in THREAD_VARIABLES:
    os.environ[_variable] = "1"
assert "numpy" not in sys.modules, "numpy was imported before its thread count was set"

from pipelines.generate import run  # noqa: E402
from pipelines.options import GenerateOptions  # noqa: E402
from pipelines.versions import VERSIONS_DIRECTORY, completed_dataset  # noqa: E402
from transforms.corpus.synthetic import write_coco  # noqa: E402

COCO_VAL2017 = os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "data", "coco", "captions_val2017.json"
)
COCO_SUBSET = "captions_val2017_subset.json"
SHARED_VARIABLE = "DMC_TEST_SHARED"


class Shared:
    """Corpora and versions made once per test run, by whichever test process asks first.

    pytest-xdist's workers share them through one folder: a lock per item, and a mark once
    it is whole, so a worker that finds a version another made reads it, never makes it
    again. Tests read them; a test that changes a version works on its own copy
    (:func:`copied_into`).
    """

    def __init__(self, root: pathlib.Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def made(self, name: str, make: Callable[[pathlib.Path], object]) -> pathlib.Path:
        """``root/name``, a folder ``make`` fills once (what a failed attempt left is cleared)."""
        folder, done = self.root / name, self.root / f"{name}.done"
        with FileLock(self.root / f"{name}.lock"):
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                make(folder)
                done.touch()
        return folder

    def corpus(self, *, seed: int, num_images: int) -> str:
        """The synthetic corpus of ``seed`` and ``num_images``, as a COCO captions file."""

        def write(folder: pathlib.Path) -> None:
            write_coco(str(folder / "captions_synthetic.json"), seed=seed, num_images=num_images)

        folder = self.made(f"corpus-{seed}-{num_images}", write)
        return str(folder / "captions_synthetic.json")

    def version(
        self, options: GenerateOptions, beam_args: list[str] | None = None
    ) -> tuple[str, GenerateOptions]:
        """(version directory, the options as the run saw them: output = that directory) of
        a run with ``options`` but its output (ignored) and ``beam_args``."""
        beam_args = beam_args or []
        recorded = {**dataclasses.asdict(options), "output": None, "beam_args": beam_args}
        key = hashlib.sha256(json.dumps(recorded, sort_keys=True).encode()).hexdigest()[:12]
        root = self.made(
            f"{options.decoys}-{key}",
            lambda folder: run(dataclasses.replace(options, output=str(folder)), beam_args),
        )
        directory = completed_dataset(str(root))
        return directory, dataclasses.replace(options, output=directory)


def copied_into(version: str, root: pathlib.Path) -> str:
    """A shared version copied to ``root/versions/``, for a test that changes or adds to an
    output root: a run of its inputs and options there finds it complete (up to date)."""
    copy = root / VERSIONS_DIRECTORY / os.path.basename(version)
    shutil.copytree(version, copy, symlinks=True)
    return str(copy)


@pytest.fixture(scope="session")
def shared(tmp_path_factory) -> Shared:
    """The run's shared folder; DMC_TEST_SHARED names one that several runs of the same code
    share (.ci/run's two tiers), never to be kept across a change."""
    if os.environ.get(SHARED_VARIABLE):
        return Shared(pathlib.Path(os.environ[SHARED_VARIABLE]))
    base = tmp_path_factory.getbasetemp()
    # under pytest-xdist each worker's basetemp is a folder of the run's own
    return Shared((base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared")


SMALL = {"n_dev": 40, "n_test": 40, "neighbours": 60, "pv_dim": 64, "pv_epochs": 10}
SMALL_MCIC = {**SMALL, "decoys": "mcic"}


@pytest.fixture(scope="session")
def synthetic_corpus(shared) -> str:
    return shared.corpus(seed=0, num_images=300)


@pytest.fixture(scope="session")
def small_dataset(shared, synthetic_corpus) -> tuple[str, GenerateOptions]:
    return shared.version(GenerateOptions(input=synthetic_corpus, output="", **SMALL_MCIC))


@pytest.fixture(scope="session")
def small_closed_sets(shared, synthetic_corpus) -> tuple[str, GenerateOptions]:
    """The default strategy at the tests' small sizes."""
    return shared.version(GenerateOptions(input=synthetic_corpus, output="", **SMALL))


@pytest.fixture(scope="session")
def small_dataset_split_pool(shared, synthetic_corpus) -> tuple[str, GenerateOptions]:
    options = GenerateOptions(input=synthetic_corpus, output="", decoy_pool="split", **SMALL)
    return shared.version(
        options, ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"]
    )


@pytest.fixture(scope="session")
def coco_dataset(shared) -> tuple[str, GenerateOptions]:
    assert os.path.exists(COCO_VAL2017), f"{COCO_VAL2017} is missing: ../shared must sit beside"
    return shared.version(GenerateOptions(input=COCO_VAL2017, output=""))


@pytest.fixture(scope="session")
def coco_subset(shared) -> str:
    """The first 600 images of COCO val2017 with their captions, as a file in a temporary
    folder: real caption language (two people, scenes) at a test's size."""

    def write(folder: pathlib.Path) -> None:
        with open(COCO_VAL2017, encoding="utf-8") as handle:
            document = json.load(handle)
        images = document["images"][:600]
        kept = {image["id"] for image in images}
        subset = {
            **document,
            "images": images,
            "annotations": [a for a in document["annotations"] if a["image_id"] in kept],
        }
        (folder / COCO_SUBSET).write_text(json.dumps(subset), encoding="utf-8")

    return str(shared.made("coco_subset", write) / COCO_SUBSET)


@pytest.fixture(scope="session")
def strategy_dataset(shared, coco_subset):
    """``--decoys`` name -> (version, options) of a tiny dataset on the COCO subset, made once
    per strategy however many tests read it."""

    def dataset(decoys: str) -> tuple[str, GenerateOptions]:
        return shared.version(GenerateOptions(input=coco_subset, output="", decoys=decoys, **SMALL))

    return dataset


TRAINING = {**SMALL, "n_dev": 100, "n_test": 100}
# the trainer's settings at the tests' sizes (dmc-train, regenerate --train)
SMALL_TRAINING = {
    "epochs": 8,
    "ffnn_hidden": "64,32",
    "vec2seq_sizes": "64:32:16",
    "vec2seq_epochs": 4,
}


@pytest.fixture(scope="session")
def training_corpus(shared) -> str:
    """1,000 synthetic images: 800 to train on, about 500 instances each in dev and test."""
    return shared.corpus(seed=1, num_images=1000)


@pytest.fixture(scope="session")
def mcic_dataset(shared, training_corpus) -> str:
    options = GenerateOptions(input=training_corpus, output="", decoys="mcic", **TRAINING)
    return shared.version(options)[0]


@pytest.fixture(scope="session")
def closed_sets_dataset(shared, training_corpus) -> tuple[str, GenerateOptions]:
    """The same corpus with closed-set decoys (the default strategy)."""
    return shared.version(GenerateOptions(input=training_corpus, output="", **TRAINING))


@pytest.fixture(scope="session")
def random_dataset(shared, training_corpus) -> str:
    """The same corpus with decoys drawn at random (--decoys random)."""
    options = GenerateOptions(input=training_corpus, output="", decoys="random", **TRAINING)
    return shared.version(options)[0]
