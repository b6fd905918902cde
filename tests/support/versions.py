"""The tests' sizes, and the corpora and versions a test run makes once and shares."""

import dataclasses
import hashlib
import json
import os
import pathlib
import re
import shutil
import tempfile
from collections.abc import Callable

from filelock import FileLock

from pipelines.generate import run
from pipelines.options import GenerateOptions
from pipelines.store.versions import completed_dataset
from schemas.layout import VERSIONS_DIRECTORY
from tests.support.tiny_encoder import tiny_encoder
from transforms.corpus.synthetic import coco_document, write_coco

COCO_VAL2017 = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "shared", "data", "coco", "captions_val2017.json"
)
COCO_SUBSET = "captions_val2017_subset.json"
# names a folder of shared versions that several test runs of the same code share
SHARED_VARIABLE = "DMC_TEST_SHARED"

# The validity rule's encoder in tests: a tiny random BERT built from configuration over the
# synthetic corpus's words (tests/support/tiny_encoder.py), its card saying it covers every
# language (the tests' corpora in other languages use it too), made once per machine and code
# (its name is its builder's digest). A random model's cosines are all high (0.94-0.98
# between unrelated synthetic captions), so its threshold is near 1; the real weights run
# in the COCO end-to-end test and run_local.sh.
TINY_BUILDER = pathlib.Path(__file__).with_name("tiny_encoder.py")
TINY_LANGUAGE = "multilingual"
# its words: the synthetic corpus's and those of the tests' corpora in other languages
LANGUAGE_DATA = pathlib.Path(__file__).parent.parent / "data" / "languages"
TINY_ENCODER = os.path.join(
    tempfile.gettempdir(),
    "dmc-tiny-encoder-"
    + hashlib.sha256(
        TINY_BUILDER.read_bytes()
        + TINY_LANGUAGE.encode()
        + b"".join(path.read_bytes() for path in sorted(LANGUAGE_DATA.rglob("*.*")))
    ).hexdigest()[:12],
)
TINY_THRESHOLD = 0.99
# The learned text-only audit fits on a sample of train (--audit_sample), as it does at
# scale, where its default of 20,000 is reached: the 1,000-image versions' 6,120 closed-sets
# instances took 15 s of fitting, a sample of 1,000 took 2.3 s with the same verdict.
AUDIT_SAMPLE = 1000
SMALL = {
    "n_dev": 40,
    "n_test": 40,
    "neighbours": 60,
    "pv_dim": 64,
    "pv_epochs": 10,
    "validity_model": TINY_ENCODER,
    "validity_threshold": TINY_THRESHOLD,
    "audit_sample": AUDIT_SAMPLE,
}
SMALL_MCIC = {**SMALL, "decoys": "mcic"}
# Runs that test a run's life (a kill, a lease, two runs at once) in fresh interpreters:
# the validity model, whose import takes about 5 s of each, is no part of what they check.
LIFECYCLE = {
    **{name: value for name, value in SMALL.items() if name != "validity_threshold"},
    "validity_model": "none",
}
TRAINING = {**SMALL, "n_dev": 100, "n_test": 100}
# the trainer's settings at the tests' sizes (dmc-train, regenerate --train)
SMALL_TRAINING = {
    "epochs": 8,
    "ffnn_hidden": "64,32",
    "vec2seq_sizes": "64:32:16",
    "vec2seq_epochs": 2,
}


def made_tiny_encoder() -> str:
    """:data:`TINY_ENCODER`, built by the first test process that asks (the others wait)."""
    with FileLock(f"{TINY_ENCODER}.lock"):
        if not os.path.isdir(TINY_ENCODER):
            texts = [a["caption"] for a in coco_document(seed=0, num_images=300)["annotations"]]
            texts += [path.read_text(encoding="utf-8") for path in LANGUAGE_DATA.rglob("*.*")]
            words = {word.lower() for text in texts for word in re.findall(r"\w+", text)}
            words |= {character for word in words for character in word}  # CJK: one a token
            scratch = pathlib.Path(tempfile.mkdtemp(dir=tempfile.gettempdir()))
            tiny_encoder(scratch / "model", sorted(words), language=TINY_LANGUAGE)
            os.rename(scratch / "model", TINY_ENCODER)
            shutil.rmtree(scratch)
    return TINY_ENCODER


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
