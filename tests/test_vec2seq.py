"""Vec2seq+FFNN on tiny problems: its tokens, Eq. 4's two losses, decoding, and that it learns."""

import dataclasses
import logging

import numpy as np
import pytest
import torch

from pipelines.options import TrainOptions
from schemas.examples import TEXT_FEATURES, Batch
from transforms import progress
from transforms.trainer.models import Vec2seqSize, accuracy
from transforms.trainer.neural import seeded
from transforms.trainer.stream import FitData, InMemoryExamples
from transforms.trainer.vec2seq import (
    END,
    MAX_TOKENS,
    START,
    UNKNOWN,
    Vec2seqModule,
    beam_search,
    build_vocabulary,
    encode,
    fit_vec2seq,
    generation_loss,
    greedy,
)

ANIMALS = ("dog", "cat", "horse", "bird")


def animal_problem(n: int, seed: int) -> Batch:
    """The image is its animal's one-hot vector plus noise; the target says "a <animal> on the
    grass", the three decoys name the other animals."""
    rng = np.random.default_rng(seed)
    animals = rng.integers(0, len(ANIMALS), size=n)
    images = (np.eye(len(ANIMALS))[animals] + 0.1 * rng.standard_normal((n, 4))).astype(np.float32)
    labels = rng.integers(0, len(ANIMALS), size=n)
    texts = np.empty((n, len(ANIMALS)), dtype=object)
    for row, (animal, label) in enumerate(zip(animals, labels, strict=True)):
        others = [a for a in range(len(ANIMALS)) if a != animal]
        order = [*others[:label], animal, *others[label:]]
        texts[row] = [f"a {ANIMALS[a]} on the grass" for a in order]
    options = np.zeros((n, len(ANIMALS), 3), dtype=np.float32)
    text = np.zeros((n, len(ANIMALS), len(TEXT_FEATURES)), dtype=np.float32)
    return Batch(images, options, text, labels, texts)


CONFIG = dataclasses.replace(
    TrainOptions(dataset="", output="", batch_size=10).train_config(),
    vec2seq_epochs=15,
    vec2seq_learning_rate=0.03,
    vocabulary_min_count=1,
)
SIZE = Vec2seqSize(16, (16, 8))


@pytest.fixture(scope="module")
def fitted():
    train, dev, test = animal_problem(300, 0), animal_problem(40, 1), animal_problem(80, 2)
    data = FitData(InMemoryExamples(train), InMemoryExamples(dev))
    return fit_vec2seq("Vec2seq+FFNN", data, CONFIG, size=SIZE, lambda_gen=1.0), test


def tiny_module(vocabulary: int = 9) -> Vec2seqModule:
    torch.manual_seed(0)
    return Vec2seqModule(3, vocabulary, Vec2seqSize(4, (5, 3)), seeded(0, "tiny")).double()


def test_options_are_read_as_marked_and_padded_token_ids():
    index = {word: k for k, word in enumerate(["<pad>", UNKNOWN, START, END, "a", "dog"])}
    ids = encode(["a dog", "a zebra dog dog", " ".join(["dog"] * 40)], index)
    assert ids.shape == (3, MAX_TOKENS + 2)
    assert ids[0, :5].tolist() == [2, 4, 5, 3, 0]
    assert ids[1, :6].tolist() == [2, 4, 1, 5, 5, 3]  # zebra: <unk>
    assert ids[2, -1] == 3 and (ids[2, 1:-1] == 5).all()  # 30 words read, then </s>


def test_the_vocabulary_is_the_train_targets_words_seen_often_enough():
    batch = animal_problem(30, 0)
    vocabulary = build_vocabulary(InMemoryExamples(batch), min_count=2)
    targets = batch.texts[np.arange(30), batch.labels]
    counts = {word: sum(t.split().count(word) for t in targets) for word in ANIMALS}
    assert vocabulary[:4] == ("<pad>", UNKNOWN, START, END)
    assert {w for w in ANIMALS if counts[w] >= 2} == set(vocabulary) & set(ANIMALS)


def test_generation_loss_is_the_summed_cross_entropy_of_each_next_word():
    module = tiny_module()
    tokens = torch.tensor([[2, 4, 5, 3, 0], [2, 6, 3, 0, 0]])
    images = torch.randn(2, 3, dtype=torch.float64)
    _, outputs = module(images, tokens)
    by_hand = 0.0
    for row in range(2):
        for position in range(int((tokens[row] != 0).sum()) - 1):
            log_p = torch.log_softmax(module.output_projection(outputs[row, position]), dim=0)
            by_hand -= float(log_p[tokens[row, position + 1]].detach())
    assert float(generation_loss(module, outputs, tokens)) == pytest.approx(by_hand)


