"""The synthetic default run's outputs, byte for byte, against a checked-in golden manifest.

Refactors must not change what a run writes (issue 22's rule): every file under the
output of ``closed_sets_dataset`` (the default strategy on the 1,000-image synthetic
corpus at the tests' sizes, already generated for other tests) is hashed with sha256
and compared with ``tests/golden/synthetic_outputs.json``. Dataset records, the corpus
files, statistics, cards and plots are hashed as written. Only what legitimately
differs between two runs of the same code is normalised first, file by file:

- ``manifest.json``: its creation time, the code's commit and package versions, the
  ``*_ms`` timing counters and the ``load/`` counts (how often a worker loaded the corpus
  or a model, which the runner's placement of work decides), the temporary input and
  output paths, and the listed
  size and sha256 of the two files below (whose content is checked normalised);
- ``dataset/README.md`` (the version's card) and ``README.md`` (the root's, the same card):
  the Python and package versions and the git commit they name;
- ``build/pv/doc2vec.model``: gensim's lifecycle log (times, paths, platform) and training time;
- ``dataset/statistics.json``: the text-only audit's Text-FFNN training losses per epoch,
  which the processor's floating-point kernels decide in their last digits (an AMD EPYC
  and an Intel Xeon write different ones); every accuracy and count is compared as written;
- ``build/corpus/sentence_embeddings.npy``: the sentence encoder's vectors, whose last
  digits the processor's kernels decide too: compared as their shape, dtype and unit length
  (the decisions they make are in the dataset records, hashed as written);
- ``_COMPLETE``: its completion time.

PV's vectors, and so every file after them, depend on the class of OpenBLAS kernels the
processor gets (AVX2 or AVX-512): tests/conftest.py sets one class for every test.

When a change to the outputs is intended, regenerate the golden file and commit it
with the change that explains it::

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py
"""

import hashlib
import io
import json
import os
import pickle
from collections.abc import Callable

import numpy as np

from pipelines.store.versions import read_manifest
from schemas.layout import (
    BUILD,
    COMPLETE_FILE,
    CORPUS_DIRECTORY,
    DATASET,
    MANIFEST_FILE,
    SENTENCE_EMBEDDINGS_FILE,
    STATISTICS_FILE,
)
from tests.support.versions import TINY_ENCODER
from transforms.progress import LOAD
from transforms.report.card import CARD_FILE

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "synthetic_outputs.json")
MODEL_FILE = f"{BUILD}/pv/doc2vec.model"
VERSION_CARD = f"{DATASET}/{CARD_FILE}"
STATISTICS = f"{DATASET}/{STATISTICS_FILE}"
# Files normalised below, whose size and sha256 in the manifest are then normalised too.
SENTENCES = f"{BUILD}/{CORPUS_DIRECTORY}/{SENTENCE_EMBEDDINGS_FILE}"
RUN_DEPENDENT = (VERSION_CARD, MODEL_FILE, STATISTICS, SENTENCES)
NORMALISED = "<normalised>"


def relocated(value, places: dict[str, str]):
    """``value`` (parsed JSON) with each absolute path in ``places`` replaced by its name.

    >>> relocated({"a": ["/tmp/x/f.json"]}, {"/tmp/x": "<input>"})
    {'a': ['<input>/f.json']}
    """
    if isinstance(value, dict):
        return {key: relocated(item, places) for key, item in value.items()}
    if isinstance(value, list):
        return [relocated(item, places) for item in value]
    if isinstance(value, str):
        for path, name in places.items():
            value = value.replace(path, name)
    return value


def normalised_manifest(manifest: dict) -> dict:
    """The manifest without the run's time, code identity, timings, the workers' loads, and the
    size and checksum of the files that name the code or the run (a model's log: paths and
    times)."""
    metrics = {  # times, and how often workers loaded the corpus or a model: the runner's
        name: NORMALISED if name.endswith("_ms") or name.startswith(f"{LOAD}/") else count
        for name, count in manifest["metrics"].items()
    }
    files = [
        {**entry, "bytes": NORMALISED, "sha256": NORMALISED}
        if entry["path"] in RUN_DEPENDENT
        else entry
        for entry in manifest["files"]
    ]
    return {
        **manifest,
        "created": NORMALISED,
        "code": NORMALISED,
        "metrics": metrics,
        "timings": dict.fromkeys(manifest.get("timings", {}), NORMALISED),
        "files": files,
    }


def normalised_statistics(statistics: dict) -> dict:
    """The statistics without the audit's training losses (the processor's last digits).

    >>> audit = {"models": [{"selection": {"train_loss_by_epoch": [0.5], "epoch": 1}}]}
    >>> normalised_statistics({"text_only_audit": audit})["text_only_audit"]["models"]
    [{'selection': {'train_loss_by_epoch': '<normalised>', 'epoch': 1}}]
    """
    audit = statistics["text_only_audit"]
    models = [
        {**model, "selection": {**model["selection"], "train_loss_by_epoch": NORMALISED}}
        if "train_loss_by_epoch" in model["selection"]
        else model
        for model in audit.get("models", [])
    ]
    return {**statistics, "text_only_audit": {**audit, "models": models}}


