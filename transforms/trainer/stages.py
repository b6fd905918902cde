"""Fitting, evaluating and captioning as Beam stages (the trainer's, after BuildExamples).

**Fitting is a global step with bounded memory.** Every model's loss (ridge's
moments, the epochs of subgradient or Adagrad steps, the dev selection after
each epoch) needs passes over the whole train split and dev split, but not
the splits at once: :class:`FitModels` writes the train and dev Examples as
Parquet shards (``stream.WriteExamples``, in parallel) and one worker fits
the models one after another, streaming minibatches from those shards
(``stream.ExampleShards``), never holding more than ``--fit_buffer``
examples plus one Parquet row group. What flows on is the fitted models (up
to a few tens of MB each), which every evaluating worker receives as a side
input; the shards are deleted when the run ends.

**Evaluation is parallel.** :class:`Evaluate` scores batches of dev and test
Examples with every model and counts correct answers per (model, split).
Chance is 1/k for a version with k options per instance.
:class:`CaptionImages` has every captioning model (Vec2seq+FFNN) caption
each dev and test image from its vector and scores the captions against the
image's captions in the corpus (CIDEr-D and ROUGE-L, Table 5).
"""

import io
import logging
import posixpath
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from schemas.examples import Example
from transforms.errors import InputError
from transforms.files import write_file, write_json
from transforms.progress import timed
from transforms.trainer.features import SharedFeatureSpace
from transforms.trainer.metrics import (
    EVALUATION_SPLITS,
    add_counts,
    build_metrics,
    count_correct,
    set_outcomes,
)
from transforms.trainer.models import Captioner, Model, TrainConfig
from transforms.trainer.registry import run_fitters
from transforms.trainer.stream import ExampleShards, FitData, WriteExamples

FIT_SPLITS = ("train", "dev")
EXAMPLES_DIRECTORY = "examples"


def fit_and_write(paths: list[str], *, config: TrainConfig, output: str) -> Iterator[Model]:
    """Fits every model on train (selected on dev), writes each to <output>/models/<name>.npz."""
    shards = {}
    for split in FIT_SPLITS:
        members = [path for path in paths if posixpath.basename(path).startswith(f"{split}-")]
        if not members:
            raise InputError(f"the dataset has no {split} instances: the trainer needs some")
        shards[split] = ExampleShards(members, capacity=config.fit_buffer)
    data = FitData(train=shards["train"], dev=shards["dev"])
    for name, fit in run_fitters(config).items():
        with timed("train", f"fit_{name}"):
            model = fit(data)
        arrays = io.BytesIO()
        np.savez(arrays, **model.arrays())
        write_file(FileSystems.join(output, "models", f"{name}.npz"), arrays.getvalue())
        yield model
    held = max(source.peak for source in shards.values())
    Metrics.counter("train", "fit_examples_held_at_most").inc(held)
    logging.info("train: fitting held at most %d examples at once", held)


class FitModels(beam.PTransform):
    """Examples -> one fitted model per element. The global step (module docstring)."""

    def __init__(self, *, config: TrainConfig, output: str):
        super().__init__()
        self._config, self._output = config, output

    def expand(self, examples):
        directory = FileSystems.join(self._output, EXAMPLES_DIRECTORY)
        shards = [
            examples
            | f"Write{split.title()}"
            >> WriteExamples(directory=directory, split=split, seed=self._config.seed)
            for split in FIT_SPLITS
        ]
        return (
            shards
            | "Shards" >> beam.Flatten()
            | "Gather" >> beam.combiners.ToList()
            | "Fit" >> beam.FlatMap(fit_and_write, config=self._config, output=self._output)
        )


@beam.ptransform_fn
def EvaluationBatches(examples):
    """The dev and test examples in batches, as every scoring stage reads them."""
    return (
        examples
        | "DevAndTest" >> beam.Filter(lambda example: example.split in EVALUATION_SPLITS)
        | "Batch" >> beam.BatchElements(min_batch_size=256, max_batch_size=2048)
    )


class Evaluate(beam.PTransform):
    """Examples + fitted models -> ((model, split), (correct, total)), for dev and test."""

    def __init__(self, *, models):
        super().__init__()
        self._models = models

    def expand(self, examples):
        return (
            examples
            | "Batches" >> EvaluationBatches()
            | "Score" >> beam.FlatMap(count_correct, models=beam.pvalue.AsList(self._models))
            | "Sum" >> beam.CombinePerKey(add_counts)
        )


