"""The corpus's row order and dense ids, which every later stage indexes by."""

import pickle

import numpy as np
import pyarrow as pa
import pytest

from transforms.corpus import store
from transforms.corpus.store import TextColumn, caption_id_order, dense_ids, own_closeness
from transforms.errors import InputError

LETTERS = [*"ab zé中😀\u00a0", "", "ab", "a b", "Ab"]


def test_dense_ids_number_the_distinct_values_as_numpy_sorts_them():
    rng = np.random.default_rng(0)
    values = ["".join(rng.choice(LETTERS, size=rng.integers(0, 4))) for _ in range(3000)]
    _, expected = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
    assert dense_ids(values).tolist() == expected.tolist()


def test_caption_id_order_does_not_depend_on_the_order_captions_arrive_in():
    ids = ["10", "7", "07", "b", "a", "007", "100"]
    expected = ["007", "07", "7", "10", "100", "a", "b"]
    rng = np.random.default_rng(1)
    for _ in range(20):
        arrived = list(rng.permutation(ids))
        assert [arrived[row] for row in caption_id_order(arrived, arrived)] == expected


def test_a_caption_id_twice_is_refused_naming_both_images():
    with pytest.raises(InputError, match=r"caption id 7 occurs twice \(images 1 and 2\)"):
        caption_id_order(["7", "3", "7"], ["1", "0", "2"])


def test_own_closeness_by_chunks_is_its_definition_and_nan_for_a_lone_caption(monkeypatch):
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(1000, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    image_of = rng.integers(0, 300, size=1000)
    whole = own_closeness(vectors, image_of)
    monkeypatch.setattr(store, "CLOSENESS_CHUNK", 97)
    np.testing.assert_array_equal(own_closeness(vectors, image_of), whole)
    sums = np.zeros((300, 16))
    np.add.at(sums, image_of, vectors)
    counts = np.bincount(image_of, minlength=300)[image_of]
    lone = counts == 1
    shared = np.einsum("rd,rd->r", sums[image_of], vectors)[~lone] - 1
    np.testing.assert_allclose(whole[~lone], shared / (counts[~lone] - 1), rtol=1e-5, atol=1e-6)
    assert lone.sum() > 10 and np.isnan(whole[lone]).all()  # never +-inf: the rule skips NaN


@pytest.mark.parametrize("kind", ["list", "chunked", "sliced", "large"])
def test_a_text_column_reads_back_every_value_however_arrow_holds_it(kind, monkeypatch):
    rng = np.random.default_rng(3)
    values = ["".join(rng.choice(LETTERS, size=rng.integers(0, 6))) for _ in range(500)]
    given = {
        "list": values,
        "chunked": pa.chunked_array([values[:123], values[123:]]),
        "sliced": pa.array(["x", *values, "y"]).slice(1, len(values)),
        "large": pa.array(values, pa.large_string()),
    }[kind]
    monkeypatch.setattr(store, "ITERATION_CHUNK", 7)
    column = TextColumn(given)
    assert len(column) == len(values)
    assert [column[row] for row in np.arange(len(values))] == values
    assert list(column) == values
    assert list(pickle.loads(pickle.dumps(column))) == values
    assert pa.array(column, pa.string()).to_pylist() == values