def normalised_marker(marker: dict) -> dict:
    return {**marker, "completed": NORMALISED}


def card_normaliser(code: dict):
    """The card without the Python and package versions and the commit the manifest's
    ``code`` records."""
    named = {f"Python {code['python']}": "Python <version>"}
    if code["git_commit"]:
        named[code["git_commit"]] = "<commit>"
    named |= {
        f"{package} {version}": f"{package} <version>"
        for package, version in code["versions"].items()
    }

    def normaliser(data: bytes) -> bytes:
        text = data.decode("utf-8")
        for written, normalised in named.items():
            text = text.replace(written, normalised)
        return text.encode("utf-8")

    return normaliser


def normalised_model(data: bytes) -> bytes:
    """The pickled model without gensim's lifecycle log and the time training took."""
    model = pickle.loads(data)
    model.lifecycle_events = []
    model.total_train_time = 0.0
    return pickle.dumps(model)


def normalised_sentences(data: bytes) -> bytes:
    """The vectors as their shape, dtype and whether every row is of unit length."""
    vectors = np.load(io.BytesIO(data))
    unit = np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    return f"{vectors.shape} {vectors.dtype} unit={unit}".encode()


def as_written(document: dict) -> bytes:
    """JSON as transforms.files.write_json writes it."""
    return json.dumps(document, indent=2, sort_keys=True).encode("utf-8")


def json_normaliser(normalise: Callable[[dict], dict], places: dict[str, str]):
    def normaliser(data: bytes) -> bytes:
        document = json.loads(data)
        if as_written(document) != data:  # laid out differently: a change the hash must show
            return data
        return as_written(relocated(normalise(document), places))

    return normaliser


def normalisers(
    version: str, code: dict, places: dict[str, str]
) -> dict[str, Callable[[bytes], bytes]]:
    """Path under the output -> what makes that file's bytes the same on every run."""
    return {
        f"{version}/{MANIFEST_FILE}": json_normaliser(normalised_manifest, places),
        f"{version}/{VERSION_CARD}": card_normaliser(code),
        CARD_FILE: card_normaliser(code),
        f"{version}/{MODEL_FILE}": normalised_model,
        f"{version}/{SENTENCES}": normalised_sentences,
        f"{version}/{STATISTICS}": json_normaliser(normalised_statistics, places),
        f"{version}/{COMPLETE_FILE}": json_normaliser(normalised_marker, places),
    }


def output_hashes(root: str, normalise: dict[str, Callable[[bytes], bytes]]) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``, normalised where ``normalise``
    says; a symlink by its target."""
    hashes = {}
    for directory, subdirectories, files in os.walk(root):
        for name in subdirectories + files:  # a symlink to a directory is among the former
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root)
            if os.path.islink(path):
                hashes[relative] = f"symlink -> {os.readlink(path)}"
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    data = handle.read()
                data = normalise[relative](data) if relative in normalise else data
                hashes[relative] = hashlib.sha256(data).hexdigest()
    return dict(sorted(hashes.items()))


def changes(expected: dict[str, str], found: dict[str, str]) -> list[str]:
    """One line per file that changed, went missing or is new.

    >>> changes({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"})
    ['b: changed', 'c: new']
    """
    lines = []
    for path in sorted(expected.keys() | found.keys()):
        if path not in found:
            lines.append(f"{path}: missing")
        elif path not in expected:
            lines.append(f"{path}: new")
        elif found[path] != expected[path]:
            lines.append(f"{path}: changed")
    return lines


def test_the_synthetic_default_run_writes_the_golden_outputs(closed_sets_dataset):
    directory, options = closed_sets_dataset
    root = os.path.dirname(os.path.dirname(directory))  # OUTPUT/versions/<version>
    places = {
        root: "<output>",
        os.path.dirname(options.input): "<input>",
        os.path.dirname(TINY_ENCODER): "<tmp>",
    }
    version = os.path.relpath(directory, root)
    code = read_manifest(directory)["code"]
    found = output_hashes(root, normalisers(version, code, places))
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
        with open(GOLDEN, "w", encoding="utf-8") as handle:
            json.dump(found, handle, indent=2)
            handle.write("\n")
    with open(GOLDEN, encoding="utf-8") as handle:
        expected = json.load(handle)
    kernels = os.environ.get("OPENBLAS_CORETYPE", "the processor's own")
    assert not (changed := changes(expected, found)), (
        "the synthetic default run's outputs differ from tests/golden/synthetic_outputs.json "
        f"(OpenBLAS kernels: {kernels}; if intended: UPDATE_GOLDEN=1 .venv/bin/python -m "
        "pytest tests/test_golden.py):\n" + "\n".join(changed)
    )
