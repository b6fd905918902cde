"""The fixtures of the datasets a test run generates once and shares (tests/support/versions.py)."""

import json
import os
import pathlib
import sys
from collections.abc import Callable

import pytest

from transforms.threads import THREAD_VARIABLES

# One thread per library in every test process and every process a test starts (they
# inherit the environment): set before numpy, faiss or torch start their thread pools. Two
# test workers share two cores; a pool per core in each would oversubscribe them.
for _variable in THREAD_VARIABLES:
    os.environ[_variable] = "1"
# One class of OpenBLAS kernels on every x86-64 machine with AVX2, so that the golden outputs
# hold on any of them: PV's training sums through OpenBLAS, whose AVX-512 kernels (chosen on
# an Intel Xeon or an AMD Zen 4) round otherwise than its AVX2 ones (chosen on a Zen 5), and
# every file after PV differs (docs/output.md, "Reproducible").
_cpu = pathlib.Path("/proc/cpuinfo")
if _cpu.exists() and "avx2" in _cpu.read_text().split():
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
assert "numpy" not in sys.modules, "numpy was imported before its thread count was set"

from pipelines.options import GenerateOptions  # noqa: E402
from tests.support.versions import (  # noqa: E402
    COCO_SUBSET,
    COCO_VAL2017,
    SHARED_VARIABLE,
    SMALL,
    SMALL_MCIC,
    TINY_ENCODER,
    TINY_THRESHOLD,
    TRAINING,
    Shared,
    made_tiny_encoder,
)

made_tiny_encoder()  # what SMALL's runs name as their validity model


@pytest.fixture(scope="session")
def shared(tmp_path_factory) -> Shared:
    """The run's shared folder; DMC_TEST_SHARED names one that several runs of the same code
    share (.ci/run's two tiers), never to be kept across a change."""
    if os.environ.get(SHARED_VARIABLE):
        return Shared(pathlib.Path(os.environ[SHARED_VARIABLE]))
    base = tmp_path_factory.getbasetemp()
    # under pytest-xdist each worker's basetemp is a folder of the run's own
    return Shared((base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared")


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
    """COCO val2017 with the defaults but the validity model: the tiny encoder, since the
    real one's 25,014 captions took 220 of the suite's seconds (coco_surfing runs it)."""
    assert os.path.exists(COCO_VAL2017), f"{COCO_VAL2017} is missing: ../shared must sit beside"
    options = GenerateOptions(
        input=COCO_VAL2017,
        output="",
        validity_model=TINY_ENCODER,
        validity_threshold=TINY_THRESHOLD,
    )
    return shared.version(options)


def coco_part(shared, name: str, keep: Callable[[dict, set[int]], list[dict]]) -> str:
    """COCO val2017's images ``keep(document, surfing image ids)`` chooses, with their
    captions, as a file in the shared folder ``name``."""

    def write(folder: pathlib.Path) -> None:
        with open(COCO_VAL2017, encoding="utf-8") as handle:
            document = json.load(handle)
        surfing = {a["image_id"] for a in document["annotations"] if "surf" in a["caption"].lower()}
        images = keep(document, surfing)
        kept = {image["id"] for image in images}
        subset = {
            **document,
            "images": images,
            "annotations": [a for a in document["annotations"] if a["image_id"] in kept],
        }
        (folder / COCO_SUBSET).write_text(json.dumps(subset), encoding="utf-8")

    return str(shared.made(name, write) / COCO_SUBSET)


@pytest.fixture(scope="session")
def coco_subset(shared) -> str:
    """The first 600 images of COCO val2017 with their captions, as a file in a temporary
    folder: real caption language (two people, scenes) at a test's size."""
    return coco_part(shared, "coco_subset", lambda document, _: document["images"][:600])


@pytest.fixture(scope="session")
def coco_surfing_dataset(shared) -> tuple[str, GenerateOptions]:
    """The real validity model (the default) on 600 images of COCO val2017: its 189 surfing
    images, whose captions say the same things in other words, and the first others."""

    def keep(document: dict, surfing: set[int]) -> list[dict]:
        others = [image for image in document["images"] if image["id"] not in surfing]
        return [image for image in document["images"] if image["id"] in surfing] + others[:411]

    corpus = coco_part(shared, "coco_surfing", keep)
    return shared.version(
        GenerateOptions(input=corpus, output="", n_dev=150, n_test=150, neighbours=100)
    )


@pytest.fixture(scope="session")
def strategy_dataset(shared, coco_subset):
    """``--decoys`` name -> (version, options) of a tiny dataset on the COCO subset, made once
    per strategy however many tests read it."""

    def dataset(decoys: str) -> tuple[str, GenerateOptions]:
        return shared.version(GenerateOptions(input=coco_subset, output="", decoys=decoys, **SMALL))

    return dataset


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
