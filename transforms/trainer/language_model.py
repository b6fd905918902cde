"""A bigram language model of target captions: Hodosh & Hockenmaier 2016's text-only baseline.

Fitted on the train split's targets, it scores each option by the total log
probability of its tokens between sentence markers ``<s> ... </s>`` and
answers with the most probable option. There is no length normalisation, as
in the paper: every token costs probability, so a short chunk ("just person")
beats the full caption it was cut from, which is why the paper's LM is near 0%
on those tasks and well above chance where a decoy's words are out of place.

Smoothing is interpolated Kneser-Ney with one discount ``D`` (Chen & Goodman
1999's usual 0.75)::

    P(w | v) = max(c(v, w) - D, 0) / c(v) + D * N1+(v .) / c(v) * P_cont(w)
    P_cont(w) = (N1+(. w) + 1) / (N1+(. .) + |V|)

over the predicted vocabulary V (the train targets' words, ``</s>`` and
``<unk>``, which stands for every unseen word); a context never seen is backed
off to ``P_cont`` alone. The add-one on the continuation counts gives ``<unk>``
(and every word) some mass, so no option scores minus infinity. Counts are
sorted integer keys ``context * width + word`` in numpy arrays: ~6M bigram
occurrences at COCO 2014 scale take seconds and tens of MB.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from schemas.examples import Batch

START, END, UNKNOWN = "<s>", "</s>", "<unk>"
DISCOUNT = 0.75


def marked_ids(vocabulary: dict[str, int], texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(token ids, text index) of every bigram's context and word, flattened; texts with markers.

    Returns the ids of ``<s> w1 ... wn </s>`` of each text and, per id, which text it is in.
    """
    start, unknown = len(vocabulary), vocabulary[UNKNOWN]
    ids, owner = [], []
    for index, text in enumerate(texts):
        words = text.split()
        ids += [start, *(vocabulary.get(word, unknown) for word in words), vocabulary[END]]
        owner += [index] * (len(words) + 2)
    return np.asarray(ids, dtype=np.int64), np.asarray(owner, dtype=np.int64)


def bigrams(ids: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(contexts, words, text index) of consecutive ids within one text."""
    within = owner[1:] == owner[:-1]
    return ids[:-1][within], ids[1:][within], owner[1:][within]


@dataclass(frozen=True)
class BigramLM:
    name: str
    vocabulary: dict[str, int]  # predicted symbols: words, END, UNKNOWN; START is len(vocabulary)
    keys: np.ndarray  # int64, sorted: context * width + word of every bigram seen in training
    counts: np.ndarray  # int64 c(v, w), same order
    context_totals: np.ndarray  # float64 c(v) per context id
    context_types: np.ndarray  # float64 N1+(v .) per context id
    continuation: np.ndarray  # float64 P_cont(w) per predicted id
    discount: float
    selection: dict = field(compare=False)
    uses_image: ClassVar[bool] = False

    @property
    def width(self) -> int:
        """Key stride: the predicted symbols and START."""
        return len(self.vocabulary) + 1

    def probabilities(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """P(word | context) for arrays of ids."""
        keys = contexts * self.width + words
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        counts = np.where(self.keys[at] == keys, self.counts[at], 0)
        totals, types = self.context_totals[contexts], self.context_types[contexts]
        seen = totals > 0
        safe = np.where(seen, totals, 1.0)
        backoff = self.continuation[words]
        smoothed = np.maximum(counts - self.discount, 0) / safe + (
            self.discount * types / safe * backoff
        )
        return np.where(seen, smoothed, backoff)

    def log_probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's total log probability with its markers (no length normalisation)."""
        contexts, words, owner = bigrams(*marked_ids(self.vocabulary, texts))
        logs = np.log(self.probabilities(contexts, words))
        return np.bincount(owner, weights=logs, minlength=len(texts))

    def scores(self, batch: Batch) -> np.ndarray:
        return self.log_probabilities(batch.texts.ravel().tolist()).reshape(batch.texts.shape)

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything the model is, from which :func:`fit_bigram_lm`'s other arrays follow."""
        words = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        return {
            "vocabulary": np.asarray(words, dtype=str),
            "bigram_keys": self.keys,
            "bigram_counts": self.counts,
            "discount": np.float64(self.discount),
        }


def fit_bigram_lm(name: str, captions: Sequence[str], discount: float = DISCOUNT) -> BigramLM:
    """Counts the bigrams of ``captions`` (at least one) with markers; smoothing as the module
    docstring says."""
    words = sorted({word for caption in captions for word in caption.split()} - {END, UNKNOWN})
    vocabulary = {word: index for index, word in enumerate([*words, END, UNKNOWN])}
    size = len(vocabulary)
    contexts, predicted, _ = bigrams(*marked_ids(vocabulary, captions))
    keys, counts = np.unique(contexts * (size + 1) + predicted, return_counts=True)
    key_contexts, key_words = keys // (size + 1), keys % (size + 1)
    continuation = (np.bincount(key_words, minlength=size) + 1.0) / (len(keys) + size)
    return BigramLM(
        name=name,
        vocabulary=vocabulary,
        keys=keys,
        counts=counts.astype(np.int64),
        context_totals=np.bincount(key_contexts, weights=counts, minlength=size + 1),
        context_types=np.bincount(key_contexts, minlength=size + 1).astype(np.float64),
        continuation=continuation,
        discount=discount,
        selection={
            "smoothing": "interpolated Kneser-Ney",
            "discount": discount,
            "captions": len(captions),
            "vocabulary": size,
        },
    )
