"""setup.py is what Dataflow installs on workers: everything the code imports, no test tools."""

import ast
import importlib.metadata
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("pipelines", "transforms", "schemas")


def _requirement_names(requirements: list[str]) -> set[str]:
    return {
        re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower() for requirement in requirements
    }


def _setup_arguments() -> dict:
    call = next(
        node
        for node in ast.walk(ast.parse((ROOT / "setup.py").read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "setup"
    )
    wanted = ("install_requires", "extras_require")
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in wanted}


def _imported_modules() -> set[str]:
    """Top-level modules the worker code imports, two levels deep (``google.protobuf``)."""
    modules = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
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
    providers = importlib.metadata.packages_distributions()
    imported = {_distribution(module, providers) for module in _imported_modules()}
    assert imported <= required, f"imported but not in install_requires: {imported - required}"
    test_tools = _requirement_names(arguments["extras_require"]["test"])
    assert not test_tools & required
    assert not test_tools & imported, "worker code imports a test-only package"
