"""A strategy's own options: declared beside it, taken into generate's flags from the registry.

The worked example of docs/contributing.md (tests/support/example_strategy.py) is registered
here with one line, as a contributor would add it to registry.py, and must then reach
--decoys, --help, the manual's table, validation and a generated dataset that passes the
common checks and its own invariant.
"""

import dataclasses
from dataclasses import dataclass

import pytest

from pipelines.cli.parser import flags_parser, parse_options
from pipelines.cli.tables import markdown_table
from pipelines.options import GenerateOptions
from pipelines.options.generate import READ_BY, RunOptions, with_strategy_options
from schemas.options import Group, option
from tests.support.dataset_checks import check_dataset
from tests.support.example_strategy import SameLength
from tests.support.versions import SMALL
from transforms.errors import InputError
from transforms.strategies.config import StrategyOptions
from transforms.strategies.registry import STRATEGIES


def refusal(options) -> str:
    with pytest.raises(InputError) as raised:
        options.validate()
    return str(raised.value)


@pytest.mark.parametrize("decoys", list(STRATEGIES))
def test_each_strategy_s_own_options_are_generate_s_flags_saying_who_reads_them(decoys):
    generate = {flag.name: flag for flag in dataclasses.fields(GenerateOptions)}
    for own in dataclasses.fields(STRATEGIES[decoys].Options):
        flag = generate[own.name]
        assert decoys in flag.metadata[READ_BY]
        assert flag.metadata["help"].endswith(own.metadata["help"])
        assert decoys in flag.metadata["help"].split(":")[0].split("/")
        assert flag.default == own.default
    options = GenerateOptions(input="a", output="b", decoys=decoys)
    options.validate()  # every default is valid
    assert isinstance(options.strategy_options(), STRATEGIES[decoys].Options)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"set_neighbours": 30, "decoys": "mcic"},
            "--set_neighbours is read by --decoys closed_sets",
        ),
        (
            {"objects": "x.json", "decoys": "mcic"},
            "--objects is read by --decoys madlibs_hard, not",
        ),
        (
            {"cooccurrence_images": 2, "decoys": "share_person"},
            "--cooccurrence_images is read by --decoys replace_person or replace_scene, not",
        ),
        ({"set_neighbours": 3}, "--set_neighbours must be at least 4"),
        ({"set_shard_size": 0}, "--set_shard_size must be >= 1"),
        ({"cooccurrence_images": 0, "decoys": "replace_scene"}, "--cooccurrence_images must be"),
    ],
)
def test_a_strategy_s_options_are_refused_when_wrong_or_not_read(change, message):
    assert message in refusal(GenerateOptions(input="a", output="b", **change))


def test_an_option_declared_twice_is_refused_when_the_options_are_composed():
    @dataclass(frozen=True)
    class Clash(StrategyOptions):
        seed: int = option(1, "a second --seed", group=Group.DECOYS)

    class Clashing(SameLength):
        name = "clashing"
        Options = Clash

    with pytest.raises(TypeError, match="--seed of Clash is declared twice"):
        with_strategy_options(RunOptions, {**STRATEGIES, "clashing": Clashing})


@pytest.fixture
def registered(monkeypatch) -> type:
    """GenerateOptions as they are with the example strategy's one line in the registry."""
    monkeypatch.setitem(STRATEGIES, SameLength.name, SameLength)
    return with_strategy_options(RunOptions, STRATEGIES)


def test_the_example_strategy_reaches_decoys_help_the_manual_and_validation(registered):
    options, _ = parse_options(
        ["--input", "a", "--output", "b", "--decoys", "same_length", "--length_slack", "2"],
        registered,
    )
    assert options.strategy_options() == SameLength.Options(length_slack=2)
    options.validate()
    help = flags_parser(None, registered).format_help()
    assert "--length_slack" in help and "same_length: a decoy's length in words" in help
    assert "| `--length_slack` | `1` | same_length: a decoy's length" in markdown_table(registered)
    assert "--length_slack must be >= 0" in refusal(dataclasses.replace(options, length_slack=-1))
    assert "--length_slack is read by --decoys same_length, not closed_sets" in refusal(
        dataclasses.replace(options, decoys="closed_sets")
    )


@pytest.mark.slow
def test_the_example_strategy_writes_a_dataset_that_passes_every_check(
    registered, shared, coco_subset
):
    options = registered(
        input=coco_subset, output="", decoys="same_length", length_slack=1, **SMALL
    )
    _, options = shared.version(options)
    rows = check_dataset(options, sample=10)  # runs SameLength's invariant too
    assert sum(len(split) for split in rows.values()) > 1000
