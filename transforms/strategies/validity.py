"""The validity rules every decoy strategy obeys (SPEC "Validity"), in one place.

Algorithm 1's only guard is ``simSURF(decoy, target) < L``. Measured on real
corpora that leaves instances with two right answers: a decoy word for word
another caption of the target's image, or a near-copy of one. So a decoy
``d`` of a target ``t`` of image ``i`` is valid only if

- ``d`` is not a caption of ``i``                          (``same_image``);
- no caption of ``i`` has ``d``'s text                     (``copies_a_caption_of_the_image``);
- ``simSURF(d, c) < L`` for every caption ``c`` of ``i``   (``surface_close_to_the_image``);
- with a validity model (``--validity_model``, on by default): the cosine of ``d``'s and
  ``c``'s sentence-encoder vectors stays below ``--validity_threshold`` for every caption
  ``c`` of ``i`` (``describes_the_image``): BLEU and PV miss a caption reordered or
  reworded, which an encoder trained on paraphrases sees (:mod:`transforms.corpus.sentences`);
- with ``--own_caption_rule`` only: ``simPV(d, t)`` is below ``t``'s mean simPV to
  the other captions of ``i`` (``closer_than_own_captions``): a decoy closer to the
  target than the image's own captions are is likely to describe the image too;

and the options of an instance are distinct strings (``repeats_an_option``).

Strategies walk their candidates in preference order and keep the first that
pass (:func:`choose_valid`); closed sets need the rules in both directions
(:func:`pairs_allowed`). Each rule counts the candidates it turned away, under
``validity/<rule>``, which ``statistics.json`` reports.
"""

from dataclasses import dataclass

import numba
import numpy as np
from apache_beam.metrics import Metrics

from transforms.corpus.store import Corpus
from transforms.corpus.surface import (
    load_reference,
    loaded_surface_close,
    unload_reference,
)

RULES = (
    "same_image",
    "copies_a_caption_of_the_image",
    "surface_close_to_the_image",
    "closer_than_own_captions",
    "repeats_an_option",
    "describes_the_image",
)
VALID = -1
NONE = -2  # a -1 (padding) candidate
SAME_IMAGE, COPIES, SURFACE, CLOSER, REPEATS, DESCRIBES = range(len(RULES))
DESCRIBES_RULE = RULES[DESCRIBES]
MIN_BLOCK = 8  # pairs_allowed(need=...) and allowed_group check this many candidates at a time
MAX_KNOWN = 1 << 22  # mutual_allowed's answers kept at once (about 250 MB)
# a quick cosine this far from the threshold decides; nearer, the reference sum does
DOT_MARGIN = 1e-9


@dataclass(frozen=True)
class ValidityRules:
    limit: float  # L: simSURF against any caption of the target's image must stay below it
    own_caption_rule: bool  # also reject decoys closer to the target than its own captions
    # the sentence-encoder cosine to a caption of the image at which a decoy describes the
    # image too; None: no validity model (the paper's rules)
    encoder_threshold: float | None = None

    @property
    def threshold(self) -> float:
        """The kernels' threshold: above every cosine when the rule is off."""
        return np.inf if self.encoder_threshold is None else self.encoder_threshold


@numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})
def _quick_dot(sentences, a, b):
    """The cosine of two rows' unit vectors summed in whatever order vectorises: it differs
    from :func:`_dot`'s by at most 2 (dim - 1) 2**-53 (each float32 product is exact in
    float64), under 1e-13 for any encoder's width, so ``DOT_MARGIN`` settles most pairs."""
    dot = 0.0
    for j in range(sentences.shape[1]):
        dot += np.float64(sentences[a, j]) * np.float64(sentences[b, j])
    return dot


@numba.njit(nogil=True, cache=True)
def _dot(sentences, a, b):
    """The cosine in the reference order, one term after another: the bits a decision near
    the threshold rests on, the same on every machine and at any SIMD width."""
    dot = 0.0
    for j in range(sentences.shape[1]):
        dot += np.float64(sentences[a, j]) * np.float64(sentences[b, j])
    return dot


@numba.njit(nogil=True, cache=True)
def _describes(sentences, decoy, image_rows, start, end, threshold):
    """Whether ``decoy``'s sentence vector reaches ``threshold`` with any of the image's
    captions ``image_rows[start:end]``; never without vectors (no validity model). The
    quick cosine decides unless it lies within ``DOT_MARGIN`` of the threshold, where the
    reference one does: the same answers, at a sixth of the cost."""
    if sentences.shape[0] == 0:
        return False
    for k in range(start, end):
        caption = image_rows[k]
        dot = _quick_dot(sentences, decoy, caption)
        if dot >= threshold + DOT_MARGIN:
            return True
        if dot > threshold - DOT_MARGIN and _dot(sentences, decoy, caption) >= threshold:
            return True
    return False


