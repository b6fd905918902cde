"""simSURF: sentence BLEU with the brevity penalty divided out, batched.

The reference definition is nltk's ``sentence_bleu([target], candidate)`` with
uniform 1..4-gram weights and no smoothing, divided by its brevity penalty
(SPEC "Similarities"). Calling nltk costs ~160 us a pair; the generator scores
N = 500 candidates for each of ~616k COCO captions, so the corpus is encoded
once into integer n-gram ids and a compiled kernel scores a whole batch of
(target, candidates) rows in a few hundred nanoseconds a pair.

Encoding: every n-gram (n = 1..4) of every caption gets a dense id, and every
occurrence of it remembers its rank among the equal n-grams of its caption
(1 for the first "a dog", 2 for the second). The clipped count of a candidate
n-gram against a target is then ``rank <= count_in_target``, summed over the
candidate's occurrences, which is exactly BLEU's ``min(count_hyp, count_ref)``
summed over distinct n-grams.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

MAX_ORDER = 4


@dataclass(frozen=True)
class NgramTable:
    """All 1..4-gram occurrences of a corpus, caption by caption.

    Caption ``c``'s order-``n`` occurrences are ``ids[offsets[c, n - 1]:offsets[c, n]]``.
    """

    ids: np.ndarray  # int32 (occurrences,): dense n-gram id, unique across orders
    ranks: np.ndarray  # int32 (occurrences,): 1-based rank among equal n-grams of the caption
    offsets: np.ndarray  # int64 (captions, MAX_ORDER + 1)
    lengths: np.ndarray  # int32 (captions,): tokens per caption
    vocab_size: int  # number of distinct n-grams of all orders

    def scratch(self) -> np.ndarray:
        """A per-thread counting buffer for :func:`sim_surf_batch`."""
        return np.zeros(self.vocab_size, dtype=np.int32)


def _dense_ids(keys: np.ndarray) -> tuple[np.ndarray, int]:
    uniques, inverse = np.unique(keys, return_inverse=True)
    return inverse.astype(np.int64), len(uniques)


def encode_ngrams(captions: Sequence[Sequence[str]]) -> NgramTable:
    """Encodes tokenised captions (vectorised over the whole corpus).

    >>> table = encode_ngrams([("a", "dog", "a", "dog"), ("a", "cat")])
    >>> table.lengths.tolist(), table.offsets.tolist()
    ([4, 2], [[0, 4, 7, 9, 10], [10, 12, 13, 13, 13]])
    >>> table.ranks[:4].tolist()  # a, dog, a, dog
    [1, 1, 2, 2]
    """
    lengths = np.fromiter((len(c) for c in captions), dtype=np.int64, count=len(captions))
    n_captions = len(lengths)
    ends = np.cumsum(lengths)
    flat_tokens = [token for caption in captions for token in caption]
    token_ids, n_tokens = _dense_ids(np.asarray(flat_tokens, dtype=object).astype(str))
    caption_of = np.repeat(np.arange(n_captions), lengths)
    end_of = np.repeat(ends, lengths)
    positions = np.arange(len(token_ids))

    id_parts, caption_parts, order_parts = [], [], []
    previous = token_ids  # dense id of the (n-1)-gram starting at each position
    id_offset = 0
    for n in range(1, MAX_ORDER + 1):
        valid = positions + n <= end_of
        if n == 1:
            dense, count = previous, n_tokens
        else:
            shifted = np.zeros_like(token_ids)
            shifted[: len(token_ids) - n + 1] = token_ids[n - 1 :]
            keys = np.where(valid, previous * n_tokens + shifted, -1)
            dense, count = _dense_ids(keys[valid])
            previous = np.full_like(token_ids, -1)
            previous[valid] = dense
            dense = previous
        id_parts.append(dense[valid] + id_offset)
        caption_parts.append(caption_of[valid])
        order_parts.append(np.full(int(valid.sum()), n, dtype=np.int64))
        id_offset += count

    ids = np.concatenate(id_parts)
    caption_idx = np.concatenate(caption_parts)
    orders = np.concatenate(order_parts)
    layout = np.lexsort((orders, caption_idx))  # (caption, order, position): lexsort is stable
    ids, caption_idx = ids[layout], caption_idx[layout]

    by_ngram = np.lexsort((np.arange(len(ids)), ids, caption_idx))
    sorted_caption, sorted_ids = caption_idx[by_ngram], ids[by_ngram]
    run_start = np.ones(len(ids), dtype=bool)
    run_start[1:] = (sorted_caption[1:] != sorted_caption[:-1]) | (
        sorted_ids[1:] != sorted_ids[:-1]
    )
    start_index = np.maximum.accumulate(np.where(run_start, np.arange(len(ids)), 0))
    ranks = np.empty(len(ids), dtype=np.int32)
    ranks[by_ngram] = np.arange(len(ids)) - start_index + 1

    per_order = np.maximum(lengths[:, None] - np.arange(MAX_ORDER)[None, :], 0)
    offsets = np.zeros((n_captions, MAX_ORDER + 1), dtype=np.int64)
    offsets[:, 1:] = np.cumsum(per_order, axis=1)
    offsets += np.concatenate(([0], np.cumsum(per_order.sum(axis=1))[:-1]))[:, None]
    return NgramTable(
        ids=ids.astype(np.int32),
        ranks=ranks,
        offsets=offsets,
        lengths=lengths.astype(np.int32),
        vocab_size=int(id_offset),
    )


@numba.njit(nogil=True, cache=True)
def load_reference(ids, offsets, reference, scratch):
    """Counts the reference's n-grams into ``scratch`` (undo with :func:`unload_reference`)."""
    for k in range(offsets[reference, 0], offsets[reference, MAX_ORDER]):
        scratch[ids[k]] += 1


