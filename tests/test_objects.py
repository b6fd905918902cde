import gzip
import json
from collections import Counter, defaultdict

import numpy as np
import pytest

from pipelines import make_corpus
from transforms.corpus.normalize import normalize_caption
from transforms.corpus.synthetic import PLACE_OBJECTS, SUBJECTS
from transforms.english.objects import (
    CATEGORIES,
    CATEGORY_IDS,
    LEXICON,
    caption_objects,
    image_objects,
    object_matrix,
    rank_same_objects,
    read_instances,
    tie_keys,
)
from transforms.errors import InputError


def objects_of(caption: str) -> set[str]:
    return {name for name, category_id in CATEGORY_IDS.items() if category_id in _ids(caption)}


def _ids(caption: str) -> frozenset[int]:
    return caption_objects(normalize_caption(caption))


def test_cocos_80_categories_with_their_ids():
    ids = [category_id for category_id, _, _ in CATEGORIES]
    assert len(ids) == len(set(ids)) == 80
    assert ids == sorted(ids) and ids[0] == 1 and ids[-1] == 90
    assert {12, 26, 29, 30, 45, 66, 68, 69, 71, 83} & set(ids) == set()
    assert {value for values in LEXICON.values() for value in values} <= set(ids)


def test_every_category_name_is_read_but_orange_the_colour():
    missed = {name for name, category_id in CATEGORY_IDS.items() if category_id not in _ids(name)}
    assert missed == {"orange"}


@pytest.mark.parametrize(
    ("caption", "objects"),
    [
        ("Two guys and a lady with their kids.", {"person"}),
        ("Puppies and a kitty on a sofa", {"dog", "cat", "couch"}),
        ("A motorbike parked by buses", {"motorcycle", "bus"}),
        ("A TV and a television set; an old t.v.", {"tv"}),
        ("A skier on the slope", {"person", "skis"}),
        ("A surfer riding a wave", {"person", "surfboard"}),
        ("Elephants, a zebra and giraffes", {"elephant", "zebra", "giraffe"}),
    ],
)
def test_plurals_and_synonyms(caption, objects):
    assert objects_of(caption) == objects


@pytest.mark.parametrize(
    ("caption", "objects"),
    [
        ("A hot dog on a bun", {"hot dog"}),
        ("A teddy bear and a polar bear", {"teddy bear", "bear"}),
        ("A fire hydrant next to a stop sign", {"fire hydrant", "stop sign"}),
        ("A man on his cell phone", {"person", "cell phone"}),
        ("A tennis racket and a baseball bat", {"tennis racket", "baseball bat"}),
        ("A glass of wine by a toilet bowl", {"wine glass", "toilet"}),
        ("A woman waiting at a bus stop", {"person"}),
    ],
)
def test_multi_word_names_take_the_longest_phrase(caption, objects):
    assert objects_of(caption) == objects


@pytest.mark.parametrize(
    ("caption", "objects"),
    [
        ("An orange cat by a glass window", {"cat"}),
        ("A bowl of oranges", {"bowl", "orange"}),
        ("A baby elephant and an adult giraffe", {"elephant", "giraffe"}),
        ("A mother holding her baby", {"person"}),
        ("A bat and a mouse by the keyboard", {"baseball bat", "mouse", "keyboard"}),
        ("A bike and a dirt bike", {"bicycle", "motorcycle"}),
        ("A pitcher on a board under a light", set()),
    ],
)
def test_ambiguous_words_as_documented(caption, objects):
    assert objects_of(caption) == objects


def test_an_images_objects_are_the_union_over_its_captions():
    captions = [normalize_caption(text) for text in ("A dog on a bed.", "A puppy and a cat")]
    assert image_objects(captions) == {CATEGORY_IDS[name] for name in ("dog", "bed", "cat")}
    assert image_objects([]) == frozenset()


