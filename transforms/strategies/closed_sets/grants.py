"""Room and grants: how border sets chosen in parallel keep each caption within
``--set_memberships``.

A caption's room is the set of membership numbers it may still take, as bits (bit n - 1:
number n). Each round of the border pass, every part hears which regions ask for its
captions (:class:`Requests`: each leftover for itself and its candidates) and grants each
requested caption's free numbers to at most two regions (:func:`granted`, :func:`shared`;
``border._Grant``): no two groups can give out the same number, so the regions choose at
once. What a round gives out comes back to each caption's part as a new record of its room
(``CAPACITY``, :func:`numbered`).
"""

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from transforms.strategies.closed_sets.leftovers import Keyed
from transforms.strategies.closed_sets.parts import PartKey

CAPACITY = "capacity"  # room for border sets that is not the default, keyed by part


class Room(NamedTuple):
    """Membership numbers a caption may still take in border sets, as bits (bit n - 1:
    number n), where that is not the default: captions a part filled, and those earlier
    border rounds used. Bits, not a count, so that two regions can share a caption's room."""

    rows: np.ndarray  # int64 corpus rows, sorted
    free: np.ndarray  # int64 bit masks


class Grant(NamedTuple):
    """Captions one region may use this round: ``share`` of each one's free numbers."""

    rows: np.ndarray  # int64 corpus rows, sorted
    share: np.ndarray  # int64 bit masks: the numbers this region may give out
    free: np.ndarray  # int64 bit masks: all the caption's free numbers, however shared


class Requests(NamedTuple):
    """A region's leftovers ask for captions of one part: each its own, and its candidates."""

    rows: np.ndarray  # int64 corpus rows
    region: int  # the node of the part tree whose group asks
    own: np.ndarray  # bool: the row is the asking leftover itself


def requests_of(keyed: Keyed) -> Iterator[tuple[PartKey, Requests]]:
    """A region's leftovers -> what they ask of each part: themselves and their candidates."""
    (split, region, directory), leftovers = keyed
    nodes = leftovers.graphs.nodes
    own = np.zeros(nodes.shape, bool)
    own[:, 0] = True
    present = nodes >= 0
    rows, parts, own = nodes[present], leftovers.parts[present], own[present]
    for part in np.unique(parts):
        mine = parts == part
        yield (split, int(part), directory), Requests(rows[mine], region, own[mine])


def granted(rows: np.ndarray, regions: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, ...]:
    """Which regions each requested row goes to: first a leftover's own region, else the
    region that asked for it most (ties: the lowest node); second the next in that order,
    -1 if none. Returns (rows, first, second), rows sorted.

    >>> [a.tolist() for a in granted(np.array([4, 4, 4, 6, 6]), np.array([1, 2, 2, 3, 1]),
    ...                               np.array([True, False, False, False, False]))]
    [[4, 6], [1, 1], [2, 3]]
    """
    pairs, inverse, counts = np.unique(
        np.stack([rows, regions]), axis=1, return_inverse=True, return_counts=True
    )
    mine = np.zeros(pairs.shape[1], bool)
    np.logical_or.at(mine, inverse.ravel(), own)
    order = np.lexsort((pairs[1], -counts, ~mine, pairs[0]))
    row, region = pairs[0, order], pairs[1, order]
    first = np.ones(len(order), bool)
    first[1:] = row[1:] != row[:-1]
    starts = np.flatnonzero(first)
    has_second = np.append(starts[1:], len(order)) - starts > 1
    second = np.where(has_second, region[np.minimum(starts + 1, len(order) - 1)], -1)
    return row[starts], region[starts], second


def bits(masks: np.ndarray, width: int) -> np.ndarray:
    """How many numbers each mask holds.

    >>> bits(np.array([0, 5, 7]), 3).tolist()
    [0, 2, 3]
    """
    return sum((masks >> n) & 1 for n in range(width))


def shared(free: np.ndarray, split: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first's share, second's) of each free mask: where ``split``, the second region gets
    the highest free number and the first the rest; else the first gets them all.

    >>> [a.tolist() for a in shared(np.array([7, 4, 6]), np.array([True, True, False]))]
    [[3, 4, 6], [4, 0, 0]]
    """
    highest = np.where(free > 0, 1 << np.floor(np.log2(np.maximum(free, 1))).astype(np.int64), 0)
    split = split & (free != highest)  # a single free number is not shared
    return np.where(split, free & ~highest, free), np.where(split, highest, 0)


def every_number(max_memberships: int) -> int:
    """The mask of membership numbers 1 .. ``max_memberships``: a leftover's room while it
    is in no set.

    >>> every_number(3)
    7
    """
    return (1 << max_memberships) - 1


def merged_room(records: list[Room]) -> Room:
    """Records of room as one, sorted by row; a row with several keeps the numbers free in
    all of them (each round's record clears the numbers it gave out).

    >>> merged_room([Room(np.array([5, 2]), np.array([6, 7])), Room(np.array([5]), np.array([3]))])
    Room(rows=array([2, 5]), free=array([7, 2]))
    """
    if not records:
        return Room(np.zeros(0, np.int64), np.zeros(0, np.int64))
    rows, at = np.unique(np.concatenate([r.rows for r in records]), return_inverse=True)
    free = np.full(len(rows), -1, np.int64)
    np.bitwise_and.at(free, at, np.concatenate([r.free for r in records]))
    return Room(rows, free)


def looked_up(rows: np.ndarray, values: np.ndarray, ids: np.ndarray, default: np.ndarray):
    """``values`` of ``ids`` found in ``rows`` (sorted), ``default`` elsewhere.

    >>> looked_up(np.array([2, 5]), np.array([0, 1]), np.array([5, 3]), np.array([9, 9])).tolist()
    [1, 9]
    """
    if not len(rows):
        return default
    at = np.searchsorted(rows, ids).clip(max=len(rows) - 1)
    return np.where(rows[at] == ids, values[at], default)


def numbered(sets: np.ndarray, grant: Grant) -> tuple[np.ndarray, Room]:
    """Each set member's membership number (the lowest of its share not yet given out, set
    by set), and the room its caption has left: its free numbers less those given here.

    >>> grant = Grant(np.array([1, 2]), np.array([3, 4]), np.array([7, 4]))
    >>> counts, room = numbered(np.array([[1], [1]]), grant)
    >>> counts.tolist(), room
    ([[1], [2]], Room(rows=array([1]), free=array([4])))
    """
    at = np.searchsorted(grant.rows, sets)
    share = grant.share.copy()
    counts = np.zeros(sets.shape, np.int64)
    for index in np.ndindex(sets.shape):
        lowest = share[at[index]] & -share[at[index]]
        counts[index] = int(lowest).bit_length()
        share[at[index]] &= ~lowest
    used = np.unique(at)
    given = grant.share[used] & ~share[used]
    return counts, Room(grant.rows[used], grant.free[used] & ~given)
