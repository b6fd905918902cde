"""benchmarks/encoder.py with the tiny random encoder, so that it cannot rot unnoticed: its
rows, and that batching alone leaves the vectors as they were."""

import numpy as np

from benchmarks import encoder
from tests.support.versions import COCO_VAL2017, made_tiny_encoder


def test_the_encoder_benchmark_prints_a_row_a_batch_size_and_one_a_family(capsys):
    argv = ["--model", made_tiny_encoder(), "--count", "300", "--batch_sizes", "32,8"]
    assert encoder.main([*argv, "--repeats", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "300 captions, 1 thread, best of 1 turns" in lines[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[4:]]
    assert [row[0] for row in rows] == [
        "sentence_transformers, batches of 32",
        "sentence_transformers, batches of 8",
        "sentence_transformers_int8, batches of 32",
    ]
    assert rows[0][2] == "1.00x" and all(float(row[1].replace(",", "")) > 0 for row in rows)
    assert [row[3:] for row in rows[:2]] == [["1.0000", "0.000%"]] * 2


def test_agreement_is_the_least_row_cosine_and_the_share_of_pairs_that_cross():
    baseline = np.eye(4, dtype=np.float32)  # pairs: rows 0-1 against rows 2-3, all at 0
    moved = baseline.copy()
    moved[0] = [0.8, 0, 0.6, 0]  # cosine 0.8 to its own; 0.6 to row 2, over 0.5
    least, crossed = encoder.agreement(moved, baseline, 0.5)
    assert least == np.float32(0.8) and crossed == 0.25
    assert encoder.agreement(moved, baseline, 0.7)[1] == 0.0


def test_captions_are_distinct_texts_in_file_order():
    texts = encoder.caption_texts(COCO_VAL2017, 50)
    assert len(texts) == len(set(texts)) == 50
