import dataclasses
import json
import pathlib
import re

import pyarrow.parquet as pq
import pytest

from pipelines.cli import parse_options
from pipelines.cli.tables import LISTS, MARKER, TABLES, printed, with_tables
from pipelines.options import GenerateOptions, TrainOptions
from transforms.errors import InputError
from transforms.strategies.registry import STRATEGIES

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


@pytest.mark.parametrize("name", [*TABLES, *LISTS])
def test_the_manual_shows_every_table_once_made_as_it_is_built(name):
    """Each options type's table (every option by group, with its default), the strategies'
    and the languages': named once in docs/, and made there by the build's hook."""
    pages = [
        page
        for page in sorted(DOCS.rglob("*.md"))
        for named in MARKER.findall(page.read_text("utf-8"))
        if named == name
    ]
    assert len(pages) == 1, (name, pages)
    assert printed(name) in with_tables(pages[0].read_text("utf-8"))


def test_the_strategy_table_has_a_row_per_registered_strategy():
    rows = printed("strategies").splitlines()
    assert [row.split("`")[1] for row in rows[2:]] == list(STRATEGIES)


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


def test_trainer_flags_parse_into_train_options():
    options, beam_args = parse_options(
        ["--dataset", "d", "--output", "o", "--ffnn_hidden", "32,16", "--direct_num_workers", "2"],
        TrainOptions,
    )
    assert options.train_config().ffnn_hidden == (32, 16)
    sizes = ["--vec2seq_sizes", "64:64:16,256:256:64", "--lambda_gen", "0,0.1,1,10"]
    sweep, _ = parse_options(["--dataset", "d", "--output", "o", *sizes], TrainOptions)
    config = sweep.train_config()
    assert [str(size) for size in config.vec2seq_sizes] == ["64:64:16", "256:256:64"]
    assert config.lambda_gen == (0.0, 0.1, 1.0, 10.0)
    assert options.feature_config("d").dim == 256
    assert beam_args == ["--direct_num_workers", "2"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"image_features": "f.npy"}, "--image_ids is needed with a .npy --image_features"),
        ({"ffnn_hidden": "64"}, "--ffnn_hidden needs two positive sizes"),
        ({"ridge_alphas": "1,x"}, "comma-separated numbers"),
        ({"epochs": 0}, "--epochs must be >= 1"),
        ({"vec2seq_sizes": "256:64"}, "state:hidden-1:hidden-2 triples"),
        ({"vec2seq_sizes": "0:4:4"}, "--vec2seq_sizes needs positive sizes"),
        ({"lambda_gen": "1,-1"}, "--lambda_gen needs values >= 0"),
        ({"fit_buffer": 30}, "--fit_buffer must hold at least two minibatches"),
        ({"decoding": "sample"}, "--decoding"),
    ],
)
def test_invalid_trainer_options_are_explained(change, message):
    with pytest.raises(InputError) as raised:
        TrainOptions(dataset="d", output="o", **change).validate()
    assert message in str(raised.value)


def bare_tags(markdown: str) -> list[str]:
    """What a Markdown renderer would take for HTML tags: ``<word...>`` outside fenced code,
    code spans and comments (a placeholder such as <version> written bare vanishes)."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    text = re.sub(r"(`+)[^`]*?\1|<!--.*?-->", "", text, flags=re.S)
    return re.findall(r"<[A-Za-z_/!?][^>\n]*>", text)


@pytest.mark.parametrize(
    "page", [*sorted(DOCS.rglob("*.md")), DOCS.parent / "README.md"], ids=lambda page: page.name
)
def test_no_placeholder_of_the_manual_vanishes_when_rendered(page):
    assert bare_tags(with_tables(page.read_text("utf-8"))) == []


def test_no_placeholder_of_the_card_vanishes_when_rendered(small_dataset):
    version, _ = small_dataset
    card = pathlib.Path(version, "dataset", "README.md").read_text("utf-8")
    assert "`list<string>` (5)" in card  # the fields table, placeholders kept
    assert bare_tags(card) == []


def test_the_card_shows_an_instance_says_what_audit_rows_are_and_lists_what_applied(
    small_dataset,
):
    version, _ = small_dataset
    card = pathlib.Path(version, "dataset", "README.md").read_text("utf-8")
    example = json.loads(
        card.split("An instance (some of its fields):\n\n```json\n")[1].split("```")[0]
    )
    first = pq.read_table(sorted(pathlib.Path(version, "dataset", "parquet", "dev").glob("*"))[0])
    assert example == {name: first.column(name)[0].as_py() for name in example}
    assert len(example["options"]) == 5 and 0 <= example["label"] < 5
    assert "- Hub by BLEU: picks the option whose words overlap" in card
    assert "- Text-FFNN: a network fitted on train's options alone" in card
    # neither the grids of a search that did not run nor the licence the synthetic corpus
    # does not use
    assert "| `--pv_dim_grid` |" not in card and "| `--captions_license` |" not in card
    assert "`--optimize` | `False`" in card