@numba.njit(nogil=True, cache=True)
def _violation(
    decoy, target, sim_pv, image_of, image_rows, image_offsets, text_id, own_closeness,
    ids, ranks, offsets, lengths, sentences, limit, threshold, own_caption_rule, scratch,
):  # fmt: skip
    image = image_of[target]
    if image_of[decoy] == image:
        return SAME_IMAGE
    start, end = image_offsets[image], image_offsets[image + 1]
    for k in range(start, end):
        if text_id[image_rows[k]] == text_id[decoy]:
            return COPIES
    for k in range(start, end):
        caption = image_rows[k]
        load_reference(ids, offsets, caption, scratch)
        close = loaded_surface_close(ids, ranks, offsets, decoy, lengths[decoy], scratch, limit)
        unload_reference(ids, offsets, caption, scratch)
        if close:
            return SURFACE
    if _describes(sentences, decoy, image_rows, start, end, threshold):
        return DESCRIBES
    if own_caption_rule and sim_pv >= own_closeness[target]:  # NaN (a lone caption): passes
        return CLOSER
    return VALID


@numba.njit(nogil=True, cache=True)
def _choose_kernel(
    targets, candidates, sim_pv, preference, need, image_of, image_rows, image_offsets,
    text_id, own_closeness, ids, ranks, offsets, lengths, sentences, limit, threshold,
    own_caption_rule, scratch, chosen, rejected,
):  # fmt: skip
    for b in range(targets.shape[0]):
        count = 0
        for position in preference[b]:
            if position < 0 or count == need:
                break
            decoy = candidates[b, position]
            reason = _violation(
                decoy, targets[b], sim_pv[b, position], image_of, image_rows, image_offsets,
                text_id, own_closeness, ids, ranks, offsets, lengths, sentences, limit,
                threshold, own_caption_rule, scratch,
            )  # fmt: skip
            if reason == VALID:
                for k in range(count):
                    if text_id[candidates[b, chosen[b, k]]] == text_id[decoy]:
                        reason = REPEATS
            if reason != VALID:
                rejected[reason] += 1
                continue
            chosen[b, count] = position
            count += 1


def _corpus_arrays(corpus: Corpus) -> tuple:
    table = corpus.ngrams
    return (
        corpus.image_of,
        corpus.image_rows,
        corpus.image_offsets,
        corpus.text_id,
        corpus.own_closeness,
        table.ids,
        table.ranks,
        table.offsets,
        table.lengths,
        corpus.sentences,
    )


def _rule_arguments(corpus: Corpus, rules: ValidityRules) -> tuple:
    """What every kernel reads to apply the rules: the corpus's arrays, then the rules'."""
    return (*_corpus_arrays(corpus), rules.limit, rules.threshold, rules.own_caption_rule)


def _pair_arrays(targets: np.ndarray, candidates: np.ndarray, sim_pv: np.ndarray) -> tuple:
    """The (target, candidate) pairs as the kernels read them: contiguous, in their types."""
    return (
        np.ascontiguousarray(targets, dtype=np.int64),
        np.ascontiguousarray(candidates, dtype=np.int64),
        np.ascontiguousarray(sim_pv, dtype=np.float64),
    )