def _instances(**changes) -> dict:
    document = {
        "images": [{"id": 1}, {"id": 2}, {"id": 3}],
        "annotations": [
            {"id": 10, "image_id": 1, "category_id": 18},
            {"id": 11, "image_id": 1, "category_id": 1},
            {"id": 12, "image_id": 2, "category_id": 18},
            {"id": 13, "image_id": 1, "category_id": 18},
        ],
        "categories": [{"id": 1, "name": "person"}, {"id": 18, "name": "dog"}],
    }
    return {**document, **changes}


def _write(path, document) -> str:
    path.write_text(json.dumps(document))
    return str(path)


def test_reads_each_images_categories_the_unannotated_empty(tmp_path):
    first = _write(tmp_path / "instances_a.json", _instances())
    second = tmp_path / "instances_b.json.gz"
    second.write_bytes(
        gzip.compress(json.dumps(_instances(images=[{"id": 4}], annotations=[])).encode())
    )
    assert read_instances([first, str(second)]) == {
        "1": {1, 18},
        "2": {18},
        "3": frozenset(),
        "4": frozenset(),
    }


def test_an_image_in_two_files_is_an_error_naming_both(tmp_path):
    first = _write(tmp_path / "a.json", _instances())
    second = _write(tmp_path / "b.json", _instances(annotations=[]))
    with pytest.raises(InputError, match=r"b\.json: image 1 is also in .*a\.json"):
        read_instances([first, second])


ANNOTATIONS = _instances()["annotations"]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "malformed JSON at line 1"),
        ([], "a JSON array; a COCO instances file is a JSON object"),
        (_instances(categories=None), "the document: 'categories' is null"),
        ({"images": [], "annotations": []}, "the document has no 'categories'"),
        (_instances(images={"id": 1}), "'images' is not a list"),
        (_instances(images=[{"id": 1}, {"file_name": "x.jpg"}]), "images[1] has no 'id'"),
        (
            _instances(annotations=[*ANNOTATIONS, {"id": 14, "image_id": 2}]),
            "annotations[4] has no 'category_id'",
        ),
        (
            _instances(annotations=[*ANNOTATIONS, {"id": 14, "image_id": 9, "category_id": 1}]),
            "annotations[4] (id 14) refers to image_id 9, which is not in 'images'",
        ),
        (
            _instances(annotations=[*ANNOTATIONS, {"id": 14, "image_id": 2, "category_id": 19}]),
            "annotations[4] (id 14) has category_id 19, which is not in 'categories'",
        ),
        (
            _instances(categories=[{"id": 1}, {"id": 12, "name": "street sign"}]),
            "categories[1]: id 12 is not one of COCO's 80 object categories",
        ),
    ],
)
def test_malformed_instances_name_the_file_and_record(tmp_path, document, message):
    path = tmp_path / "instances_bad.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    with pytest.raises(InputError) as raised:
        read_instances([str(path)])
    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


def _ranked(sets, targets, *, k=3, seed=0, ids=None, batch_size=128):
    ids = ids or [str(index) for index in range(len(sets))]
    return rank_same_objects(
        np.array(targets), object_matrix(sets), tie_keys(ids, seed), k=k, batch_size=batch_size
    )


def test_ranks_by_overlap_then_fewest_other_objects():
    target = {1, 18, 3}
    sets = [target, {1, 18, 62, 63}, {1}, {1, 18}, {1, 18, 3, 62}, set(), {1, 18, 3}, {62}]
    ranked = _ranked(sets, [0], k=5)
    assert ranked.candidates.tolist() == [[6, 4, 3, 1, 2]]
    assert ranked.overlap.tolist() == [[3, 3, 2, 2, 1]]
    assert ranked.extra.tolist() == [[0, 1, 0, 2, 0]]
    assert ranked.exact.tolist() == [[True, False, False, False, False]]
    assert ranked.all_exact().tolist() == [False]


