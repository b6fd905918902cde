import pickle
import re

import numpy as np
import pytest

from transforms.corpus.paragraph_vectors import (
    CORPUS_DIGEST,
    PVConfig,
    check_model_corpus,
    corpus_digest,
    load_model,
    save_model,
    train_paragraph_vectors,
    unit_vectors,
)
from transforms.corpus.synthetic import images
from transforms.errors import InputError

CONFIG = PVConfig(dim=32, epochs=5, min_count=1, hs=1, negative=0, seed=11, workers=1)


def _documents():
    return [c.lower().rstrip(".").split() for _, caps in images(0, 200) for c in caps]


def test_single_worker_training_is_reproducible_for_a_seed():
    first = unit_vectors(train_paragraph_vectors(_documents(), CONFIG))
    second = unit_vectors(train_paragraph_vectors(_documents(), CONFIG))
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-5)
    assert first.shape == (1000, 32)


def test_captions_of_one_image_are_closer_than_captions_of_others():
    config = PVConfig(dim=32, epochs=30, min_count=1, hs=1, negative=0, seed=0, workers=1)
    vectors = unit_vectors(train_paragraph_vectors(_documents(), config))
    same = np.mean([vectors[i] @ vectors[i + 1] for i in range(0, 1000, 5)])
    other = np.mean([vectors[i] @ vectors[(i + 500) % 1000] for i in range(0, 1000, 5)])
    assert same > other + 0.1


def test_a_reused_model_must_carry_the_checksum_of_exactly_these_captions(tmp_path):
    documents = _documents()[:50]
    ids = [str(row) for row in range(len(documents))]
    digest = corpus_digest(ids, documents)
    model = train_paragraph_vectors(documents, CONFIG)
    setattr(model, CORPUS_DIGEST, digest)  # as pipelines.generate and optimize stamp theirs
    stamped = str(tmp_path / "stamped.model")
    save_model(model, stamped)
    check_model_corpus(load_model(stamped), digest, stamped)

    reworded = [*documents[:-1], ["a", "purple", "giraffe"]]  # as many captions, one changed
    with pytest.raises(
        InputError, match=re.escape(f"{stamped}: the model was trained on other captions")
    ):
        check_model_corpus(load_model(stamped), corpus_digest(ids, reworded), stamped)
    reordered = corpus_digest(ids[::-1], documents[::-1])
    with pytest.raises(InputError, match="other captions \\(or in another order\\)"):
        check_model_corpus(load_model(stamped), reordered, stamped)

    plain = str(tmp_path / "gensim.model")
    train_paragraph_vectors(documents, CONFIG).save(plain)  # gensim's own save: no stamp
    with pytest.raises(InputError, match=re.escape(f"{plain}: the model carries no checksum")):
        check_model_corpus(load_model(plain), digest, plain)


def test_a_file_that_is_no_model_is_an_input_error_naming_it(tmp_path):
    model = tmp_path / "good.model"
    save_model(train_paragraph_vectors(_documents()[:50], CONFIG), str(model))
    data = model.read_bytes()
    assert load_model(str(model)).dv.vectors.shape[0] == 50
    for name, content in [
        ("notes.model", b"garbage\n"),  # another file given as --pv_model
        ("cut.model", data[: len(data) // 2]),  # a truncated copy
        ("list.model", pickle.dumps([1, 2])),  # a pickle, of something else
    ]:
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(InputError, match=re.escape(f"{path}: not a paragraph-vector model")):
            load_model(str(path))