def choose_valid(
    corpus: Corpus,
    targets: np.ndarray,
    candidates: np.ndarray,
    sim_pv: np.ndarray,
    preference: np.ndarray,
    need: int,
    rules: ValidityRules,
    scratch: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``need`` valid candidates of each target, walking ``preference``.

    ``preference[b]`` lists positions into ``candidates[b]`` (-1 ends the list).
    Returns (chosen positions (B, need), -1 where too few passed; rejections per rule).
    """
    chosen = np.full((len(targets), need), -1, dtype=np.int64)
    rejected = np.zeros(len(RULES), dtype=np.int64)
    _choose_kernel(
        *_pair_arrays(targets, candidates, sim_pv),
        np.ascontiguousarray(preference, dtype=np.int64),
        need,
        *_rule_arguments(corpus, rules),
        scratch,
        chosen,
        rejected,
    )
    return chosen, rejected


@numba.njit(nogil=True, cache=True)
def _block_reasons(
    target, candidates, sim_pv, first, last, image_of, image_rows, image_offsets, text_id,
    own_closeness, ids, ranks, offsets, lengths, sentences, limit, threshold,
    own_caption_rule, scratch, why, reasons,
):  # fmt: skip
    """``reasons[j]``, for the candidates ``first:last`` of one target's row: the first rule
    the pair breaks, the candidate as a decoy of the target's image and then the target as a
    decoy of the candidate's (VALID if none, NONE for -1), as :func:`_violation` both ways
    round gives it. Each n-gram table is loaded once per block, not once per pair: the
    target's image captions (candidates as decoys), then the target itself (as a decoy of
    each candidate's image: :func:`loaded_surface_close` over the target's length).

    Without ``why``, only whether a pair breaks a rule is wanted, not which it breaks
    first: the encoder rule goes before the surface one, as the cheaper, and the one
    that turns away most of a crowded scene's candidates."""
    image = image_of[target]
    start, end = image_offsets[image], image_offsets[image + 1]
    for j in range(first, last):
        decoy = candidates[j]
        reasons[j] = VALID if decoy >= 0 else NONE
        if decoy >= 0 and image_of[decoy] == image:
            reasons[j] = SAME_IMAGE
        for k in range(start, end):
            if reasons[j] == VALID and text_id[image_rows[k]] == text_id[decoy]:
                reasons[j] = COPIES
        if (
            not why
            and reasons[j] == VALID
            and _describes(sentences, decoy, image_rows, start, end, threshold)
        ):
            reasons[j] = DESCRIBES
    for k in range(start, end):
        load_reference(ids, offsets, image_rows[k], scratch)
        for j in range(first, last):
            decoy = candidates[j]
            if reasons[j] == VALID and loaded_surface_close(
                ids, ranks, offsets, decoy, lengths[decoy], scratch, limit
            ):
                reasons[j] = SURFACE
        unload_reference(ids, offsets, image_rows[k], scratch)
    for j in range(first, last):
        if (
            why
            and reasons[j] == VALID
            and _describes(sentences, candidates[j], image_rows, start, end, threshold)
        ):
            reasons[j] = DESCRIBES
        if reasons[j] == VALID and own_caption_rule and sim_pv[j] >= own_closeness[target]:
            reasons[j] = CLOSER
    load_reference(ids, offsets, target, scratch)
    for j in range(first, last):
        if reasons[j] != VALID:
            continue
        decoy = candidates[j]
        other, till = image_offsets[image_of[decoy]], image_offsets[image_of[decoy] + 1]
        for k in range(other, till):
            if reasons[j] == VALID and text_id[image_rows[k]] == text_id[target]:
                reasons[j] = COPIES
        for k in range(other, till):
            if reasons[j] == VALID and loaded_surface_close(
                ids, ranks, offsets, image_rows[k], lengths[target], scratch, limit
            ):
                reasons[j] = SURFACE
        if reasons[j] == VALID and _describes(
            sentences, target, image_rows, other, till, threshold
        ):
            reasons[j] = DESCRIBES
        if reasons[j] == VALID and own_caption_rule and sim_pv[j] >= own_closeness[decoy]:
            reasons[j] = CLOSER
    unload_reference(ids, offsets, target, scratch)


@numba.njit(nogil=True, cache=True)
def _pairs_kernel(
    targets, candidates, sim_pv, image_of, image_rows, image_offsets, text_id, own_closeness,
    ids, ranks, offsets, lengths, sentences, limit, threshold, own_caption_rule, need, scratch,
    allowed, rejected,
):  # fmt: skip
    """:func:`_block_reasons` over each row's candidates. With ``need``, a row stops at the
    block in which it has that many allowed."""
    width = candidates.shape[1]
    reasons = np.empty(width, np.int64)
    for b in range(targets.shape[0]):
        found, first = 0, 0
        while first < width and (need == 0 or found < need):
            last = width if need == 0 else min(width, first + max(need - found, MIN_BLOCK))
            _block_reasons(
                targets[b], candidates[b], sim_pv[b], first, last, image_of, image_rows,
                image_offsets, text_id, own_closeness, ids, ranks, offsets, lengths,
                sentences, limit, threshold, own_caption_rule, scratch, True, reasons,
            )  # fmt: skip
            for j in range(first, last):
                if reasons[j] == VALID:
                    allowed[b, j] = True
                    found += 1
                elif reasons[j] != NONE:
                    rejected[reasons[j]] += 1
            first = last