def test_the_best_candidates_are_the_closest_of_all_images_brute_force():
    rng = np.random.default_rng(7)
    columns = [category_id for category_id, _, _ in CATEGORIES[:8]]
    sets = [set(rng.choice(columns, size=rng.integers(0, 4), replace=False)) for _ in range(200)]
    ranked = _ranked(sets, range(200), k=3)
    for target, candidates in enumerate(ranked.candidates):
        assert target not in candidates
        closeness = [
            (len(sets[target] & other), -len(other - sets[target]))
            for image, other in enumerate(sets)
            if image != target
        ]
        best = [(len(sets[target] & sets[c]), -len(sets[c] - sets[target])) for c in candidates]
        assert best == sorted(closeness, reverse=True)[:3]
        exact = [sets[c] == sets[target] for c in candidates]
        assert ranked.exact[target].tolist() == exact


def test_own_image_is_never_a_candidate_and_the_same_set_is_exact():
    ranked = _ranked([{1}] * 5, range(5), k=4)
    assert all(target not in row for target, row in enumerate(ranked.candidates.tolist()))
    assert ranked.all_exact().all()


def test_ties_are_seeded_independent_of_image_order():
    sets, ids = [{1, 18}] * 60, [f"image{index}" for index in range(60)]
    first = _ranked(sets, range(60), ids=ids)
    assert np.array_equal(first.candidates, _ranked(sets, range(60), ids=ids).candidates)
    other_seed = _ranked(sets, range(60), ids=ids, seed=1)
    assert not np.array_equal(first.candidates, other_seed.candidates)
    assert len(set(first.candidates[:, 0].tolist())) > 20  # not always the same images
    order = np.random.default_rng(0).permutation(60)
    shuffled = _ranked(sets, np.argsort(order), ids=[ids[i] for i in order])
    chosen = [[ids[order[c]] for c in row] for row in shuffled.candidates]
    assert chosen == [[ids[c] for c in row] for row in first.candidates]


def test_batches_give_the_result_of_one_batch():
    rng = np.random.default_rng(3)
    columns = [category_id for category_id, _, _ in CATEGORIES[:6]]
    sets = [set(rng.choice(columns, size=rng.integers(0, 3), replace=False)) for _ in range(150)]
    whole = _ranked(sets, range(150), batch_size=150)
    for batch_size in (1, 7, 64):
        batched = _ranked(sets, range(150), batch_size=batch_size)
        for name in ("candidates", "overlap", "extra", "exact"):
            assert np.array_equal(getattr(whole, name), getattr(batched, name)), name


def test_needs_more_images_than_candidates():
    with pytest.raises(ValueError, match="k=3"):
        _ranked([{1}, {1}, {1}], [0], k=3)


def test_synthetic_vocabulary_names_coco_categories():
    places = {place for *_, places in SUBJECTS.values() for place in places}
    assert set(PLACE_OBJECTS) <= places
    names = {
        name
        for nouns, activities, _, _ in SUBJECTS.values()
        for entry in (*(noun[2] for noun in nouns), *(activity[1] for activity in activities))
        for name in entry
    } | {name for names in PLACE_OBJECTS.values() for name in names}
    assert names <= set(CATEGORY_IDS)


def test_captions_recover_the_synthetic_corpus_objects(tmp_path):
    """The lexicon against the scenes' truth: 1,000 images measured 0.991 precision and
    0.955 recall (micro); the misses are objects captions imply ("drinking coffee": a cup)."""
    captions, instances = tmp_path / "captions.json", tmp_path / "instances.json"
    argv = ["--num_images", "1000", "--seed", "0", "--output", str(captions)]
    assert make_corpus.main([*argv, "--instances", str(instances)]) == 0
    document = json.loads(captions.read_text())
    by_image = defaultdict(list)
    for annotation in document["annotations"]:
        by_image[str(annotation["image_id"])].append(normalize_caption(annotation["caption"]))
    truth = read_instances([str(instances)])
    assert set(truth) == set(by_image)
    counts = Counter()
    for image_id, image_captions in by_image.items():
        found = image_objects(image_captions)
        counts.update(
            hit=len(found & truth[image_id]),
            extra=len(found - truth[image_id]),
            missed=len(truth[image_id] - found),
        )
    precision = counts["hit"] / (counts["hit"] + counts["extra"])
    recall = counts["hit"] / (counts["hit"] + counts["missed"])
    assert precision > 0.98 and recall > 0.94, (precision, recall)
