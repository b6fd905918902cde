"""Shuffles whose values go through files, so that only small pieces cross the runner.

Beam's local runners (the DirectRunner's FnApiRunner, the embedded job service of the
portable runner) keep every value of a shuffle in the runner's own process while they
group it. At 3.3M captions that is gigabytes in one process: each caption's allowed edges
(7.5 GB), the leftovers (1.8 GB as files). So a worker holds
the values it would send, packed, and once it holds ``FILE_BYTES`` (and at the end of its
bundle) writes them to one file of its own, each key's values in one run of bytes. What
it sends on is a :class:`Piece` per key: where that key's bytes are. The step after the
shuffle reads its key's pieces (:func:`read_spilled`), and the folder goes once every key
is read (:class:`RemoveAfter`). A retried bundle's file is in no piece that is read, and
goes with the folder.

The same runners also hold whatever a Flatten of several stages' outputs carries (they
always materialise it), so :class:`ThroughFiles` merges PCollections by their pieces, and
:class:`GroupThroughFiles` groups several PCollections' values by key the same way.
"""

import io
import pickle
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from transforms.files import delete_folder, unfenced, write_file
from transforms.memory import packed
from transforms.progress import timed, timed_items

# What a worker holds before it writes a file: 64 MB keeps a worker's share small and the
# files few (a 3.3M-caption run's 1.8 GB of leftovers in about 30 files, not one per key).
FILE_BYTES = 64 << 20
# ThroughFiles cuts each file into this many pieces, which the workers read apart.
SPREAD = 16
# The counters' namespace of the time spent packing, writing and reading spilled values
# (``spill/write_ms``, ``spill/read_ms``), where no stage of their own times them.
SPILL = "spill"


class Piece(NamedTuple):
    """One key's values in one spilled file: ``size`` bytes from ``start``, pickles in a row."""

    path: str
    start: int
    size: int


def folder_under(refs: beam.PCollection, name: str) -> beam.PCollection:
    """The folder ``name`` under the directory of ``refs``' one element (a corpus's)."""
    return refs | f"Folder {name}" >> beam.Map(lambda ref: FileSystems.join(ref.directory, name))


class _Spill(beam.DoFn):
    def __init__(self, name: str, fence: Callable[[], None]):
        self._fence = fence
        self._files = Metrics.counter("spilled", name)
        self._writing = Metrics.counter(SPILL, "write_ms")

    def start_bundle(self):
        self._held: dict[Any, list[bytes]] = {}
        self._bytes, self._folder, self._seconds = 0, None, 0.0

    def process(self, keyed: tuple[Any, Any], folder: str):
        started = time.monotonic()
        key, value = keyed
        data = packed(value)
        self._held.setdefault(key, []).append(data)
        self._bytes += len(data)
        self._folder = folder
        pieces = self._written() if self._bytes >= FILE_BYTES else []
        self._seconds += time.monotonic() - started
        yield from pieces

    def finish_bundle(self):
        started = time.monotonic()
        pieces = self._written()
        self._writing.inc(int((self._seconds + time.monotonic() - started) * 1000))
        for keyed in pieces:
            yield GlobalWindows.windowed_value(keyed)

    def _written(self) -> list[tuple[Any, Piece]]:
        if not self._held:
            return []
        self._fence()  # a run whose claim was taken over writes nothing more
        path = FileSystems.join(self._folder, f"{uuid.uuid4().hex}.pickles")
        runs, pieces, start = [], [], 0
        for key, values in self._held.items():
            run = b"".join(values)
            runs.append(run)
            pieces.append((key, Piece(path, start, len(run))))
            start += len(run)
        write_file(path, b"".join(runs))
        self._files.inc()
        self._held, self._bytes = {}, 0
        return pieces


class SpillToFiles(beam.PTransform):
    """(key, value) -> (key, Piece) of files under the side input ``folder``; the files are
    counted as ``spilled/<name>``. Group the pieces by key and read them with
    :func:`read_spilled`."""

    def __init__(
        self, *, folder: beam.PCollection, name: str, fence: Callable[[], None] = unfenced
    ):
        super().__init__()
        self._folder, self._name, self._fence = folder, name, fence

    def expand(self, keyed):
        return keyed | "Spill" >> beam.ParDo(
            _Spill(self._name, self._fence), folder=beam.pvalue.AsSingleton(self._folder)
        )


