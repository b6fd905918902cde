import dataclasses
import os

import pytest

from pipelines.options import GenerateOptions, markdown_table, parse_options
from transforms.errors import InputError

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def test_readme_documents_every_option_with_its_default():
    with open(README, encoding="utf-8") as handle:
        readme = handle.read()
    for row in markdown_table().splitlines()[2:]:
        assert row in readme, f"README is missing the option row: {row}"


def test_flags_parse_into_options_and_leave_beam_flags_alone():
    options, beam_args = parse_options(
        [
            "--input",
            "a.json",
            "--output",
            "out",
            "--neighbours",
            "50",
            "--decoy_pool",
            "split",
            "--runner",
            "DirectRunner",
        ]
    )
    assert options.neighbours == 50 and options.decoy_pool == "split"
    assert beam_args == ["--runner", "DirectRunner"]
    defaults = {f.name: f.default for f in dataclasses.fields(GenerateOptions)}
    assert options.score_lambda == defaults["score_lambda"] == 0.3
    assert options.surf_limit == defaults["surf_limit"] == 0.5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"neighbours": 3}, "--neighbours must be at least 4"),
        ({"score_lambda": 1.5}, "--score_lambda must be in [0, 1]"),
        ({"pv_hs": 0}, "--pv_negative must be > 0"),
        ({"batch_size": 0}, "--batch_size must be >= 1"),
    ],
)
def test_invalid_options_are_explained(change, message):
    options = GenerateOptions(input="a", output="b", **change)
    with pytest.raises(InputError) as raised:
        options.validate()
    assert message in str(raised.value)
