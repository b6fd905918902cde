"""Precision and recall of the chunker against hand-labelled captions.

The labels are JSON lines ``{"caption_id", "person": [chunk, ...], "scene":
[chunk, ...]}`` whose chunks are token strings of the caption normalised by
``normalize_caption`` (tests/data/chunks_val2017.md has the definitions); the
captions themselves are read from the COCO file they come from. Two measures:

- exact: a predicted chunk is right when a labelled chunk of its caption has
  its kind and its token string (matched as multisets, so a chunk labelled
  once counts once); precision over predicted chunks, recall over labelled ones.
- head: a predicted chunk is right when its head token lies inside a labelled
  chunk of the same kind (the head is right, the span may differ): what the
  forced-choice tasks' "same head word" rules depend on.

python -m transforms.english.evaluate tests/data/chunks_val2017.jsonl \
    ../shared/data/coco/captions_val2017.json
"""

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from transforms.corpus.normalize import normalize_caption
from transforms.english.chunker import KINDS, chunk, chunk_text
from transforms.errors import InputError
from transforms.files import parse_json, read_json


class Labelled(NamedTuple):
    caption_id: str
    chunks: dict[str, list[str]]  # kind -> labelled chunk strings


class Scores(NamedTuple):
    predicted: int
    labelled: int
    exact: int  # predicted chunks equal to a labelled one
    head: int  # predicted chunks whose head is inside a labelled one

    @property
    def precision(self) -> float:
        return self.exact / self.predicted if self.predicted else float("nan")

    @property
    def recall(self) -> float:
        return self.exact / self.labelled if self.labelled else float("nan")

    @property
    def head_precision(self) -> float:
        return self.head / self.predicted if self.predicted else float("nan")


def read_labels(path: str) -> list[Labelled]:
    """The labelled captions of a JSON-lines file; a malformed line names the file and line."""
    labelled = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = parse_json(f"{path}: line {number}", line)
                chunks = {kind: [str(text) for text in record[kind]] for kind in KINDS}
                labelled.append(Labelled(str(record["caption_id"]), chunks))
            except (KeyError, TypeError) as error:
                raise InputError(
                    f"{path}: line {number}: not a labelled caption ({error})"
                ) from error
    return labelled


def read_captions(path: str) -> dict[str, tuple[str, ...]]:
    """Caption id -> normalised tokens of a COCO captions file."""
    document = read_json(path, dict, "a COCO captions file")
    return {str(a["id"]): normalize_caption(a["caption"]) for a in document["annotations"]}


def spans(tokens: Sequence[str], text: str) -> list[range]:
    """Every token span of ``tokens`` that reads ``text``.

    >>> spans("a man and a man".split(), "a man")
    [range(0, 2), range(3, 5)]
    """
    words = text.split()
    return [
        range(start, start + len(words))
        for start in range(len(tokens) - len(words) + 1)
        if list(tokens[start : start + len(words)]) == words
    ]


def evaluate(labelled: Sequence[Labelled], captions: Mapping[str, Sequence[str]]) -> dict:
    """kind -> Scores of :func:`transforms.english.chunker.chunk` on the labelled captions."""
    totals = {kind: Counter() for kind in KINDS}
    for record in labelled:
        if record.caption_id not in captions:
            raise InputError(f"caption {record.caption_id} is labelled but not in the captions")
        tokens = captions[record.caption_id]
        predicted = chunk(tokens)
        for kind in KINDS:
            gold = Counter(record.chunks[kind])
            found = [c for c in predicted if c.kind == kind]
            inside = [span for text in gold for span in spans(tokens, text)]
            totals[kind]["predicted"] += len(found)
            totals[kind]["labelled"] += sum(gold.values())
            totals[kind]["exact"] += sum(
                (Counter(chunk_text(tokens, c) for c in found) & gold).values()
            )
            totals[kind]["head"] += sum(
                any(tokens.index(c.head, c.start, c.end) in span for span in inside) for c in found
            )
    return {
        kind: Scores(**{field: totals[kind][field] for field in Scores._fields}) for kind in KINDS
    }


def table(scores: Mapping[str, Scores]) -> str:
    """The scores as a markdown table."""
    lines = [
        "| chunks | labelled | predicted | exact precision | exact recall | head precision |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, kind_scores in scores.items():
        lines.append(
            f"| {kind} | {kind_scores.labelled} | {kind_scores.predicted} | "
            f"{kind_scores.precision:.1%} | {kind_scores.recall:.1%} | "
            f"{kind_scores.head_precision:.1%} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(evaluate(read_labels(sys.argv[1]), read_captions(sys.argv[2]))))
