"""The validity rule's sentence-encoder stage, what a version records of the model, and
``--validity_model none`` reproducing the paper's decoys."""

import dataclasses
import json
import math
import os
import pathlib

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.generate import run
from pipelines.options import GenerateOptions
from pipelines.store.versions import read_manifest, version_name
from schemas.layout import (
    CARD_FILE,
    SENTENCE_EMBEDDINGS_FILE,
    SENTENCE_PARTS_DIRECTORY,
    STATISTICS_FILE,
    corpus_file,
    corpus_folder,
    dataset_path,
)
from tests.support.dataset_checks import read_parquet
from tests.support.local import local_pipeline
from tests.support.tiny_encoder import tiny_encoder
from tests.support.versions import SMALL_MCIC, TINY_ENCODER
from transforms.corpus.encoders.registry import (
    DEFAULT_FAMILY,
    ENCODERS,
    compared_threshold,
    encoder_identity,
    load_encoder,
)
from transforms.corpus.sentences import (
    VALIDITY_MODEL,
    EncodeCaptions,
    EncoderSpec,
    model_checksum,
)
from transforms.corpus.split import SPLITS
from transforms.corpus.store import CorpusRef, caption_table
from transforms.errors import InputError
from transforms.files import unfenced
from transforms.strategies.validity import DESCRIBES_RULE

GOLDEN_PAPER = os.path.join(os.path.dirname(__file__), "golden", "mcic_decoys_paper.json")
WORDS = ["a", "dog", "runs", "on", "the", "beach", "cat", "sleeps", "sofa", "two", "men"]