def pairs_allowed(
    corpus: Corpus,
    targets: np.ndarray,
    candidates: np.ndarray,
    sim_pv: np.ndarray,
    rules: ValidityRules,
    scratch: np.ndarray,
    need: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Whether each (target, candidate) pair may be each other's decoy, both ways round.

    Returns (allowed (B, N) bool, rejections per rule); -1 candidates are not allowed.
    ``need``: a row's candidates after its first ``need`` allowed ones (in a block of at
    least ``MIN_BLOCK``) are left unchecked, not allowed. On real captions nearly every
    near pair is allowed, so closed sets, which keep K of K x depth, check about K a row.
    """
    allowed = np.zeros(candidates.shape, dtype=bool)
    rejected = np.zeros(len(RULES), dtype=np.int64)
    _pairs_kernel(
        *_pair_arrays(targets, candidates, sim_pv),
        *_rule_arguments(corpus, rules),
        need,
        scratch,
        allowed,
        rejected,
    )
    return allowed, rejected


@numba.njit(nogil=True, cache=True)
def _mutually_valid(a, b, image_of, image_rows, image_offsets, text_id, own_closeness, ids,
                    ranks, offsets, lengths, sentences, limit, threshold, own_caption_rule,
                    scratch):  # fmt: skip
    """Whether two candidates may share a set, on every rule but the own-caption rule's
    cosine (unknown here; :func:`mutual_allowed` checks it where the sets are chosen)."""
    arrays = (image_of, image_rows, image_offsets, text_id, own_closeness, ids, ranks,
              offsets, lengths, sentences, limit, threshold, own_caption_rule, scratch)  # fmt: skip
    return _violation(a, b, np.nan, *arrays) == VALID and _violation(b, a, np.nan, *arrays) == VALID


@numba.njit(nogil=True, cache=True)
def _group_kernel(
    targets, candidates, sim_pv, known, need, group, image_of, image_rows, image_offsets,
    text_id, own_closeness, ids, ranks, offsets, lengths, sentences, limit, threshold,
    own_caption_rule, scratch, allowed, members,
):  # fmt: skip
    """The walk checks ``MIN_BLOCK`` candidates at a time (:func:`_block_reasons`), so each
    n-gram table loads once a block; it stops where one at a time would, and what it
    checked past there is not allowed. Only whether each pair is allowed is asked (the
    allowed pairs' stage counted the rejections), so the cheaper rule goes first."""
    arrays = (image_of, image_rows, image_offsets, text_id, own_closeness, ids, ranks,
              offsets, lengths, sentences, limit, threshold, own_caption_rule, scratch)  # fmt: skip
    width = candidates.shape[1]
    reasons = np.empty(width, np.int64)
    for b in range(targets.shape[0]):
        found, count, checked = 0, 0, 0
        for j in range(width):
            if found >= need and count >= group:
                break
            decoy = candidates[b, j]
            if decoy < 0:
                continue
            if not known[b, j]:
                if j >= checked:
                    checked = min(width, j + MIN_BLOCK)
                    _block_reasons(
                        targets[b],
                        candidates[b],
                        sim_pv[b],
                        j,
                        checked,
                        *arrays,
                        False,
                        reasons,
                    )
                if reasons[j] != VALID:
                    continue
            allowed[b, j] = True
            found += 1
            fits = count < group
            for q in range(count if fits else 0):
                fits = fits and _mutually_valid(decoy, candidates[b, members[b, q]], *arrays)
            if fits:
                members[b, count] = j
                count += 1


def allowed_group(
    corpus: Corpus,
    targets: np.ndarray,
    candidates: np.ndarray,
    sim_pv: np.ndarray,
    known: np.ndarray,
    rules: ValidityRules,
    scratch: np.ndarray,
    *,
    need: int,
    group: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's candidates walked in order until ``need`` are allowed with the target
    (:func:`pairs_allowed`; ``known`` ones are, unchecked) and ``group`` of those allowed
    are also allowed with each other: the first that are, greedily.

    Where a caption's nearest are all one scene, its nearest allowed candidates are often
    captions of one other scene, which describe each other: no set forms among them, and
    the group shows whether one can (a group of four and the target is one).

    Returns (allowed (B, N) bool, members (B, group) positions, -1 where fewer were found).
    Rejections are not counted: the candidates were counted where their pairs were first
    checked (:func:`pairs_allowed`), and the walks check many again.
    """
    allowed = np.zeros(candidates.shape, dtype=bool)
    members = np.full((len(targets), group), -1, dtype=np.int64)
    _group_kernel(
        *_pair_arrays(targets, candidates, sim_pv),
        np.ascontiguousarray(known, dtype=np.bool_),
        need,
        group,
        *_rule_arguments(corpus, rules),
        scratch,
        allowed,
        members,
    )
    return allowed, members


@numba.njit(nogil=True, cache=True)
def _mutual_kernel(
    nodes, sim_pv, image_of, image_rows, image_offsets, text_id, own_closeness,
    ids, ranks, offsets, lengths, sentences, limit, threshold, own_caption_rule, scratch,
    allowed,
):  # fmt: skip
    images = len(image_offsets) - 1
    known = {}  # decoy * images + image -> the decoy may not be a decoy of the image's captions
    width = nodes.shape[1]
    rows = np.empty(width, np.int64)
    invalid = np.zeros((width, width), np.bool_)  # [d, t]: d may not be a decoy of t
    waiting = np.empty(width, np.int64)  # the d whose answer for t's image is not known yet
    refused = np.empty(width, np.bool_)
    for b in range(nodes.shape[0]):
        if len(known) > MAX_KNOWN:
            known.clear()
        n = 0
        for node in nodes[b]:
            if node >= 0:
                rows[n] = node
                n += 1
        for t in range(n):
            image = image_of[rows[t]]
            pending = 0
            for d in range(n):
                key = rows[d] * images + image
                if key in known:
                    invalid[d, t] = known[key]
                else:
                    waiting[pending] = d
                    refused[pending] = image_of[rows[d]] == image
                    pending += 1
            for w in range(pending):  # the encoder rule first: it is the cheaper, and refuses most
                if not refused[w] and _describes(
                    sentences,
                    rows[waiting[w]],
                    image_rows,
                    image_offsets[image],
                    image_offsets[image + 1],
                    threshold,
                ):
                    refused[w] = True
            for k in range(image_offsets[image], image_offsets[image + 1] if pending else 0):
                caption = image_rows[k]
                load_reference(ids, offsets, caption, scratch)
                for w in range(pending):
                    decoy = rows[waiting[w]]
                    if not refused[w] and (
                        text_id[decoy] == text_id[caption]
                        or loaded_surface_close(
                            ids, ranks, offsets, decoy, lengths[decoy], scratch, limit
                        )
                    ):
                        refused[w] = True
                unload_reference(ids, offsets, caption, scratch)
            for w in range(pending):
                invalid[waiting[w], t] = refused[w]
                known[rows[waiting[w]] * images + image] = refused[w]
        for a in range(n):
            for c in range(a + 1, n):
                ok = not invalid[a, c] and not invalid[c, a]
                if ok and own_caption_rule:  # NaN (a lone caption): passes
                    ok = not (sim_pv[b, a, c] >= own_closeness[rows[a]]) and not (
                        sim_pv[b, a, c] >= own_closeness[rows[c]]
                    )
                allowed[b, a, c] = allowed[b, c, a] = ok


def mutual_allowed(
    corpus: Corpus,
    nodes: np.ndarray,
    rules: ValidityRules,
    scratch: np.ndarray,
    sim_pv: np.ndarray | None = None,
) -> np.ndarray:
    """Which pairs among each row's captions may be each other's decoy: :func:`pairs_allowed`
    on every pair of each of many small sets (a leftover and its candidates).

    Whether a caption may be a decoy of an image is worked out once for the whole batch
    (up to ``MAX_KNOWN`` answers): near leftovers share most of their candidates, and a
    124k-image run's part asked for each answer 2.8 times on average.

    ``nodes``: (B, n) corpus rows, -1 padded. ``sim_pv``: float32 (B, n, n) cosines among
    each row's captions, needed with the own-caption rule only. Returns bool (B, n, n):
    row b's pairs among its captions (in order, -1s dropped) first; symmetric, False on
    the diagonal.
    """
    allowed = np.zeros((*nodes.shape, nodes.shape[1]), dtype=bool)
    if sim_pv is None and rules.own_caption_rule:
        raise ValueError("the own-caption rule needs the cosines among each row's captions")
    _mutual_kernel(
        np.ascontiguousarray(nodes, dtype=np.int64),
        np.zeros((0, 0, 0), np.float32) if sim_pv is None else np.ascontiguousarray(sim_pv),
        *_rule_arguments(corpus, rules),
        scratch,
        allowed,
    )
    return allowed


class RejectionCounters:
    """Beam counters ``validity/<rule>``, one per rule."""

    def __init__(self):
        self._counters = [Metrics.counter("validity", rule) for rule in RULES]

    def add(self, rejected: np.ndarray) -> None:
        for counter, count in zip(self._counters, rejected.tolist(), strict=True):
            if count:
                counter.inc(count)
