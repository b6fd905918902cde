"""schemas/layout.py is the one home of a version's and a corpus's file names."""

import ast

import schemas.layout
from tests.support import REPO

PACKAGES = ("pipelines", "transforms", "schemas", "benchmarks")
# The same name for a file of another kind of folder, not a version's nor a corpus's.
ELSEWHERE = {
    ("pipelines/rate.py", "report.json"),  # a rating job's report
    ("transforms/corpus/encoders/base.py", "README.md"),  # a sentence encoder's model card
}


def file_names() -> dict[str, str]:
    """layout's file names (a dot or a leading underscore), by their value."""
    return {
        value.rsplit("/", 1)[-1]: name
        for name, value in vars(schemas.layout).items()
        if name.isupper() and isinstance(value, str) and ("." in value or value[:1] == "_")
    }


def code_strings(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of a module that are not docstrings (their examples may name
    files as a reader would)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def test_no_module_but_layout_spells_a_file_name_it_defines():
    names = file_names()
    assert {"manifest.json", "captions.parquet", "doc2vec.model", "statistics.json"} <= set(names)
    spelt = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            relative = str(path.relative_to(REPO))
            if relative == "schemas/layout.py":
                continue
            for node in code_strings(ast.parse(path.read_text(encoding="utf-8"))):
                last = node.value.rsplit("/", 1)[-1]
                if last in names and (relative, last) not in ELSEWHERE:
                    spelt.append(f"{relative}:{node.lineno}: {node.value!r} is {names[last]}")
    assert not spelt, "\n".join(spelt)


# Folders of what other commands write, not of a version nor of a corpus.
OTHER_OUTPUTS = {
    ("pipelines/rate.py", "APP_DIRECTORY"),  # the rating app's files
    ("transforms/trainer/stages.py", "EXAMPLES_DIRECTORY"),  # the trainer's encoded examples
    ("transforms/report/preview.py", "IMAGES_DIRECTORY"),  # the preview's copied images
}


def test_no_module_but_layout_names_a_folder():
    named = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            relative = str(path.relative_to(REPO))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                    for target in node.targets:
                        name = getattr(target, "id", "")
                        if name.endswith("_DIRECTORY") and (relative, name) not in OTHER_OUTPUTS:
                            named.append(f"{relative}:{node.lineno}: {name}")
    elsewhere = [entry for entry in named if not entry.startswith("schemas/layout.py:")]
    assert not elsewhere, "\n".join(elsewhere)
    assert {"EDGES_DIRECTORY", "PARTS_DIRECTORY", "RATINGS_DIRECTORY"} <= {
        entry.rsplit(" ", 1)[-1] for entry in named
    }
