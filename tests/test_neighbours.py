from collections import Counter

import numpy as np

from transforms.corpus.index import IndexConfig, build_index
from transforms.corpus.neighbours import make_pool, search
from transforms.corpus.store import make_corpus
from transforms.corpus.surface import encode_ngrams
from transforms.strategies.random_decoys import draw_others


def _corpus(images, splits=None, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(len(images), dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    n = len(images)
    captions = {
        "caption_id": [str(i) for i in range(n)],
        "image_id": [str(i) for i in images],
        "example_id": [f"{image}_0" for image in images],
        "text": ["a dog"] * n,
        "file_name": [f"{image}.jpg" for image in images],
        "url": [""] * n,
        "split": splits or ["train"] * n,
        "original": ["A dog."] * n,
    }
    return make_corpus(captions, vectors, encode_ngrams([("a", "dog")] * n))


def _pool(corpus, rows):
    exact = IndexConfig(exact_limit=len(rows), nlist=0, nprobe=1, scan=1, neighbours=1, seed=0)
    return make_pool(corpus, rows, build_index(corpus.embeddings[rows], exact))


def test_top_n_of_other_images_equals_brute_force():
    images = np.repeat(np.arange(40), 5)  # 200 captions, 5 per image
    corpus = _corpus(images.tolist())
    pool = _pool(corpus, np.arange(len(images)))
    targets = np.arange(0, 200, 7)
    candidates, sim_pv = search(corpus, pool, targets, neighbours=30)
    assert candidates.shape == (len(targets), 30)
    for b, target in enumerate(targets):
        cosines = corpus.embeddings @ corpus.embeddings[target]
        others = np.flatnonzero(images != images[target])
        expected = others[np.argsort(-cosines[others], kind="stable")[:30]]
        assert candidates[b].tolist() == expected.tolist()
        np.testing.assert_allclose(sim_pv[b], cosines[expected], atol=1e-6)


def test_exactly_n_when_the_pool_has_exactly_n_captions_of_other_images():
    images = [0, 0, 0, 1, 2, 3, 4]  # image 0's captions have 4 others
    corpus = _corpus(images)
    candidates, _ = search(corpus, _pool(corpus, np.arange(7)), np.array([0, 1]), 4)
    assert sorted(candidates[0].tolist()) == [3, 4, 5, 6]
    assert sorted(candidates[1].tolist()) == [3, 4, 5, 6]


def test_a_too_small_pool_pads_with_minus_one():
    corpus = _corpus([0, 0, 1, 2])
    candidates, sim_pv = search(corpus, _pool(corpus, np.arange(4)), np.array([0]), 5)
    assert sorted(candidates[0, :2].tolist()) == [2, 3]
    assert candidates[0, 2:].tolist() == [-1, -1, -1]
    assert sim_pv[0, 2:].tolist() == [0.0, 0.0, 0.0]


def test_split_pool_only_returns_rows_of_that_pool():
    images = list(range(20))
    splits = ["train"] * 10 + ["dev"] * 10
    corpus = _corpus(images, splits)
    dev_rows = np.arange(10, 20)
    candidates, _ = search(corpus, _pool(corpus, dev_rows), np.array([12, 15]), 9)
    assert set(candidates.ravel().tolist()) <= set(dev_rows.tolist())
    assert 12 not in candidates[0] and 15 not in candidates[1]


def test_random_draws_skip_the_targets_image_and_cover_the_rest_uniformly():
    images = np.repeat(np.arange(30), 2)  # 60 captions, 2 per image
    corpus = _corpus(images.tolist())
    pool = _pool(corpus, np.arange(60))
    eligible = set(range(2, 60))
    seen = Counter()
    for draw_number in range(2000):
        rng = np.random.default_rng(draw_number)
        drawn = draw_others(corpus, pool, 0, 4, rng)
        assert len(drawn) == len(set(drawn)) == 4
        assert set(drawn) <= eligible
        seen.update(drawn)
    assert set(seen) == eligible
    assert max(seen.values()) / min(seen.values()) < 1.6  # 8000 draws over 58 rows


def test_random_draws_give_up_when_too_few_captions_are_of_other_images():
    corpus = _corpus([0, 0, 1, 0])
    drawn = draw_others(corpus, _pool(corpus, np.arange(4)), 0, 4, np.random.default_rng(0))
    assert drawn == [2]