def corpus_of(directory: pathlib.Path, originals: list[str]) -> CorpusRef:
    n = len(originals)
    columns = {
        "caption_id": [str(i) for i in range(n)],
        "image_id": [str(i // 5) for i in range(n)],
        "example_id": [f"{i // 5}_{i % 5}" for i in range(n)],
        "text": [text.lower() for text in originals],
        "file_name": [""] * n,
        "url": [""] * n,
        "split": ["train"] * n,
        "original": originals,
    }
    directory.mkdir(parents=True)
    caption_table(columns).to_pandas().to_parquet(directory / "captions.parquet")
    return CorpusRef(str(directory), n, {"train": n})


def test_every_caption_is_encoded_once_in_row_order_whatever_the_shards(tmp_path):
    """600 rows make three shards; a text repeated across them is encoded in each."""
    texts = ["A dog runs on the beach.", "A cat sleeps on the sofa", "Two men", "a dog"]
    originals = [texts[(7 * i) % len(texts)] + ("!" * (i % 3)) for i in range(600)]
    ref = corpus_of(tmp_path / "corpus", originals)
    spec = EncoderSpec(DEFAULT_FAMILY, TINY_ENCODER)
    with local_pipeline() as pipeline:
        written = pipeline | beam.Create([ref]) | EncodeCaptions(spec, unfenced)
        assert_that(written, equal_to([ref]))
    vectors = np.load(corpus_file(ref.directory, SENTENCE_EMBEDDINGS_FILE))
    assert vectors.shape == (600, load_encoder(TINY_ENCODER).dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    distinct = sorted(set(originals))
    direct = dict(zip(distinct, load_encoder(TINY_ENCODER).encode(distinct), strict=True))
    np.testing.assert_allclose(vectors, [direct[text] for text in originals], atol=1e-5)
    assert not os.path.exists(os.path.join(ref.directory, SENTENCE_PARTS_DIRECTORY))


def test_the_models_weights_name_the_version_and_its_card_its_languages(tmp_path):
    english = tiny_encoder(tmp_path / "en", WORDS, seed=0, language="en")
    other = tiny_encoder(tmp_path / "other", WORDS, seed=1, language="en")
    entries = [
        model_checksum(EncoderSpec("sentence_transformers", str(folder)), "en")
        for folder in (english, other)
    ]
    assert entries[0]["sha256"] == encoder_identity(str(english)).sha256
    assert entries[0]["sha256"] != entries[1]["sha256"] and entries[0]["bytes"] > 0
    assert entries[0][VALIDITY_MODEL] == {"family": "sentence_transformers", "languages": ["en"]}
    options = GenerateOptions(input="in.json", output="out")
    corpus = {"path": "in.json", "sha256": "0" * 64, "bytes": 1}
    names = {version_name(options, [corpus, entry]) for entry in entries}
    assert len(names) == 2
    float32 = dataclasses.replace(options, validity_encoder="sentence_transformers")
    inputs = [corpus, entries[0]]
    assert version_name(float32, inputs) != version_name(options, inputs)
    with pytest.raises(InputError, match="trained on en captions, not --language de"):
        model_checksum(EncoderSpec("sentence_transformers", str(english)), "de")


def test_a_version_records_the_rule_in_its_manifest_statistics_and_card(closed_sets_dataset):
    directory, options = closed_sets_dataset
    [model] = [e for e in read_manifest(directory)["inputs"] if VALIDITY_MODEL in e]
    assert model["path"] == options.validity_model == TINY_ENCODER
    with open(dataset_path(directory, STATISTICS_FILE)) as handle:
        turned_away = json.load(handle)["validity"][f"validity/{DESCRIBES_RULE}"]
    assert turned_away > 0
    with open(dataset_path(directory, CARD_FILE), encoding="utf-8") as handle:
        card = handle.read()
    assert f"`validity/{DESCRIBES_RULE}`: {turned_away:,} candidates turned away" in card
    assert f"reaches {options.validity_threshold} describes" in card
    compared = options.strategy_config().rules.encoder_threshold
    assert options.validity_encoder == "sentence_transformers_int8"  # the default family
    assert compared < options.validity_threshold  # its margin, which the card names
    assert f"{options.validity_encoder} cosines are compared at {compared}," in card
    assert model["sha256"] in card
    limitations = card.split("## Known limitations")[1]
    assert f"cosine {options.validity_threshold} or more" in limitations
    assert "not decoys that describe it in other words" not in limitations
    rows = read_parquet(directory, "dev")
    assert all(len(row["option_originals"]) == len(row["options"]) for row in rows)
    assert any(
        o != t for row in rows for o, t in zip(row["option_originals"], row["options"], strict=True)
    )


def test_without_a_validity_model_mcic_chooses_the_papers_decoys(shared, synthetic_corpus):
    """The decoys of every instance, as the code wrote them before the rule existed."""
    options = GenerateOptions(
        input=synthetic_corpus, output="", **{**SMALL_MCIC, "validity_model": "none"}
    )
    directory, _ = shared.version(options)
    decoys = {
        row["example_id"]: row["decoy_caption_ids"]
        for split in SPLITS
        for row in read_parquet(directory, split)
    }
    with open(GOLDEN_PAPER, encoding="utf-8") as handle:
        assert decoys == json.load(handle)
    assert not os.path.exists(corpus_file(corpus_folder(directory), SENTENCE_EMBEDDINGS_FILE))
    assert not [e for e in read_manifest(directory)["inputs"] if VALIDITY_MODEL in e]
    with open(dataset_path(directory, CARD_FILE), encoding="utf-8") as handle:
        limitations = handle.read().split("## Known limitations")[1]
    assert "not decoys that describe it in other words (`--validity_model none`)" in limitations


@pytest.mark.parametrize("family", ENCODERS)
def test_the_rule_compares_a_familys_cosines_its_margin_apart(family):
    """A family whose vectors stray from float32's by up to an angle compares at the cosine
    that angle further apart; the float32 family at the threshold itself."""
    margin = ENCODERS[family].margin
    for threshold in (0.3, 0.5, 0.99, 1.0):
        options = GenerateOptions(
            input="in.json", output="", validity_threshold=threshold, validity_encoder=family
        )
        compared = options.strategy_config().rules.encoder_threshold
        assert compared == compared_threshold(threshold, family)
        assert math.acos(compared) == pytest.approx(math.acos(threshold) + margin, abs=1e-5)
    assert GenerateOptions(input="", output="", validity_model="none").compared_threshold() is None


def test_a_threshold_outside_0_to_1_is_refused_in_one_line(tmp_path):
    options = GenerateOptions(input="in.json", output=str(tmp_path), validity_threshold=1.5)
    with pytest.raises(InputError, match=r"^--validity_threshold must be in \(0, 1\]$"):
        run(options)
