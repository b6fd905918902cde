from collections import Counter

from schemas.instance import mcic_line, parse_mcic_line
from schemas.records import Caption, Decoy, Selection
from transforms.dataset.instances import build_instance, option_permutation


def _selection(example_id="7_0"):
    target = Caption("70", "7", example_id, "a dog on a bed", "7.jpg", "u", "dev")
    decoys = tuple(
        Decoy(str(100 + i), str(20 + i), f"decoy {i}", 0.9 - i / 10, 0.1, 0.5 - i / 10)
        for i in range(4)
    )
    return Selection(target, decoys)


def test_permutation_depends_only_on_seed_and_example_id():
    assert option_permutation(0, "7_0").tolist() == option_permutation(0, "7_0").tolist()
    assert sorted(option_permutation(0, "7_0").tolist()) == [0, 1, 2, 3, 4]
    different = {tuple(option_permutation(s, "7_0")) for s in range(20)}
    assert len(different) > 5


def test_target_position_is_uniform():
    positions = Counter(int(option_permutation(0, f"{i}_0")[0]) for i in range(5000))
    assert all(900 < positions[p] < 1100 for p in range(5))


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