@numba.njit(nogil=True, cache=True)
def unload_reference(ids, offsets, reference, scratch):
    for k in range(offsets[reference, 0], offsets[reference, MAX_ORDER]):
        scratch[ids[k]] = 0


@numba.njit(nogil=True, cache=True)
def loaded_sim_surf(ids, ranks, offsets, lengths, candidate, scratch):
    """simSURF of ``candidate`` against the reference loaded into ``scratch``."""
    return loaded_sim_surf_against(
        ids, ranks, offsets, lengths, candidate, lengths[candidate], scratch
    )


@numba.njit(nogil=True, cache=True)
def loaded_sim_surf_against(ids, ranks, offsets, lengths, reference, hypothesis_length, scratch):
    """simSURF with the n-grams of ``reference`` counted against those loaded into ``scratch``,
    over ``hypothesis_length``: the loaded caption as the hypothesis when that is its length.

    Clipped matches, the sum of min(count in one, count in the other), are symmetric, so a
    loaded hypothesis meets many references; scanning the hypothesis itself over a loaded
    reference (:func:`loaded_sim_surf`) gives the same bits.
    """
    log_sum = 0.0
    for n in range(MAX_ORDER):
        matched = 0
        for k in range(offsets[reference, n], offsets[reference, n + 1]):
            if ranks[k] <= scratch[ids[k]]:
                matched += 1
        if matched == 0:
            return 0.0
        log_sum += np.log(matched / (hypothesis_length - n))
    return np.exp(log_sum / MAX_ORDER)


@numba.njit(nogil=True, cache=True)
def _sim_surf_kernel(ids, ranks, offsets, lengths, targets, candidates, scratch, out):
    for b in range(targets.shape[0]):
        load_reference(ids, offsets, targets[b], scratch)
        for j in range(candidates.shape[1]):
            candidate = candidates[b, j]
            out[b, j] = 0.0
            if candidate >= 0:
                out[b, j] = loaded_sim_surf(ids, ranks, offsets, lengths, candidate, scratch)
        unload_reference(ids, offsets, targets[b], scratch)


def sim_surf_batch(
    table: NgramTable, targets: np.ndarray, candidates: np.ndarray, scratch: np.ndarray
) -> np.ndarray:
    """simSURF(candidates[b, j], targets[b]) for a batch; -1 candidates score 0.

    ``scratch`` comes from :meth:`NgramTable.scratch` and must not be shared
    between threads; it is left zeroed.
    """
    targets = np.ascontiguousarray(targets, dtype=np.int64)
    candidates = np.ascontiguousarray(candidates, dtype=np.int64)
    out = np.empty(candidates.shape, dtype=np.float64)
    _sim_surf_kernel(
        table.ids, table.ranks, table.offsets, table.lengths, targets, candidates, scratch, out
    )
    return out
