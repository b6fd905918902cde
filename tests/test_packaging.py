"""setup.py is what Dataflow installs on workers: everything the code imports, no test tools."""

import ast
import fnmatch
import importlib.metadata
import re
import sys

import pytest
import setuptools

from pipelines.runner import worker_requirements
from tests.support import REPO
from tests.support.probes import run_probe

PACKAGES = ("pipelines", "transforms", "schemas")


def _requirement_names(requirements: list[str]) -> set[str]:
    return {
        re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower() for requirement in requirements
    }


def _setup_arguments() -> dict:
    """setup()'s arguments, read without running setup.py: literals and the module's named
    requirement lists (``JAPANESE = [...]``) they spread in."""
    module = ast.parse((REPO / "setup.py").read_text())
    named = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in module.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    call = next(
        node
        for node in ast.walk(module)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "setup"
    )
    wanted = ("install_requires", "extras_require", "entry_points", "package_data")
    return {
        k.arg: eval(compile(ast.Expression(k.value), "setup.py", "eval"), {}, named)
        for k in call.keywords
        if k.arg in wanted
    }


def _imported_modules() -> set[str]:
    """Top-level modules the worker code imports, two levels deep (``google.protobuf``)."""
    modules = set()
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    modules.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules.add(node.module)
    return {
        ".".join(module.split(".")[:2])
        for module in modules
        if module.split(".")[0] not in {*sys.stdlib_module_names, *PACKAGES}
    }


def _distribution(module: str, providers: dict[str, list[str]]) -> str:
    """The one distribution behind a module; namespace packages (google.*) by their files."""
    candidates = providers[module.split(".")[0]]
    if len(candidates) == 1:
        return candidates[0].lower()
    init = f"{module.replace('.', '/')}/__init__.py"
    [owner] = [
        name
        for name in set(candidates)
        if any(str(file) == init for file in importlib.metadata.files(name) or [])
    ]
    return owner.lower()


def test_workers_get_every_imported_package_and_no_test_tools():
    arguments = _setup_arguments()
    required = _requirement_names(arguments["install_requires"])
    trainer = _requirement_names(arguments["extras_require"]["train"])
    hub = _requirement_names(arguments["extras_require"]["hub"])
    providers = importlib.metadata.packages_distributions()
    imported = {_distribution(module, providers) for module in _imported_modules()}
    assert imported <= required | trainer | hub, f"imported, never installed: {imported - required}"
    assert trainer <= imported, "the train extra installs what no module imports"
    assert hub <= imported, "the hub extra installs what no module imports"
    # the test extra installs the hub extra's client too, so CI tests dmc-publish
    test_tools = _requirement_names(arguments["extras_require"]["test"]) - hub
    assert not test_tools & (required | trainer)
    assert not test_tools & imported, "worker code imports a test-only package"


def test_every_package_of_the_code_is_shipped():
    """find_packages' include patterns decide what a wheel (and Dataflow's --setup_file) holds:
    a subpackage they miss, such as pipelines/options/, imports on this machine only."""
    call = next(
        node
        for node in ast.walk(ast.parse((REPO / "setup.py").read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "find_packages"
    )
    [include] = [ast.literal_eval(k.value) for k in call.keywords if k.arg == "include"]
    shipped = setuptools.find_packages(where=str(REPO), include=include)
    packages = {
        ".".join(init.parent.relative_to(REPO).parts)
        for package in PACKAGES
        for init in (REPO / package).rglob("__init__.py")
    }
    assert {"pipelines.options", "pipelines.cli"} <= packages
    assert packages <= set(shipped), f"never shipped: {sorted(packages - set(shipped))}"


def test_package_data_ships_every_file_the_reports_read():
    """The rating app's files and the card templates are read with importlib.resources, so a
    wheel (and Dataflow's --setup_file) must hold them; package_data's patterns decide that."""
    patterns = _setup_arguments()["package_data"]["transforms.report.assets"]
    folder = REPO / "transforms" / "report" / "assets"
    files = [path.name for path in folder.iterdir() if path.is_file() and path.suffix != ".py"]
    assert {"rating_app.js", "version_card.md"} <= set(files)
    assert [name for name in files if not any(fnmatch.fnmatch(name, p) for p in patterns)] == []


def test_generate_runs_without_the_train_extra_and_the_trainer_says_it_needs_it():
    """pip install dmc-datasets (no extras: PyTorch and scikit-learn come with the validity
    rule's encoder, the caption metrics do not): generate and its audit's bigram LM work; the
    trainer refuses in one line naming the extra."""
    done = run_probe("no_train_extra_probe", check=False)
    assert done.stdout.strip() == "['Bigram LM']", done.stderr
    assert done.returncode == 2  # an input error: one line, no traceback
    assert "pip install -e '.[train]'" in done.stderr and "Traceback" not in done.stderr


def test_dataflow_trainer_workers_get_the_train_extra_through_a_requirements_file():
    args = worker_requirements(["--runner", "DataflowRunner", "--setup_file", "./setup.py"])
    path = args[args.index("--requirements_file") + 1]
    with open(path) as handle:
        requirements = handle.read().split()
    assert _requirement_names(requirements) == _requirement_names(
        _setup_arguments()["extras_require"]["train"]
    )
    assert args[args.index("--requirements_cache") + 1] == "skip"
    assert worker_requirements(["--runner", "DirectRunner"]) == ["--runner", "DirectRunner"]


def test_console_scripts_run_each_entry_points_main_which_returns_the_exit_code(capsys, tmp_path):
    """pip's script is ``sys.exit(main())``: main must return the exit code, and --help
    must name the script."""
    scripts = [
        importlib.metadata.EntryPoint(*script.split(" = "), group="console_scripts")
        for script in _setup_arguments()["entry_points"]["console_scripts"]
    ]
    assert {script.name for script in scripts} == {
        "dmc-generate",
        "dmc-train",
        "dmc-evaluate",
        "dmc-regenerate",
        "dmc-optimize",
        "dmc-make-corpus",
        "dmc-preview",
        "dmc-rate",
        "dmc-publish",
        "dmc-features",
    }
    for script in scripts:
        main = script.load()
        code = main(["--output", "o", "--no_such_flag"])
        assert type(code) is int and code == 2, script.name
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(["--help"])
        assert exited.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: {script.name} "), script.name
    make_corpus = next(script for script in scripts if script.name == "dmc-make-corpus").load()
    assert make_corpus(["--output", str(tmp_path / "c.json"), "--num_images", "3"]) == 0
