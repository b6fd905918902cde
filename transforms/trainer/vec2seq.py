"""Vec2seq+FFNN (Ding et al. 2016, sections 4.3 and 5.1-5.4) in PyTorch.

The image is a one-step encoder sequence: its vector, embedded to the GRU
state size, goes through a two-layer GRU. A two-layer GRU decoder starts from
the encoder's state and reads the option ``<s> w1 ... wm </s>`` (words seen
at least ``vocabulary_min_count`` times among the train split's targets, the
rest ``<unk>``; the first ``MAX_TOKENS`` words). The encoder's output and the
decoder's last output (after ``</s>``: it has read the whole option) go into
a two-hidden-layer ReLU FFNN with a 2-class softmax per (image, option) pair,
the answer being the option with the highest "yes" probability, as the FFNN.

Eq. 4's loss, per instance: the pairs' cross-entropy plus ``lambda_gen`` times
the generation loss, the decoder's outputs predicting the next word of the
*target* option only (teacher forcing). Adagrad (0.01) with gradients clipped
to norm 4, minibatches of 20 instances, the epoch with the best dev accuracy
kept. Trained, the decoder also captions an image from its vector alone
(greedy or beam search), which the captioning metrics score (Table 5).
"""

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from schemas.examples import Batch
from transforms.trainer.captioning_metrics import caption_scores
from transforms.trainer.models import (
    PASS_BATCH,
    TrainConfig,
    Vec2seqSize,
    target_texts,
)
from transforms.trainer.neural import feedforward, seeded, tensor, train_epochs, yes_labels
from transforms.trainer.scaling import Scaler, fit_scaler
from transforms.trainer.stream import ExampleSource, FitData

PAD, UNKNOWN, START, END = "<pad>", "<unk>", "<s>", "</s>"
SPECIAL = (PAD, UNKNOWN, START, END)
MAX_TOKENS = 30  # words of an option read, and of a caption generated (paper, section 5.1)


def build_vocabulary(captions: ExampleSource, min_count: int) -> tuple[str, ...]:
    """The special symbols, then the words of the train targets seen ``min_count`` times or
    more, most frequent first (ties alphabetical)."""
    counts = Counter(
        word
        for batch in captions.batches(PASS_BATCH)
        for text in target_texts(batch)
        for word in text.split()
    )
    kept = sorted((-count, word) for word, count in counts.items() if count >= min_count)
    return (*SPECIAL, *(word for _, word in kept if word not in SPECIAL))


def encode(texts: list[str], index: dict[str, int]) -> torch.Tensor:
    """Token ids ``<s> w1 ... wm </s>`` of each text, padded with 0, (len(texts), longest)."""
    unknown = index[UNKNOWN]
    rows = [
        [
            index[START],
            *(index.get(word, unknown) for word in text.split()[:MAX_TOKENS]),
            index[END],
        ]
        for text in texts
    ]
    ids = torch.zeros((len(rows), max(map(len, rows))), dtype=torch.int64)
    for row, tokens in enumerate(rows):
        ids[row, : len(tokens)] = torch.tensor(tokens)
    return ids