class ScoreSets(beam.PTransform):
    """Examples + fitted models -> ((model, split), (sets all answered right, sets)) for
    dev and test: the set score of closed sets, each instance answered on its own."""

    def __init__(self, *, models):
        super().__init__()
        self._models = models

    def expand(self, examples):
        return (
            examples
            | "Batches" >> EvaluationBatches()
            | "Score" >> beam.FlatMap(set_outcomes, models=beam.pvalue.AsList(self._models))
            | "PerSet" >> beam.CombinePerKey(all)
            | "Count"
            >> beam.Map(
                lambda keyed: ((keyed[0][0], keyed[0][1]), (int(keyed[1]), 1))
            ).with_output_types(tuple[tuple[str, str], tuple[int, int]])  # (model, split) keys
            | "Sum" >> beam.CombinePerKey(add_counts)
        )


def first_example(examples: Iterable[Example]) -> Example:
    """The example with the smallest id: associative, so Beam may combine partial picks."""
    return min(examples, key=lambda example: example.example_id)


def generate_captions(
    examples: list[Example], models: list, *, config: TrainConfig
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """((model, split), (image id, caption)) of every captioning model for a batch of images."""
    captioners = [model for model in models if isinstance(model, Captioner)]
    if not captioners:
        return []
    images = np.stack([example.image for example in examples])
    generated = []
    for model in captioners:
        captions = model.captions(images, decoding=config.decoding, beam_size=config.beam_size)
        generated += [
            ((model.name, example.split), (example.image_id, caption))
            for example, caption in zip(examples, captions, strict=True)
        ]
    return generated


class _ScoreCaptions(beam.DoFn):
    """One (model, split)'s captions -> CIDEr-D and ROUGE-L against the images' captions in
    the corpus, with the model's vocabulary (rarer words are <unk> on both sides); the
    captions go to <output>/captions/<model> <split>.json."""

    def __init__(self, space: SharedFeatureSpace, output: str):
        self._space, self._output = space, output

    def process(self, keyed, models: list):
        (name, split), captions = keyed
        [model] = [model for model in models if model.name == name]
        references = self._space.acquire().captions_by_image
        hypotheses = dict(sorted(captions))
        write_json(FileSystems.join(self._output, "captions", f"{name} {split}.json"), hypotheses)
        yield (
            (name, split),
            model.caption_scores(hypotheses, {image: references[image] for image in hypotheses}),
        )


class CaptionImages(beam.PTransform):
    """Examples + fitted models -> ((model, split), captioning scores) of every captioning
    model; each dev and test image is captioned once, from the vector of its example with
    the smallest id."""

    def __init__(self, *, models, space: SharedFeatureSpace, config: TrainConfig, output: str):
        super().__init__()
        self._models, self._space, self._config, self._output = models, space, config, output

    def expand(self, examples):
        models = beam.pvalue.AsList(self._models)
        return (
            examples
            | "DevAndTest" >> beam.Filter(lambda example: example.split in EVALUATION_SPLITS)
            | "ByImage"
            >> beam.Map(
                lambda example: ((example.split, example.image_id), example)
            ).with_output_types(tuple[tuple[str, str], Any])
            | "OnePerImage" >> beam.CombinePerKey(first_example)
            | "Images" >> beam.Values()
            | "Batch" >> beam.BatchElements(min_batch_size=64, max_batch_size=512)
            | "Generate"
            >> beam.FlatMap(
                generate_captions, models=models, config=self._config
            ).with_output_types(tuple[tuple[str, str], tuple[str, str]])
            | "Group" >> beam.GroupByKey()
            | "Score" >> beam.ParDo(_ScoreCaptions(self._space, self._output), models=models)
        )


class WriteMetrics(beam.PTransform):
    """Counts + captioning scores + set scores + fitted models -> the metrics file (one
    write, after every count is in). ``order``: the fitted models' names in table order."""

    def __init__(self, *, models, captioning, sets, order: list[str], path: str, num_options: int):
        super().__init__()
        self._models, self._captioning, self._sets = models, captioning, sets
        self._order, self._path, self._num_options = order, path, num_options

    def expand(self, counts):
        order = self._order
        return (
            counts
            | "Gather" >> beam.combiners.ToList()
            | "Metrics"
            >> beam.Map(
                lambda counts, models, captioning, sets, num_options: build_metrics(
                    counts,
                    sorted(models, key=lambda m: order.index(m.name)),
                    num_options,
                    captioning,
                    sets,
                ),
                models=beam.pvalue.AsList(self._models),
                captioning=beam.pvalue.AsList(self._captioning),
                sets=beam.pvalue.AsList(self._sets),
                num_options=self._num_options,
            )
            | "Write" >> beam.Map(lambda metrics, path: write_json(path, metrics), self._path)
        )
