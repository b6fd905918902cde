import apache_beam as beam
from apache_beam.testing.util import assert_that

from schemas.records import Caption
from tests.support.local import local_pipeline
from transforms.corpus.split import AssignSplits, held_out_splits, image_key


def test_image_key_is_stable_and_seeded():
    assert image_key(0, "139") == image_key(0, "139")
    assert image_key(0, "139") != image_key(1, "139")
    assert 0 <= image_key(0, "139") < 2**64


def _splits(image_ids, seed=0, n_dev=3, n_test=2):
    keys = sorted((image_key(seed, i), i) for i in image_ids)[: n_dev + n_test]
    held_out = held_out_splits(keys, n_dev, n_test)
    return {i: held_out.get(i, "train") for i in image_ids}


def test_sizes_and_order_of_keys():
    splits = _splits([str(i) for i in range(20)])
    assert sorted(splits.values()).count("dev") == 3
    assert sorted(splits.values()).count("test") == 2
    ranked = sorted(splits, key=lambda i: image_key(0, i))
    assert [splits[i] for i in ranked[:5]] == ["dev"] * 3 + ["test"] * 2


def test_adding_images_moves_only_images_behind_new_smaller_keys():
    before = _splits([str(i) for i in range(50)])
    after = _splits([str(i) for i in range(80)])
    new_keys = sorted(image_key(0, str(i)) for i in range(50, 80))
    for image_id, split in before.items():
        if after[image_id] != split:
            assert any(key < image_key(0, image_id) for key in new_keys)
    assert sum(after[i] != before[i] for i in before) < 5


def test_composite_assigns_every_caption_of_an_image_to_one_split():
    captions = [
        Caption(str(10 * i + k), str(i), f"{i}_{k}", "a dog", f"{i}.jpg", "")
        for i in range(30)
        for k in range(3)
    ]

    def check(result):
        by_image = {}
        for caption in result:
            by_image.setdefault(caption.image_id, set()).add(caption.split)
        assert all(len(splits) == 1 for splits in by_image.values())
        counts = [s for splits in by_image.values() for s in splits]
        assert (counts.count("dev"), counts.count("test"), counts.count("train")) == (4, 5, 21)

    with local_pipeline() as pipeline:
        result = pipeline | beam.Create(captions) | AssignSplits(seed=3, n_dev=4, n_test=5)
        assert_that(result, check)
