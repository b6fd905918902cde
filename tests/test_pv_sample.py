"""--pv_train_sample: PV trains on a seeded sample, the other captions' vectors are inferred."""

import dataclasses
import os
import pathlib

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.cli import parse_options
from pipelines.options import GenerateOptions
from pipelines.store.versions import version_name
from schemas.layout import INFERRED_DIRECTORY, TRAINED_ROWS_FILE
from schemas.records import Caption
from transforms.corpus import pv_training
from transforms.corpus.inference import infer_vectors
from transforms.corpus.paragraph_vectors import (
    TRAIN_SAMPLE,
    PVConfig,
    load_model,
    train_sample_rows,
    unit_vectors,
)
from transforms.corpus.pv_training import TrainParagraphVectors, train_and_write
from transforms.corpus.store import NGRAM_ARRAYS, load_corpus, own_closeness
from transforms.corpus.synthetic import images
from transforms.errors import InputError

PV = PVConfig(dim=32, epochs=5, min_count=1, hs=1, negative=0, seed=3, workers=1)
NGRAM_FILES = tuple(f"ngrams-{name}.npy" for name in (*NGRAM_ARRAYS, "vocab_size"))
CORPUS_FILES = ("captions.parquet", "embeddings.npy", *NGRAM_FILES, "own_closeness.npy")


def _captions(num_images: int = 160) -> list[Caption]:
    """Five captions an image; the first 20 images dev, the next 20 test."""
    captions = []
    for image, (_, texts) in enumerate(images(0, num_images)):
        split = "dev" if image < 20 else "test" if image < 40 else "train"
        for k, text in enumerate(texts):
            words = text.lower().rstrip(".")
            captions.append(
                Caption(str(5 * image + k), str(image), f"{image}_{k}", words, "", "", split)
            )
    return captions


def _write(output: pathlib.Path, sample: int, pretrained: str = "", seed: int = 3):
    pv = dataclasses.replace(PV, train_sample=sample, seed=seed)
    return train_and_write(
        _captions(),
        pv=pv,
        pretrained=pretrained,
        neighbours=20,
        decoy_pool="all",
        output=str(output),
    )


def _files(output: pathlib.Path) -> dict[str, bytes]:
    corpus = output / "build" / "corpus"
    return {name: (corpus / name).read_bytes() for name in sorted(os.listdir(corpus))}


def test_a_sampled_run_trains_its_sample_and_infers_the_others(tmp_path):
    ref = _write(tmp_path, 300)
    captions = _captions()
    ids = [c.caption_id for c in captions]
    sample = train_sample_rows(ids, 300, PV.seed)
    trained = np.load(tmp_path / "build" / "corpus" / TRAINED_ROWS_FILE)
    np.testing.assert_array_equal(trained, sample)
    assert len(trained) == 300 and ref.size == len(captions) == 800

    model = load_model(str(tmp_path / "build" / "pv" / "doc2vec.model"))
    assert len(model.dv) == 300  # the sample's document vectors, no others
    assert getattr(model, TRAIN_SAMPLE)["captions"] == 300
    assert getattr(model, TRAIN_SAMPLE)["of"] == 800
    corpus = load_corpus(str(tmp_path / "build" / "corpus"))
    np.testing.assert_array_equal(corpus.embeddings[sample], unit_vectors(model))
    rest = np.setdiff1d(np.arange(800), sample)
    inferred, unknown = infer_vectors(
        model, [captions[r].text.split() for r in rest], [ids[r] for r in rest], PV.seed
    )
    np.testing.assert_array_equal(corpus.embeddings[rest], inferred)
    assert unknown == 0
    np.testing.assert_allclose(np.linalg.norm(corpus.embeddings, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(
        corpus.own_closeness, own_closeness(corpus.embeddings, corpus.image_of)
    )
    assert not (tmp_path / "build" / "corpus" / INFERRED_DIRECTORY).exists()  # shards removed


def test_at_or_below_the_sample_size_every_caption_is_trained_as_before(tmp_path):
    _write(tmp_path / "off", 0)
    _write(tmp_path / "at", 800)
    assert _files(tmp_path / "off") == _files(tmp_path / "at")
    assert set(_files(tmp_path / "off")) == set(CORPUS_FILES)


def _pipeline_run(output: pathlib.Path, beam_args: list[str]) -> None:
    pv = dataclasses.replace(PV, train_sample=300)
    with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
        _ = (
            pipeline
            | beam.Create(_captions())
            | TrainParagraphVectors(
                pv=pv, pretrained="", neighbours=20, decoy_pool="all", output=str(output)
            )
        )


@pytest.mark.slow
def test_a_sampled_corpus_is_byte_identical_on_one_and_two_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(pv_training, "PART_SIZE", 64)  # the captions reach training in 13+ parts
    _pipeline_run(tmp_path / "one", [])
    two = ["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"]
    _pipeline_run(tmp_path / "two", two)
    _write(tmp_path / "in_process", 300)
    files = _files(tmp_path / "one")
    assert set(files) == {*CORPUS_FILES, TRAINED_ROWS_FILE}
    assert files == _files(tmp_path / "two") == _files(tmp_path / "in_process")  # no parts left


def test_a_sampled_model_is_reused_only_for_its_own_sample(tmp_path):
    _write(tmp_path / "first", 300)
    model = str(tmp_path / "first" / "build" / "pv" / "doc2vec.model")
    _write(tmp_path / "again", 300, pretrained=model)
    assert _files(tmp_path / "again") == _files(tmp_path / "first")
    for sample, seed, words in (
        (400, 3, "this run's sample of 400 is other captions"),
        (300, 4, "this run's sample of 300 is other captions"),
        (0, 3, "this run trains on every caption"),
    ):
        with pytest.raises(InputError) as refused:
            _write(tmp_path / f"other{sample}-{seed}", sample, pretrained=model, seed=seed)
        message = str(refused.value)
        assert message.startswith(f"{model}: the model was trained on a sample of 300 of 800")
        assert "--pv_train_sample 300 --seed 3" in message and words in message


def test_a_model_of_every_caption_is_reused_whole_by_a_sampled_run(tmp_path):
    _write(tmp_path / "full", 0)
    model = str(tmp_path / "full" / "build" / "pv" / "doc2vec.model")
    _write(tmp_path / "reused", 300, pretrained=model)
    assert _files(tmp_path / "reused") == _files(tmp_path / "full")


def test_the_option_is_validated_and_names_a_version_only_when_set():
    options, _ = parse_options(["--input", "a", "--output", "b", "--pv_train_sample", "5000"])
    assert options.pv_config().train_sample == 5000
    with pytest.raises(InputError, match="--pv_train_sample must be >= 0"):
        dataclasses.replace(options, pv_train_sample=-1).validate()
    checksums = [{"sha256": "a" * 64}]
    default = GenerateOptions(input="a", output="b")
    name = version_name(default, checksums)
    assert version_name(dataclasses.replace(default, pv_train_sample=0), checksums) != name
    before = dataclasses.make_dataclass(  # the options before --pv_train_sample existed
        "GenerateOptions",
        [
            (f.name, f.type, dataclasses.field(default=f.default))
            for f in dataclasses.fields(GenerateOptions)
            if f.name != "pv_train_sample"
        ],
    )
    assert version_name(before(input="a", output="b"), checksums) == name
    assert version_name(options, checksums) != name
