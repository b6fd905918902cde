"""The eight forced-choice tasks' construction rules on small inline corpora."""

from collections import Counter

import numpy as np
import pytest

from transforms.corpus.normalize import normalize_caption
from transforms.english.chunker import PERSON, SCENE, chunk
from transforms.english.forced_choice_tasks import (
    OTHER_CAPTIONS,
    OWN_CAPTION,
    TASKS,
    Refusal,
    TaskContext,
    main_chunk,
    task_counts,
)

# (caption id, image id, caption): image 1 says "man" and "guy" about one
# person and "street" and "road" about one place, so those heads co-occur.
TRAIN = [
    ("11", "1", "a man riding a bike down the street"),
    ("12", "1", "a guy on a bicycle on a road"),
    ("21", "2", "a woman sitting on the beach"),
    ("22", "2", "a lady reading on a sandy beach"),
    ("31", "3", "two surfers walking in the ocean"),
    ("41", "4", "a man walking a dog in the park"),
    ("51", "5", "a chef cooking in a kitchen"),
    ("61", "6", "a man in a suit on a beach"),
]


def rows(captions):
    return [(caption_id, image, normalize_caption(text)) for caption_id, image, text in captions]


@pytest.fixture(scope="module")
def context():
    return TaskContext.build(rows(TRAIN))


def build(task, text, context, seed=0, caption_id="t", image_id="9"):
    tokens = normalize_caption(text)
    rng = np.random.default_rng(seed)
    return TASKS[task].build(caption_id, image_id, tokens, chunk(tokens), context, rng)


def test_eight_tasks_are_registered_with_their_rule_kind_and_pool():
    expected = {
        "switch_people": ("swap_people", PERSON, OWN_CAPTION),
        "replace_person": ("replace_mention", PERSON, OWN_CAPTION),
        "replace_scene": ("replace_mention", SCENE, OWN_CAPTION),
        "share_person": ("share_head", PERSON, OTHER_CAPTIONS),
        "share_scene": ("share_head", SCENE, OTHER_CAPTIONS),
        "just_person": ("mention_alone", PERSON, OWN_CAPTION),
        "just_scene": ("mention_alone", SCENE, OWN_CAPTION),
        "just_scene_plus": ("mention_as_target", SCENE, OTHER_CAPTIONS),
    }
    described = {name: (task.rule.__name__, task.kind, task.pool) for name, task in TASKS.items()}
    assert described == expected
    assert list(TASKS) == list(expected)  # the order task_counts reports in
    assert [name for name, task in TASKS.items() if task.target_is_mention] == ["just_scene_plus"]


def test_switch_swaps_people_with_their_clothing_and_keeps_the_words(context):
    text = "a man in a red shirt holding a little boy on the street"
    built = build("switch_people", text, context)
    assert built.distractor_text == "a little boy holding a man in a red shirt on the street"
    assert Counter(built.distractor_text.split()) == Counter(built.target_text.split())
    assert (built.target_edit, built.distractor_source) == ("", "t")
    assert built.distractor_edit == "switch_people: 'a man in a red shirt' <-> 'a little boy'"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a dog on the beach", "no_person_chunk"),
        ("a man riding a horse", "one_person_only"),
        ("a man talking with a woman", "symmetric_relation"),
        ("a man and a woman on a bench", "symmetric_relation"),
        ("a boy sitting next to a girl", "symmetric_relation"),
        ("a man holding two children", "plural_mismatch"),
        ("one man watching another man", "same_person_head"),
        ("a woman holding her baby", "possessive_mention"),
    ],
)
def test_switch_skips(context, text, reason):
    assert build("switch_people", text, context) == Refusal(reason)


def test_replace_person_never_uses_a_head_that_shares_an_image(context):
    """ "man" shares image 1 with "guy": over many draws only woman/lady/chef remain."""
    heads = set()
    for seed in range(60):
        built = build("replace_person", "a man riding a horse", context, seed)
        replacement = built.distractor_edit.split(" -> ")[1].strip("'")
        heads.add(chunk(replacement.split())[0].lemma)
        assert built.distractor_text.endswith(" riding a horse")
    assert heads == {"woman", "lady", "chef"}


