"""A new user's first minutes: the manual's loading snippets, the dataset card, stock readers.

The snippets are taken from docs/output.md as written and run in a fresh interpreter
against an output root that holds two versions, so a snippet that reads both
(or none) fails here as it would for a user.
"""

import ast
import dataclasses
import glob
import json
import os
import pathlib
import re
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import yaml

from pipelines.generate import run
from pipelines.options import GenerateOptions
from schemas.instance import FIELDS
from schemas.layout import FEATURE_SPEC_FILE, TFRECORD, dataset_path, shard_pattern
from schemas.tf_example import tfrecord_feature_spec
from tests.conftest import SMALL
from tests.dataset_checks import SPLITS, read_parquet
from tests.tfrecord_reader import parse_example, read_records

OUTPUT_PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "output.md"


@pytest.fixture(scope="module")
def two_versions(synthetic_corpus, tmp_path_factory) -> tuple[pathlib.Path, str, str]:
    """(output root, older version directory, latest version directory)."""
    root = tmp_path_factory.mktemp("loading")
    options = GenerateOptions(input=synthetic_corpus, output=str(root), **SMALL)
    older = run(options).version.directory
    latest = run(dataclasses.replace(options, seed=1)).version.directory
    return root, older, latest


def loading_snippets() -> dict[str, str]:
    """The manual's python blocks of "Loading a dataset", by the library each imports first."""
    section = OUTPUT_PAGE.read_text().split("## Loading a dataset", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return {first_import(block): block for block in blocks}


def first_import(code: str) -> str:
    r"""
    >>> first_import("import json\nimport tensorflow as tf")
    'json'
    """
    return next(n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Import)).names[0].name


def run_snippet(snippet: str, root: pathlib.Path, tmp_path: pathlib.Path) -> str:
    """Runs a snippet as a user would, with OUTPUT replaced by ``root``; returns its stdout."""
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf"),  # no cache shared with other runs
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
    }
    result = subprocess.run(
        [sys.executable, "-c", snippet.replace("OUTPUT", str(root))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def statistics(version: str) -> dict:
    return json.loads(pathlib.Path(dataset_path(version, "statistics.json")).read_text())


def test_the_manual_has_the_three_snippets():
    assert set(loading_snippets()) == {"pandas", "datasets", "json"}


def test_latest_is_a_path_and_pandas_reads_one_split_of_it(two_versions, tmp_path):
    root, _, latest = two_versions
    assert (root / "latest").resolve() == pathlib.Path(dataset_path(latest)).resolve()
    assert (root / "latest.txt").read_text().strip() == pathlib.Path(latest).name
    printed = run_snippet(loading_snippets()["pandas"], root, tmp_path)
    count = statistics(latest)["splits"]["dev"]["instances"]
    assert printed.split()[0] == str(count)


def test_datasets_and_a_dataloader_read_the_latest_version_only(two_versions, tmp_path):
    root, older, latest = two_versions
    snippet = loading_snippets()["datasets"]
    sizes = "print(json.dumps({split: len(rows) for split, rows in dataset.items()}))"
    printed = run_snippet(f"import json\n{snippet}\n{sizes}\n", root, tmp_path).splitlines()
    expected = {
        split: values["instances"] for split, values in statistics(latest)["splits"].items()
    }
    assert json.loads(printed[-1]) == expected
    assert expected != {s: v["instances"] for s, v in statistics(older)["splits"].items()}
    assert printed[0].startswith("32 5 ")  # a batch of 32 instances, 5 options each

    at_root = snippet.replace('load_dataset("OUTPUT/latest")', 'load_dataset("OUTPUT")')
    printed = run_snippet(f"import json\n{at_root}\n{sizes}\n", root, tmp_path).splitlines()
    assert json.loads(printed[-1]) == expected  # the root's card: the latest, never both


def test_the_tf_data_snippet_parses_and_its_spec_matches_every_record(two_versions):
    _, _, latest = two_versions
    ast.parse(loading_snippets()["json"])
    spec = json.loads(pathlib.Path(dataset_path(latest, FEATURE_SPEC_FILE)).read_text())
    assert spec == tfrecord_feature_spec(5)
    kinds = {"string": bytes, "int64": int, "float32": float}
    for split in SPLITS:
        for path in glob.glob(shard_pattern(latest, TFRECORD, split)):
            for record in read_records(path):
                example = parse_example(record)
                assert set(example) == set(spec)
                for name, values in example.items():
                    assert len(values) == (spec[name]["shape"] or [1])[0], name
                    assert all(isinstance(v, kinds[spec[name]["dtype"]]) for v in values), name


def front_matter(card: pathlib.Path) -> tuple[dict, str]:
    text = card.read_text()
    assert text.startswith("---\n")
    header, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(header), body


def test_the_version_card_describes_the_version(two_versions):
    _, _, latest = two_versions
    dataset = pathlib.Path(dataset_path(latest))
    header, body = front_matter(dataset / "README.md")
    values = statistics(latest)
    [config] = header["configs"]
    for entry in config["data_files"]:
        files = sorted(dataset.glob(entry["path"]))
        assert files, entry
        rows = sum(pq.ParquetFile(path).metadata.num_rows for path in files)
        assert rows == values["splits"][entry["split"]]["instances"]
    assert [split["split"] for split in config["data_files"]] == list(SPLITS)
    info = header["dataset_info"]
    assert [feature["name"] for feature in info["features"]] == [f.name for f in FIELDS]
    assert {s["name"]: s["num_examples"] for s in info["splits"]} == {
        split: values["splits"][split]["instances"] for split in SPLITS
    }
    assert header["license"] == "cc-by-4.0"
    assert values["text_only_audit"]["verdict"]["line"] in body
    for plot in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", body):
        assert (dataset / plot).read_bytes().startswith(b"\x89PNG")
    assert len(re.findall(r"!\[", body)) == 3
    assert "@inproceedings{ding2016dmc" in body and "closed_sets" in body
    for split in SPLITS:
        counts = values["splits"][split]
        assert f"| {split} | {counts['images']:,} | {counts['instances']:,} |" in body
    assert str(pathlib.Path(latest).parent.parent) not in body  # no paths: reruns match


def test_the_root_card_names_the_latest_versions_files(two_versions):
    root, _, latest = two_versions
    header, body = front_matter(root / "README.md")
    name = pathlib.Path(latest).name
    paths = [entry["path"] for entry in header["configs"][0]["data_files"]]
    assert paths == [
        f"versions/{name}/dataset/parquet/{split}/{split}-*.parquet" for split in SPLITS
    ]
    assert f"versions/{name}/dataset/README.md" in body
    counts = {s["name"]: s["num_examples"] for s in header["dataset_info"]["splits"]}
    assert counts == {split: len(read_parquet(latest, split)) for split in SPLITS}