class Vec2seqModule(nn.Module):
    def __init__(
        self, image_dim: int, vocabulary: int, size: Vec2seqSize, generator: torch.Generator
    ):
        super().__init__()
        state = size.state
        self.image_embedding = nn.Linear(image_dim, state)
        self.word_embedding = nn.Embedding(vocabulary, state, padding_idx=0)
        self.encoder = nn.GRU(state, state, num_layers=2, batch_first=True)
        self.decoder = nn.GRU(state, state, num_layers=2, batch_first=True)
        self.output_projection = nn.Linear(state, vocabulary)
        self.classifier = feedforward((2 * state, *size.hidden, 2), generator)

    def encode_images(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The encoder's output (n, state) and final state (2, n, state)."""
        output, state = self.encoder(self.image_embedding(images)[:, None, :])
        return output[:, 0], state

    def forward(
        self, images: torch.Tensor, tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Pair logits (n * k, 2) and decoder outputs (n * k, length, state) for ``tokens``
        (n * k, length): each image's k options, consecutive."""
        encoded, state = self.encode_images(images)
        k = len(tokens) // len(images)
        outputs, _ = self.decoder(
            self.word_embedding(tokens), state.repeat_interleave(k, dim=1).contiguous()
        )
        last = (tokens != 0).sum(dim=1) - 1  # the position that read </s>
        read = outputs[torch.arange(len(tokens)), last]
        pairs = torch.cat([encoded.repeat_interleave(k, dim=0), read], dim=1)
        return self.classifier(pairs), outputs

    def step(self, words: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log probabilities of the next word after ``words`` (m,) in ``state``, and the new
        state."""
        output, state = self.decoder(self.word_embedding(words)[:, None], state)
        return torch.log_softmax(self.output_projection(output[:, 0]), dim=1), state


def generation_loss(
    module: Vec2seqModule, outputs: torch.Tensor, tokens: torch.Tensor
) -> torch.Tensor:
    """Summed cross-entropy of each next word (``</s>`` included) given the words before it."""
    logits = module.output_projection(outputs[:, :-1])
    return nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        tokens[:, 1:].reshape(-1),
        ignore_index=0,
        reduction="sum",
    )


@dataclass(frozen=True)
class Vec2seq:
    name: str
    size: Vec2seqSize
    lambda_gen: float
    image_scaler: Scaler
    vocabulary: tuple[str, ...]
    module: Vec2seqModule
    selection: dict = field(compare=False)
    uses_image: ClassVar[bool] = True

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {word: position for position, word in enumerate(self.vocabulary)}

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Pair logits, decoder outputs and the tokens of every option, options consecutive."""
        tokens = encode(batch.texts.reshape(-1).tolist(), self.index)
        logits, outputs = self.module(tensor(self.image_scaler(batch.images)), tokens)
        return logits, outputs, tokens

    def scores(self, batch: Batch) -> np.ndarray:
        """The log "yes" probability of every option."""
        with torch.no_grad():
            logits, _, _ = self.forward(batch)
        return torch.log_softmax(logits, dim=1)[:, 1].numpy().reshape(batch.options.shape[:2])

    def captions(self, images: np.ndarray, *, decoding: str, beam_size: int) -> list[str]:
        """A caption of each image from its vector alone."""
        with torch.no_grad():
            _, state = self.module.encode_images(tensor(self.image_scaler(images)))
            if decoding == "beam":
                ids = [
                    beam_search(self.module, state[:, [row]], self.index, beam_size)
                    for row in range(len(images))
                ]
            else:
                ids = greedy(self.module, state, self.index)
        return [" ".join(self.vocabulary[token] for token in row) for row in ids]

    def caption_scores(
        self, hypotheses: dict[str, str], references: dict[str, list[str]]
    ) -> dict[str, float]:
        """Words outside the model's vocabulary are <unk> on both sides (paper, section 5.1)."""
        return caption_scores(hypotheses, references, vocabulary=frozenset(self.vocabulary))

    def arrays(self) -> dict[str, np.ndarray]:
        weights = {name: value.detach().numpy() for name, value in self.module.state_dict().items()}
        return {
            **self.image_scaler.arrays("image"),
            "vocabulary": np.asarray(self.vocabulary, dtype=str),
            **weights,
        }


def greedy(module: Vec2seqModule, state: torch.Tensor, index: dict[str, int]) -> list[list[int]]:
    """The most probable word at each step, until ``</s>`` or MAX_TOKENS words."""
    count = state.shape[1]
    words = torch.full((count,), index[START], dtype=torch.int64)
    captions: list[list[int]] = [[] for _ in range(count)]
    done = torch.zeros(count, dtype=torch.bool)
    for _ in range(MAX_TOKENS):
        log_p, state = module.step(words, state)
        log_p[:, [index[PAD], index[START]]] = -torch.inf
        words = log_p.argmax(dim=1)
        for row in np.flatnonzero(~done.numpy()):
            if words[row] != index[END]:
                captions[row].append(int(words[row]))
        done |= words == index[END]
        if done.all():
            break
    return captions


def beam_search(
    module: Vec2seqModule, state: torch.Tensor, index: dict[str, int], beam_size: int
) -> list[int]:
    """The caption with the highest total log probability among ``beam_size`` kept at each
    step (finished ones compete with the open ones)."""
    beams: list[tuple[float, list[int]]] = [(0.0, [])]
    states = state
    finished: list[tuple[float, list[int]]] = []
    for _ in range(MAX_TOKENS):
        last = torch.tensor([words[-1] if words else index[START] for _, words in beams])
        log_p, states = module.step(last, states)
        log_p[:, [index[PAD], index[START]]] = -torch.inf
        totals = torch.tensor([score for score, _ in beams])[:, None] + log_p
        best = torch.topk(totals.reshape(-1), beam_size)
        width = log_p.shape[1]
        kept, rows = [], []
        for score, flat in zip(best.values.tolist(), best.indices.tolist(), strict=True):
            beam, word = divmod(flat, width)
            if word == index[END]:
                finished.append((score, beams[beam][1]))
            else:
                kept.append((score, [*beams[beam][1], word]))
                rows.append(beam)
        if not kept or (finished and max(finished)[0] >= kept[0][0]):
            break
        beams, states = kept, states[:, rows]
    return max(finished or beams, key=lambda scored: scored[0])[1]


def fit_vec2seq(
    name: str, data: FitData, config: TrainConfig, *, size: Vec2seqSize, lambda_gen: float
) -> Vec2seq:
    vocabulary = build_vocabulary(data.train, config.vocabulary_min_count)
    image_scaler = fit_scaler(data.train, lambda batch: batch.images)
    generator = seeded(config.seed, name)
    with torch.random.fork_rng():  # the GRUs and embeddings draw from the global generator
        torch.manual_seed(generator.initial_seed())
        module = Vec2seqModule(len(image_scaler.mean), len(vocabulary), size, generator)
    model = Vec2seq(name, size, lambda_gen, image_scaler, vocabulary, module, {})

    def loss(batch: Batch) -> dict[str, torch.Tensor]:
        """Eq. 4 per instance: every pair's cross-entropy, plus lambda_gen times the target
        options' generation loss."""
        logits, outputs, tokens = model.forward(batch)
        pairs = nn.functional.cross_entropy(logits, yes_labels(batch), reduction="sum")
        target_rows = torch.arange(len(batch)) * batch.num_options + torch.from_numpy(batch.labels)
        generation = generation_loss(module, outputs[target_rows], tokens[target_rows])
        return {
            "loss": (pairs + lambda_gen * generation) / len(batch),
            "classification": pairs / len(batch),
            "generation": generation / len(batch),
        }

    optimizer = torch.optim.Adagrad(module.parameters(), lr=config.vec2seq_learning_rate)
    selection = train_epochs(
        model,
        loss,
        optimizer,
        data,
        config,
        epochs=config.vec2seq_epochs,
        clip_norm=config.clip_norm,
    )
    selection = {
        **selection,
        "size": str(size),
        "lambda_gen": lambda_gen,
        "vocabulary": len(vocabulary),
    }
    return Vec2seq(name, size, lambda_gen, image_scaler, vocabulary, module, selection)
