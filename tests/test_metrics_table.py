"""table.txt: every value sits under its own header, whatever the cells' widths."""

import re

from transforms.trainer.metrics import captioning_table


def _cells(line: str) -> list[tuple[int, int]]:
    """(start, end) of each cell: cells are apart by two spaces or more."""
    return [match.span() for match in re.finditer(r"\S+(?: \S+)*", line)]


def _captioner(name: str, size: str, dev: float, test: float | None) -> dict:
    scores = {"ROUGE-L": 0.412, "CIDEr": 0.5}
    row = {
        "model": name,
        "dev": {"accuracy": dev},
        "selection": {"size": size, "lambda_gen": 0.25},
        "captioning": {"dev": scores},
    }
    if test is not None:
        row["test"] = {"accuracy": test}
        row["captioning"]["test"] = {**scores, "CIDEr": 1.25}
    return row


def test_captioning_table_values_line_up_with_their_headers():
    metrics = {
        "models": [
            {"model": "Baseline-LinM", "dev": {"accuracy": 0.3}, "selection": {}},
            _captioner("Vec2seq+FFNN", "1024:1024:512", 0.612, 0.6),
            _captioner("Vec2seq+FFNN (small)", "64:32:16", 0.5, None),
        ]
    }
    header, *rows = captioning_table(metrics).splitlines()
    assert header.split("  ")[0] == "model" and "ROUGE-L test" in header
    assert [row.split("  ")[0].rstrip() for row in rows] == [
        "Vec2seq+FFNN",
        "Vec2seq+FFNN (small)",
    ]
    columns = _cells(header)
    assert len(columns) == 9
    for row in rows:
        cells = _cells(row)
        assert len(cells) == len(columns), row
        assert cells[0][0] == columns[0][0]  # names to the left
        assert [end for _, end in cells[1:]] == [end for _, end in columns[1:]], row
    assert _cells(rows[0])[1] == (columns[1][1] - len("1024:1024:512"), columns[1][1])
    assert rows[1].split()[-4:] == ["0.412", "-", "0.500", "-"]


def test_no_captioning_table_without_a_captioning_model():
    assert captioning_table({"models": [{"model": "FFNN", "selection": {}}]}) == ""