def read_spilled(pieces: Iterable[Piece]) -> Iterator[Any]:
    """A key's values from its pieces, in no particular order: sort what needs an order."""
    for piece in pieces:
        with FileSystems.open(piece.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            f.seek(piece.start)
            stream = io.BytesIO(f.read(piece.size))
        while stream.tell() < piece.size:
            yield pickle.load(stream)


def _read_piece(keyed: tuple[int, Piece]) -> Iterator[Any]:
    return timed_items(SPILL, "read", read_spilled([keyed[1]]))


def _read_group(keyed: tuple[Any, Iterable[Piece]]) -> tuple[Any, list]:
    key, pieces = keyed
    with timed(SPILL, "read"):
        return key, list(read_spilled(pieces))


def _as_tuple(pcolls) -> tuple[beam.PCollection, ...]:
    return (pcolls,) if isinstance(pcolls, beam.PCollection) else tuple(pcolls)


class _ThroughFolder(beam.PTransform):
    """What crosses the runner through files under ``folder`` (counted as
    ``spilled/<name>``), which go once all are read."""

    def __init__(
        self, *, folder: beam.PCollection, name: str, fence: Callable[[], None] = unfenced
    ):
        super().__init__()
        self._folder, self._name, self._fence = folder, name, fence

    def _pieces(self, pcolls) -> beam.PCollection:
        """Each input's (key, value) spilled on its own (a Flatten of their values would be
        held in the runner), then their pieces, which are small, flattened."""
        spill = dict(folder=self._folder, name=self._name, fence=self._fence)
        return [
            pcoll | f"Spill{i}" >> SpillToFiles(**spill)
            for i, pcoll in enumerate(_as_tuple(pcolls))
        ] | "Pieces" >> beam.Flatten()


class GroupThroughFiles(_ThroughFolder):
    """(key, value) PCollections, one or a tuple of them -> (key, [its values in all of
    them]) as a GroupByKey of their Flatten would give, in no particular order."""

    def expand(self, pcolls):
        grouped = (
            self._pieces(pcolls) | "Group" >> beam.GroupByKey() | "Read" >> beam.Map(_read_group)
        )
        _ = grouped | "Remove" >> RemoveAfter(self._folder)
        return grouped


class _Dealt(beam.DoFn):
    """Element n -> (n mod SPREAD, element): keys for pieces that spread over workers."""

    def start_bundle(self):
        self._dealt = 0

    def process(self, element):
        self._dealt += 1
        yield self._dealt % SPREAD, element


class ThroughFiles(_ThroughFolder):
    """A PCollection or a tuple of them -> one PCollection of all their elements, in no
    particular order."""

    def expand(self, pcolls):
        dealt = [
            pcoll | f"Deal{i}" >> beam.ParDo(_Dealt()) for i, pcoll in enumerate(_as_tuple(pcolls))
        ]
        elements = (
            self._pieces(dealt) | "Spread" >> beam.Reshuffle() | "Read" >> beam.FlatMap(_read_piece)
        )
        _ = elements | "Remove" >> RemoveAfter(self._folder)
        return elements


class RemoveAfter(beam.PTransform):
    """Once every element of the input is made (the step that read the pieces), deletes
    ``folder`` (a PCollection of the one path).

    The input waits as a side input, as Java's ``Wait.on`` has its signal wait: a runner
    completes a side input's stage before any element reads it. It is emptied first, so no
    value is materialised, and it costs two steps where a count to wait on cost six or
    more (a combine with its default): 86 of a small closed-sets run's 350.
    """

    def __init__(self, folder: beam.PCollection):
        super().__init__()
        self._folder = folder

    def expand(self, done):
        made = done | "Nothing" >> beam.FlatMap(lambda _element: ())
        return self._folder | "Remove" >> beam.Map(_delete_after, beam.pvalue.AsIter(made))


def _delete_after(folder: str, _made: Iterable) -> None:
    delete_folder(folder)
