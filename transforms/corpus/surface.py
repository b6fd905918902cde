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


def _token_ids(captions: Sequence[Sequence[str]], tokens: int) -> tuple[np.ndarray, int]:
    """Each token's id in the sorted vocabulary. A dict numbers the words as they come and
    they are renumbered in sorted order: the ids ``np.unique`` would give, without an
    array of every token's string (as wide as the longest word; most of this step's
    memory at CC3M size)."""
    vocabulary: dict[str, int] = {}
    seen = np.fromiter(
        (
            vocabulary.setdefault(token, len(vocabulary))
            for caption in captions
            for token in caption
        ),
        dtype=np.int64,
        count=tokens,
    )
    words = list(vocabulary)
    sorted_id = np.empty(len(words), dtype=np.int64)
    sorted_id[sorted(range(len(words)), key=words.__getitem__)] = np.arange(len(words))
    return sorted_id[seen], len(words)


def _occurrence_ranks(groups: np.ndarray) -> np.ndarray:
    """1-based rank of each element among the equal values of ``groups``, in array order.

    >>> _occurrence_ranks(np.array([7, 3, 7, 7, 3])).tolist()
    [1, 1, 2, 3, 2]
    """
    order = np.argsort(groups, kind="stable")
    ordered = groups[order]
    run_start = np.ones(len(groups), dtype=bool)
    run_start[1:] = ordered[1:] != ordered[:-1]
    start_index = np.maximum.accumulate(np.where(run_start, np.arange(len(groups)), 0))
    ranks = np.empty(len(groups), dtype=np.int32)
    ranks[order] = np.arange(len(groups)) - start_index + 1
    return ranks


def encode_ngrams(captions: Sequence[Sequence[str]]) -> NgramTable:
    """Encodes tokenised captions (vectorised over the whole corpus, one order at a time,
    each occurrence written straight to its place: a few int64 arrays of the corpus's
    tokens at a time).

    >>> table = encode_ngrams([("a", "dog", "a", "dog"), ("a", "cat")])
    >>> table.lengths.tolist(), table.offsets.tolist()
    ([4, 2], [[0, 4, 7, 9, 10], [10, 12, 13, 13, 13]])
    >>> table.ranks[:4].tolist()  # a, dog, a, dog
    [1, 1, 2, 2]
    """
    lengths = np.fromiter((len(c) for c in captions), dtype=np.int64, count=len(captions))
    per_order = np.maximum(lengths[:, None] - np.arange(MAX_ORDER)[None, :], 0)
    offsets = np.zeros((len(lengths), MAX_ORDER + 1), dtype=np.int64)
    offsets[:, 1:] = np.cumsum(per_order, axis=1)
    offsets += np.concatenate(([0], np.cumsum(per_order.sum(axis=1))[:-1]))[:, None]
    ids = np.empty(int(per_order.sum()), dtype=np.int32)
    ranks = np.empty(len(ids), dtype=np.int32)

    token_ids, n_tokens = _token_ids(captions, int(lengths.sum()))
    caption_of = np.repeat(np.arange(len(lengths)), lengths)
    position = np.arange(len(token_ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    remaining = np.repeat(lengths, lengths) - position  # tokens from here to the caption's end
    previous = token_ids  # dense id of the (n-1)-gram starting at each position
    id_offset = 0
    for n in range(1, MAX_ORDER + 1):
        starts = np.flatnonzero(remaining >= n)
        if n == 1:
            dense, count = token_ids, n_tokens
        else:
            dense, count = _dense_ids(previous[starts] * n_tokens + token_ids[starts + n - 1])
            previous = np.full_like(token_ids, -1)
            previous[starts] = dense
        captions_of_starts = caption_of[starts]
        placed = offsets[captions_of_starts, n - 1] + position[starts]
        ids[placed] = dense + id_offset
        ranks[placed] = _occurrence_ranks(captions_of_starts * count + dense)
        id_offset += count
    return NgramTable(
        ids=ids,
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
def _matched(ids, ranks, offsets, reference, n, scratch):
    """Clipped order-``n + 1`` matches of ``reference``'s n-grams against those loaded."""
    matched = 0
    for k in range(offsets[reference, n], offsets[reference, n + 1]):
        if ranks[k] <= scratch[ids[k]]:
            matched += 1
    return matched


@numba.njit(nogil=True, cache=True)
def _geometric_mean(m1, m2, m3, m4, hypothesis_length):
    """The precisions' geometric mean, summed in order 1..4 (the bits every caller shares)."""
    log_sum = 0.0
    log_sum += np.log(m1 / hypothesis_length)
    log_sum += np.log(m2 / (hypothesis_length - 1))
    log_sum += np.log(m3 / (hypothesis_length - 2))
    log_sum += np.log(m4 / (hypothesis_length - 3))
    return np.exp(log_sum / MAX_ORDER)


@numba.njit(nogil=True, cache=True)
def loaded_sim_surf_against(ids, ranks, offsets, lengths, reference, hypothesis_length, scratch):
    """simSURF with the n-grams of ``reference`` counted against those loaded into ``scratch``,
    over ``hypothesis_length``: the loaded caption as the hypothesis when that is its length.

    Clipped matches, the sum of min(count in one, count in the other), are symmetric, so a
    loaded hypothesis meets many references; scanning the hypothesis itself over a loaded
    reference (:func:`loaded_sim_surf`) gives the same bits.
    """
    m1 = _matched(ids, ranks, offsets, reference, 0, scratch)
    m2 = _matched(ids, ranks, offsets, reference, 1, scratch) if m1 else 0
    m3 = _matched(ids, ranks, offsets, reference, 2, scratch) if m2 else 0
    m4 = _matched(ids, ranks, offsets, reference, 3, scratch) if m3 else 0
    if m4 == 0:
        return 0.0
    return _geometric_mean(m1, m2, m3, m4, hypothesis_length)


@numba.njit(nogil=True, cache=True)
def loaded_surface_close(ids, ranks, offsets, reference, hypothesis_length, scratch, limit):
    """Whether :func:`loaded_sim_surf_against` is at least ``limit``, the same answer at a
    fraction of the cost: the validity rules need only that.

    Orders are counted from the longest, whose matches are the rarest. Each precision is at
    most 1 (clipped matches never exceed the hypothesis's n-grams), so the product of those
    counted bounds simSURF ** 4, and most pairs stop at their 4-grams: none shared, or too
    few. A pair the bound does not settle gets its exact value, summed as every caller sums
    it, so no decision near ``limit`` can differ.
    """
    bound = MAX_ORDER * np.log(limit) - 1e-9  # below it by more than rounding: settled
    m4 = _matched(ids, ranks, offsets, reference, 3, scratch)
    if m4 == 0:
        return False
    log_sum = np.log(m4 / (hypothesis_length - 3))
    if log_sum < bound:
        return False
    m3 = _matched(ids, ranks, offsets, reference, 2, scratch)
    log_sum += np.log(m3 / (hypothesis_length - 2)) if m3 else -np.inf
    if log_sum < bound:
        return False
    m2 = _matched(ids, ranks, offsets, reference, 1, scratch)
    log_sum += np.log(m2 / (hypothesis_length - 1)) if m2 else -np.inf
    if log_sum < bound:
        return False
    m1 = _matched(ids, ranks, offsets, reference, 0, scratch)
    return m1 > 0 and _geometric_mean(m1, m2, m3, m4, hypothesis_length) >= limit


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
