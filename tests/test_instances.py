from collections import Counter

import pytest

from schemas.instance import mcic_line, parse_mcic_line
from schemas.records import Caption, Decoy, Selection
from transforms.dataset.instances import build_instance, option_permutation

TARGET = Caption("70", "7", "7_0", "a dog on a bed", "7.jpg", "u", "dev")


def _selection(example_id="7_0"):
    decoys = tuple(
        Decoy(str(100 + i), str(20 + i), f"decoy {i}", 0.9 - i / 10, 0.1, 0.5 - i / 10)
        for i in range(4)
    )
    return Selection(TARGET._replace(example_id=example_id), decoys)


def test_permutation_depends_only_on_seed_and_example_id():
    assert option_permutation(0, "7_0", 5).tolist() == option_permutation(0, "7_0", 5).tolist()
    assert sorted(option_permutation(0, "7_0", 5).tolist()) == [0, 1, 2, 3, 4]
    different = {tuple(option_permutation(s, "7_0", 5)) for s in range(20)}
    assert len(different) > 5


@pytest.mark.parametrize("num_options", [2, 4, 5])
def test_target_position_is_uniform(num_options):
    positions = Counter(int(option_permutation(0, f"{i}_0", num_options)[0]) for i in range(5000))
    expected = 5000 / num_options
    assert all(0.9 * expected < positions[p] < 1.1 * expected for p in range(num_options))


def test_an_edited_target_and_decoy_keep_their_source_caption_and_edit():
    edit = "replace_person: 'a dog' -> 'a cat'"
    decoy = Decoy("70", "7", "a cat on a bed", float("nan"), float("nan"), float("nan"), edit)
    selection = Selection(TARGET, (decoy,), target_text="a bed", target_edit="just_scene_plus")
    instance = build_instance(selection, seed=3)
    assert sorted(instance["options"]) == ["a bed", "a cat on a bed"]
    assert instance["options"][instance["label"]] == "a bed"
    assert instance["option_edits"][instance["label"]] == "just_scene_plus"
    assert instance["option_edits"][1 - instance["label"]] == edit
    assert instance["option_caption_ids"] == ["70", "70"]
    assert (instance["decoy_caption_ids"], instance["decoy_edits"]) == (["70"], [edit])


def test_instance_places_target_at_label_and_keeps_decoy_provenance():
    instance = build_instance(_selection(), seed=0)
    assert instance["options"][instance["label"]] == "a dog on a bed"
    assert instance["option_caption_ids"][instance["label"]] == "70"
    assert sorted(instance["options"]) == sorted(
        ["a dog on a bed", "decoy 0", "decoy 1", "decoy 2", "decoy 3"]
    )
    for text, caption_id, image_id in zip(
        instance["options"],
        instance["option_caption_ids"],
        instance["option_image_ids"],
        strict=True,
    ):
        if caption_id != "70":
            i = int(caption_id) - 100
            assert (text, image_id) == (f"decoy {i}", str(20 + i))
    assert instance["decoy_caption_ids"] == ["100", "101", "102", "103"]
    assert instance["option_edits"] == instance["decoy_edits"] + [""] == [""] * 5
    assert instance["decoy_score"] == [0.5, 0.4, 0.3, 0.2]


def test_mcic_text_line_round_trips():
    instance = build_instance(_selection("7_3"), seed=1)
    line = mcic_line(instance)
    assert line.split("\t")[5:] == [
        "image=7.jpg",
        "example_id=7_3",
        f"reference={instance['label']}",
    ]
    parsed = parse_mcic_line(line)
    assert parsed == {k: instance[k] for k in ("options", "image_file", "example_id", "label")}
