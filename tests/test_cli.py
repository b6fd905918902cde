"""What ``--help`` tells a user: the command's name, what it does, its options by group."""

import dataclasses
import importlib
import importlib.metadata
import pathlib
import re

import pytest

from pipelines import (
    features,
    generate,
    make_corpus,
    optimize,
    preview,
    publish,
    rate,
    regenerate,
    train,
)
from pipelines.cli.parser import MAX_HELP_WIDTH, shown_choices
from pipelines.options import FeaturesOptions, GenerateOptions, LogOptions, TrainOptions
from schemas.options import REQUIRED

ENTRY_POINTS = [
    (generate, "dmc-generate", (GenerateOptions, LogOptions)),
    (train, "dmc-train", (TrainOptions, LogOptions)),
    (features, "dmc-features", (FeaturesOptions, LogOptions)),
]


def _help(module, capsys) -> str:
    with pytest.raises(SystemExit) as exited:
        module.main(["--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def _sections(help_text: str) -> dict[str, list[str]]:
    """{heading: the flags listed under it}, from the help's own layout."""
    sections: dict[str, list[str]] = {}
    heading = ""
    for line in help_text.splitlines():
        if re.fullmatch(r"\S.*:", line):
            heading = line[:-1]
            sections[heading] = []
        elif match := re.match(r"  (--\w+)", line):
            sections[heading].append(match.group(1))
    return sections


@pytest.mark.parametrize(("module", "prog", "options_types"), ENTRY_POINTS)
def test_help_names_the_command_says_what_it_does_and_groups_its_options(
    module, prog, options_types, capsys
):
    text = _help(module, capsys)
    words = " ".join(text.split())
    assert text.startswith(f"usage: {prog} --")
    assert words.startswith(f"usage: {prog} ") and module.COMMAND.description in words
    assert module.__doc__.splitlines()[0] not in words, "the developer docstring is not help"
    assert f"\nexample:\n  {prog} --" in text
    fields = [f for options_type in options_types for f in dataclasses.fields(options_type)]
    headings = [title for title in _sections(text) if title not in ("options", "example")]
    assert headings == list(dict.fromkeys(f.metadata["group"] for f in fields))
    assert "(default: )" not in words
    defaults = re.findall(r"\(default: ([^)]*)\)", words)
    assert len(defaults) == sum(f.default is not REQUIRED for f in fields)
    assert not {"", "False", "True"} & set(defaults)
    assert words.count("(required)") == sum(f.default is REQUIRED for f in fields)
    assert "Any other flag is passed to Apache Beam as a pipeline option" in words
    assert "--runner DataflowRunner" in words and "(did you mean --seed?)" in words
    assert f"The manual documents it all: {module.COMMAND.manual}." in words


@pytest.mark.parametrize(
    "command",
    [
        *(
            m.COMMAND
            for m in (
                generate,
                make_corpus,
                optimize,
                preview,
                publish,
                regenerate,
                train,
                features,
            )
        ),
        *(rate.EXPORT, rate.IMPORT, rate.FILTER),
    ],
    ids=lambda command: command.prog,
)
def test_the_manual_pages_help_names_exist(command):
    root = pathlib.Path(__file__).resolve().parent.parent
    pages = re.findall(r"docs/[\w/]+(?:\.md)?", command.manual)
    assert pages and command.manual.startswith(pages[0])
    for page in pages:
        assert (root / page).exists(), page


@pytest.mark.parametrize(("module", "prog", "options_types"), ENTRY_POINTS)
def test_every_option_is_listed_once_under_its_own_group(module, prog, options_types, capsys):
    listed = [
        (flag, heading)
        for heading, flags in _sections(_help(module, capsys)).items()
        for flag in flags
    ]
    flags = [flag for flag, _ in listed]
    for options_type in options_types:
        for option in dataclasses.fields(options_type):
            assert flags.count(f"--{option.name}") == 1, option.name
            assert (f"--{option.name}", option.metadata["group"]) in listed, option.name


def test_make_corpus_help_does_not_promise_beam_options(capsys):
    words = " ".join(_help(make_corpus, capsys).split())
    assert words.startswith("usage: dmc-make-corpus ")
    assert "Apache Beam" not in words and "(did you mean --seed?)" in words


def _console_scripts() -> list[tuple[str, str]]:
    """(command, module) of every console script setup.py installs."""
    setup = (pathlib.Path(__file__).resolve().parent.parent / "setup.py").read_text()
    return re.findall(r'"(dmc-[\w-]+) = (pipelines\.\w+):main"', setup)


@pytest.mark.parametrize(
    "argv",
    [
        *([module, "--help"] for _, module in _console_scripts()),
        *(["pipelines.rate", command, "--help"] for command in rate.SUBCOMMANDS),
    ],
    ids=" ".join,
)
def test_no_help_line_is_wider_than_one_reads_even_in_a_wide_terminal(argv, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit) as exited:
        importlib.import_module(argv[0]).main(argv[1:])
    assert exited.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 5
    assert max(map(len, lines)) <= MAX_HELP_WIDTH, max(lines, key=len)


def test_a_long_list_of_choices_is_listed_in_the_help_not_the_usage():
    assert shown_choices("pool", ("", "all", "split")) == ("{all,split}", "")
    many = tuple(f"strategy_{n}" for n in range(9))
    metavar, listed = shown_choices("decoys", many)
    assert metavar == "DECOYS" and listed == "; one of: " + ", ".join(many)


def test_the_manual_names_every_console_script():
    scripts = [
        entry.name
        for entry in importlib.metadata.entry_points(group="console_scripts")
        if entry.value.startswith("pipelines.")
    ]
    manual = (pathlib.Path(__file__).parent.parent / "docs" / "generate.md").read_text("utf-8")
    assert "dmc-generate" in scripts and [s for s in scripts if f"`{s}`" not in manual] == []