def test_the_loss_backpropagates_through_both_grus_as_finite_differences_say():
    module = tiny_module()
    tokens = torch.tensor([[2, 4, 5, 3], [2, 6, 3, 0], [2, 7, 3, 0], [2, 8, 4, 3]])

    def loss(images: torch.Tensor) -> torch.Tensor:
        logits, outputs = module(images, tokens)
        pairs = torch.nn.functional.cross_entropy(logits, torch.tensor([1, 0, 0, 1]))
        return pairs + generation_loss(module, outputs[[0, 3]], tokens[[0, 3]])

    images = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(loss, (images,))


def test_only_targets_enter_the_generation_loss(fitted):
    """Eq. 4's generation term reads y_ij1: changing a decoy's words leaves it unchanged."""
    model, test = fitted
    batch = test.take(np.arange(5))
    _, outputs, tokens = model.forward(batch)
    rows = np.arange(5) * batch.num_options + batch.labels
    before = float(generation_loss(model.module, outputs[rows], tokens[rows]))
    texts = batch.texts.copy()
    texts[np.arange(5), (batch.labels + 1) % batch.num_options] = "grass grass grass"
    changed = dataclasses.replace(batch, texts=texts)
    _, outputs, tokens = model.forward(changed)
    assert float(generation_loss(model.module, outputs[rows], tokens[rows])) == pytest.approx(
        before
    )


def test_vec2seq_learns_to_pick_and_to_say_the_animal(fitted):
    model, test = fitted
    assert accuracy(model.scores(test), test.labels) > 0.6  # chance: 0.25
    generation = model.selection["train_generation_by_epoch"]
    assert generation[-1] < 0.5 * generation[0]
    assert model.selection["epoch"] >= 1 and len(model.selection["dev_by_epoch"]) == 15
    images = np.eye(len(ANIMALS), dtype=np.float32)
    for decoding in ("greedy", "beam"):
        captions = model.captions(images, decoding=decoding, beam_size=3)
        assert captions == [f"a {animal} on the grass" for animal in ANIMALS], decoding


def caption_log_probability(module: Vec2seqModule, state: torch.Tensor, ids: list[int]) -> float:
    total, word = 0.0, torch.tensor([2])
    for token in [*ids, 3]:
        log_p, state = module.step(word, state)
        total += float(log_p[0, token])
        word = torch.tensor([token])
    return total


def test_beam_search_of_width_one_is_greedy_and_wider_beams_find_likelier_captions():
    torch.manual_seed(1)
    module = Vec2seqModule(3, 12, Vec2seqSize(6, (4, 3)), seeded(1, "beam")).eval()
    index = {word: k for k, word in enumerate(["<pad>", UNKNOWN, START, END, *"abcdefgh"])}
    with torch.no_grad():
        _, states = module.encode_images(torch.randn(6, 3))
        found = greedy(module, states, index)
        for row in range(6):
            state = states[:, [row]]
            assert beam_search(module, state, index, 1) == found[row]
            wide = beam_search(module, state, index, 4)
            assert (
                caption_log_probability(module, state, wide)
                >= caption_log_probability(module, state, found[row]) - 1e-6
            )


def test_vec2seq_reports_its_epochs_and_steps(monkeypatch, caplog):
    """Every step is due with no interval between a worker's lines; an epoch's steps are
    counted once the first epoch has run them."""
    monkeypatch.setattr(progress, "WORKER_INTERVAL", 0.0)
    data = FitData(InMemoryExamples(animal_problem(40, 0)), InMemoryExamples(animal_problem(10, 1)))
    config = dataclasses.replace(CONFIG, vec2seq_epochs=2)
    with caplog.at_level(logging.INFO):
        fit_vec2seq("Vec2seq+FFNN", data, config, size=SIZE, lambda_gen=1.0)
    lines = [line.split(": dev accuracy")[0] for line in caplog.messages]
    assert lines == [
        *(f"train: Vec2seq+FFNN epoch 1 of 2, step {step}" for step in (1, 2, 3, 4)),
        "train: Vec2seq+FFNN epoch 1 of 2",
        *(f"train: Vec2seq+FFNN epoch 2 of 2, step {step} of 4" for step in (1, 2, 3, 4)),
        "train: Vec2seq+FFNN epoch 2 of 2",
    ]
