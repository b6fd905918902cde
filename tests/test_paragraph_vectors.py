import numpy as np

from transforms.corpus.paragraph_vectors import PVConfig, train_paragraph_vectors, unit_vectors
from transforms.corpus.synthetic import images

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
