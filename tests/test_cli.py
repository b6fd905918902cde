"""What ``--help`` tells a user: the command's name, what it does, its options by group."""

import dataclasses
import importlib
import importlib.metadata
import pathlib
import re
import subprocess
import sys
from collections.abc import Callable

import pytest

from pipelines import features, generate, make_corpus, publish, train
from pipelines.cli import commands
from pipelines.cli.parser import MAX_HELP_WIDTH, shown_choices
from pipelines.options import GenerateOptions
from schemas.options import REQUIRED

ENTRY_POINTS = [
    (generate, commands.GENERATE),
    (train, commands.TRAIN),
    (features, commands.FEATURES),
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


@pytest.mark.parametrize(("module", "command"), ENTRY_POINTS)
def test_help_names_the_command_says_what_it_does_and_groups_its_options(module, command, capsys):
    text, prog = _help(module, capsys), command.prog
    words = " ".join(text.split())
    assert text.startswith(f"usage: {prog} --")
    assert words.startswith(f"usage: {prog} ") and command.description in words
    assert module.__doc__.splitlines()[0] not in words, "the developer docstring is not help"
    assert f"\nexample:\n  {prog} --" in text
    fields = [f for options_type in command.options for f in dataclasses.fields(options_type)]
    headings = [title for title in _sections(text) if title not in ("options", "example")]
    assert headings == list(dict.fromkeys(f.metadata["group"] for f in fields))
    assert "(default: )" not in words
    defaults = re.findall(r"\(default: ([^)]*)\)", words)
    assert len(defaults) == sum(f.default is not REQUIRED for f in fields)
    assert not {"", "False", "True"} & set(defaults)
    assert words.count("(required)") == sum(f.default is REQUIRED for f in fields)
    assert "Any other flag is passed to Apache Beam as a pipeline option" in words
    assert "--runner DataflowRunner" in words and "(did you mean --seed?)" in words
    assert f"The manual documents it all: {command.manual}." in words


@pytest.mark.parametrize("command", commands.COMMANDS, ids=lambda command: command.prog)
def test_the_manual_pages_help_names_exist(command):
    root = pathlib.Path(__file__).resolve().parent.parent
    pages = re.findall(r"docs/[\w/]+(?:\.md)?", command.manual)
    assert pages and command.manual.startswith(pages[0])
    for page in pages:
        assert (root / page).exists(), page


@pytest.mark.parametrize(("module", "command"), ENTRY_POINTS)
def test_every_option_is_listed_once_under_its_own_group(module, command, capsys):
    listed = [
        (flag, heading)
        for heading, flags in _sections(_help(module, capsys)).items()
        for flag in flags
    ]
    flags = [flag for flag, _ in listed]
    for options_type in command.options:
        for option in dataclasses.fields(options_type):
            assert flags.count(f"--{option.name}") == 1, option.name
            assert (f"--{option.name}", option.metadata["group"]) in listed, option.name


def test_make_corpus_help_does_not_promise_beam_options(capsys):
    words = " ".join(_help(make_corpus, capsys).split())
    assert words.startswith("usage: dmc-make-corpus ")
    assert "Apache Beam" not in words and "(did you mean --seed?)" in words


def _console_scripts() -> dict[str, str]:
    """Every console script setup.py installs: its name -> its entry point ("module:name")."""
    setup = (pathlib.Path(__file__).resolve().parent.parent / "setup.py").read_text()
    return dict(re.findall(r'"(dmc-[\w-]+) = ([\w.:]+)"', setup))


ENTRY_VALUES = _console_scripts()
SCRIPTS: dict[str, Callable[[list[str]], int]] = {
    name: importlib.metadata.EntryPoint(name, value, "console_scripts").load()
    for name, value in ENTRY_VALUES.items()
}
# the argv of every command with options of its own: each script, dmc-rate's subcommands
HELP_COMMANDS = [
    *([name] for name in SCRIPTS if name != "dmc-rate"),
    *(["dmc-rate", subcommand] for subcommand in commands.RATE),
]


def _script_help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exited:
        SCRIPTS[argv[0]]([*argv[1:], "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", HELP_COMMANDS, ids=" ".join)
def test_no_help_line_is_wider_than_one_reads_even_in_a_wide_terminal(argv, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    lines = _script_help(argv, capsys).splitlines()
    assert len(lines) > 5
    assert max(map(len, lines)) <= MAX_HELP_WIDTH, max(lines, key=len)


@pytest.mark.parametrize("argv", [*HELP_COMMANDS, ["dmc-rate"]], ids=" ".join)
def test_a_scripts_help_is_the_help_its_module_gives(argv, capsys):
    """The script answers --help before importing the module that runs the command: the
    options it lists must be those the module's main parses."""
    module = next(c.module for c in commands.COMMANDS if c.prog.split()[0] == argv[0])
    with pytest.raises(SystemExit) as exited:
        importlib.import_module(module).main([*argv[1:], "--help"])
    assert exited.value.code == 0
    module_help = capsys.readouterr().out
    assert _script_help(argv, capsys) == module_help


def test_help_imports_neither_the_command_nor_pytorch_gensim_or_nltk():
    """What makes --help take a moment rather than seconds (benchmarks/help.py); in a
    fresh interpreter, which a test process is not."""
    scripts = [
        ",".join([f"{argv[0]}={ENTRY_VALUES[argv[0]]}", *argv[1:]]) for argv in HELP_COMMANDS
    ]
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.help_imports", *scripts],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


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


@pytest.mark.parametrize("argv", HELP_COMMANDS, ids=" ".join)
def test_every_command_shares_one_help_layout(argv, capsys):
    """usage naming the command and its required flags, what it does, an example, the
    options under their groups' headings, and the manual's page last."""
    text = _script_help(argv, capsys)
    assert re.match(r"usage: dmc-[\w-]+( \w+)? --\w+ [A-Z_]+ ", text), text[:200]
    sections = _sections(text)
    assert "example" in sections and "options" in sections
    assert [flag for flag in sections["options"] if flag != "--help"] == []
    assert sum(len(flags) for title, flags in sections.items() if title != "options") > 0
    assert "The manual documents it all: docs/" in " ".join(text.split())


def _renamed() -> list[tuple[str, str, str, str]]:
    """(module, earlier flag, flag, a value it takes) of every option renamed for one
    vocabulary."""
    commands = {
        "pipelines.publish": "PublishOptions",
        "pipelines.features": "FeaturesOptions",
        "pipelines.generate": "GenerateOptions",
    }
    import pipelines.options as options

    return [
        (module, f"--{old}", f"--{option.name}", (option.metadata["choices"] or ["x"])[0])
        for module, name in commands.items()
        for option in dataclasses.fields(getattr(options, name))
        for old in option.metadata["renamed_from"]
    ]


def test_one_name_for_one_thing_across_the_commands():
    """A version or output root to read is --dataset everywhere; an image folder --images."""
    import pipelines.options as options

    readers = [options.EvaluateOptions, options.PreviewOptions, options.PublishOptions]
    readers += [options.TrainOptions, options.RateExportOptions]
    for options_type in readers:
        assert "dataset" in {f.name for f in dataclasses.fields(options_type)}, options_type
    assert {f.name for f in dataclasses.fields(options.FeaturesOptions)} >= {"images", "library"}
    assert "images" not in {f.name for f in dataclasses.fields(GenerateOptions)}
    assert {(module, old, new) for module, old, new, _ in _renamed()} == {
        ("pipelines.publish", "--version", "--dataset"),
        ("pipelines.features", "--encoder", "--library"),
        ("pipelines.generate", "--images", "--image_list"),
    }


@pytest.mark.parametrize(("module", "old", "new", "value"), _renamed())
def test_an_earlier_name_still_runs_with_a_warning_and_is_neither_shown_nor_suggested(
    module, old, new, value, capsys
):
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert new in shown and old not in shown.replace(new, "")
    # refused after the flags are read (a missing required option or a bad value): the
    # earlier name was taken, and said so
    assert main([old, value, "--no_such_flag_here"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"warning: {old} is renamed {new}; the old name goes in the next ")
    assert old not in err.splitlines()[-1]


def test_a_renamed_required_option_is_still_required(capsys):
    assert publish.main(["--repo_id", "me/mcic", "--dry_run"]) == 2
    assert capsys.readouterr().err == ("error: the following arguments are required: --dataset\n")


@pytest.mark.parametrize(
    ("module", "argv", "error"),
    [
        # a command that runs no pipeline suggests none of Beam's flags
        ("pipelines.publish", ["--runer", "x"], "unknown flag --runer (did you mean --dry_run?)"),
        ("pipelines.make_corpus", ["--sead", "1"], "unknown flag --sead (did you mean --seed?)"),
        (
            "pipelines.publish",
            ["--runner", "DirectRunner"],
            "unknown flag --runner: dmc-publish runs no Beam pipeline, so it takes no pipeline "
            "options",
        ),
        # a pipeline's command suggests Beam's flags too
        ("pipelines.features", ["--runer", "x"], "unknown flag --runer (did you mean --runner?)"),
    ],
)
def test_a_misspelt_flag_is_matched_only_against_flags_the_command_takes(
    module, argv, error, capsys
):
    required = {
        "pipelines.publish": ["--dataset", "d", "--repo_id", "me/mcic"],
        "pipelines.make_corpus": ["--output", "c.json"],
        "pipelines.features": ["--images", "i", "--output", "f.parquet"],
    }
    assert importlib.import_module(module).main([*required[module], *argv]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"error: {error}"