def test_replace_person_with_a_threshold_on_shared_images():
    """With min_images=2 the one image where "man" and "guy" meet is not enough to relate them."""
    context = TaskContext.build(rows(TRAIN), min_images=2)
    edits = {build("replace_person", "a man riding a horse", context, seed) for seed in range(60)}
    replacements = {edit.distractor_edit.split(" -> ")[1] for edit in edits}
    assert replacements == {"'a guy'", "'a woman'", "'a lady'", "'a chef'"}


def test_replace_keeps_the_number_and_skips_when_nothing_is_left(context):
    built = build("replace_person", "three men on a boat", context)
    assert built.distractor_text == "two surfers on a boat"
    assert built.distractor_edit == "replace_person: 'three men' -> 'two surfers'"
    assert build("replace_person", "two surfers on a boat", context) == Refusal("no_replacement")


def test_replace_scene_replaces_the_last_scene_by_an_unrelated_one(context):
    for seed in range(30):
        built = build("replace_scene", "a woman walking down the road", context, seed)
        assert built.distractor_text.startswith("a woman walking down ")
        scene = main_chunk(chunk(built.distractor_text.split()), SCENE)
        assert scene.lemma not in {"road", "street"}, built


def test_share_picks_a_caption_of_another_image_with_the_same_head(context):
    seen = set()
    for seed in range(40):
        built = build("share_person", "a man on a horse", context, seed, image_id="4")
        assert built.distractor_image != "4"
        assert built.distractor_edit == ""
        seen.add(built.distractor_source)
    assert seen == {"11", "61"}
    alone = build("share_scene", "a dog in the kitchen", context, image_id="5")
    assert alone == Refusal("no_other_image")
    built = build("share_scene", "kids playing on the beach", context)
    assert built.distractor_source in {"21", "22", "61"}


def test_just_person_and_just_scene_are_the_chunk_alone(context):
    text = "a woman wearing a hat walking on the beach"
    person = build("just_person", text, context)
    scene = build("just_scene", text, context)
    assert (person.target_text, person.distractor_text) == (
        "a woman wearing a hat walking on the beach",
        "a woman wearing a hat",
    )
    assert scene.distractor_text == "the beach"
    assert scene.distractor_edit == "just_scene: 'the beach' alone"
    assert build("just_scene", "a cat on a bed", context) == Refusal("no_scene_chunk")
    assert build("just_person", "a man", context) == Refusal("chunk_is_caption")


def test_just_scene_plus_makes_the_scene_the_target(context):
    built = build("just_scene_plus", "a dog running on the beach", context)
    assert built.target_text == "the beach"
    assert built.target_edit == "just_scene_plus: 'the beach' alone"
    assert built.distractor_source in {"21", "22", "61"}
    assert built.distractor_edit == ""


def test_a_fixed_seed_gives_the_same_items_whatever_the_train_order(context):
    shuffled = TaskContext.build(rows(TRAIN[::-1]))
    for task in TASKS:
        for seed in range(5):
            text = "a man in a suit walking a dog on the street"
            assert build(task, text, context, seed) == build(task, text, shuffled, seed)
    results = {build("replace_person", "a man on a bench", context, seed) for seed in range(20)}
    assert len(results) > 1


def test_task_counts_over_a_corpus():
    """Every caption names one person; "man" and "beach" are the only heads of 2+ images."""
    counts = task_counts(rows(TRAIN))
    assert counts["just_person"] == {"built": 8}
    assert counts["switch_people"] == {"one_person_only": 8}
    assert counts["share_person"] == {"built": 3, "no_other_image": 5}
    assert counts["just_scene_plus"] == {"built": 3, "no_other_image": 5}
