"""A new user's first minutes: the manual's loading snippets, the dataset card, stock readers.

The snippets are taken from docs/output.md and the cards as written and run in a fresh
interpreter (those of one test in one, each as its own ``__main__``) against an output
root that holds two versions, so a snippet that reads both (or none) fails here as it
would for a user.
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
from pipelines.store.manifest import language_record
from schemas.instance import FIELDS
from schemas.layout import FEATURE_SPEC_FILE, PARQUET, TFRECORD, dataset_path, shard_pattern
from schemas.tf_example import tfrecord_feature_spec
from tests.support.dataset_checks import SPLITS, read_parquet
from tests.support.tfrecord_reader import parse_example, read_records
from tests.support.versions import copied_into
from transforms.corpus.languages.registry import LANGUAGES
from transforms.corpus.synthetic import HEAD_BYTES, is_synthetic
from transforms.report.card import CARD_SECTION, corpus, root_card, size_category, version_card
from transforms.strategies.registry import STRATEGIES

OUTPUT_PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "output.md"


@pytest.fixture(scope="module")
def two_versions(shared, small_closed_sets, tmp_path_factory) -> tuple[pathlib.Path, str, str]:
    """(output root, older version directory, latest version directory): the shared versions
    of seeds 0 and 1, copied to a root of the module's own and made the latest in turn."""
    root = tmp_path_factory.mktemp("loading")
    options = dataclasses.replace(small_closed_sets[1], output=str(root))
    seeds = (options, dataclasses.replace(options, seed=1))
    for each in seeds:
        copied_into(shared.version(dataclasses.replace(each, output=""))[0], root)
    older, latest = (run(each).version.directory for each in seeds)  # up to date, each
    return root, older, latest


def loading_snippets() -> dict[str, str]:
    """The manual's python blocks of "Loading a dataset", by the library each imports first."""
    section = OUTPUT_PAGE.read_text().split("## Loading a dataset", 1)[1].split("\n## ", 1)[0]
    return python_blocks(section, by=0)


def python_blocks(text: str, *, by: int) -> dict[str, str]:
    """``text``'s python blocks, keyed by the ``by``-th library each imports."""
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    return {imported(block)[by]: block for block in blocks}


def imported(code: str) -> list[str]:
    r"""
    >>> imported("import os\n\nimport datasets")
    ['os', 'datasets']
    """
    return [n.names[0].name for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Import)]


END_OF_SNIPPET = "\0end of snippet\0"  # a line no snippet prints
# Runs each snippet as ``python -c`` would: a module __main__ of its own, argv ["-c"], the
# working directory the folder given; then prints END_OF_SNIPPET, so each one's stdout is
# its own. One interpreter for several snippets: their imports are paid once.
SNIPPETS_RUNNER = f"""
import json, os, sys, types
snippets, folder = json.loads(sys.argv[1]), os.getcwd()
for number, snippet in enumerate(snippets):
    sys.argv[:] = ["-c"]
    os.chdir(folder)
    sys.modules["__main__"] = main = types.ModuleType("__main__")
    exec(compile(snippet, f"<snippet {{number}}>", "exec"), main.__dict__)
    print({END_OF_SNIPPET!r}, flush=True)
"""


def run_in(snippets: list[str], folder: pathlib.Path, tmp_path: pathlib.Path) -> list[str]:
    """Runs snippets as written, one after another in one fresh interpreter, each with
    ``folder`` as the working directory; returns the stdout of each."""
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf"),  # no cache shared with other runs
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
    }
    result = subprocess.run(
        [sys.executable, "-c", SNIPPETS_RUNNER, json.dumps(snippets)],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    *printed, rest = result.stdout.split(f"{END_OF_SNIPPET}\n")
    assert (len(printed), rest) == (len(snippets), ""), result.stdout[-3000:]
    return printed


def run_snippets(snippets: list[str], root: pathlib.Path, tmp_path: pathlib.Path) -> list[str]:
    """Runs a manual's snippets as a user would, with OUTPUT replaced by ``root``."""
    return run_in([each.replace("OUTPUT", str(root)) for each in snippets], tmp_path, tmp_path)


def statistics(version: str) -> dict:
    return json.loads(pathlib.Path(dataset_path(version, "statistics.json")).read_text())


def test_the_manual_has_the_three_snippets():
    assert set(loading_snippets()) == {"pandas", "datasets", "json"}


def test_latest_is_a_path_and_pandas_reads_one_split_of_it(two_versions, tmp_path):
    root, _, latest = two_versions
    assert (root / "latest").resolve() == pathlib.Path(dataset_path(latest)).resolve()
    assert (root / "latest.txt").read_text().strip() == pathlib.Path(latest).name
    [printed] = run_snippets([loading_snippets()["pandas"]], root, tmp_path)
    count = statistics(latest)["splits"]["dev"]["instances"]
    assert printed.split()[0] == str(count)


def test_datasets_and_a_dataloader_read_the_latest_version_only(two_versions, tmp_path):
    root, older, latest = two_versions
    snippet = loading_snippets()["datasets"]
    sizes = "print(json.dumps({split: len(rows) for split, rows in dataset.items()}))"
    at_root = snippet.replace('load_dataset("OUTPUT/latest")', 'load_dataset("OUTPUT")')
    runs = [f"import json\n{code}\n{sizes}\n" for code in (snippet, at_root)]  # one interpreter
    printed, at_root_printed = (out.splitlines() for out in run_snippets(runs, root, tmp_path))
    expected = {
        split: values["instances"] for split, values in statistics(latest)["splits"].items()
    }
    assert json.loads(printed[-1]) == expected
    assert expected != {s: v["instances"] for s, v in statistics(older)["splits"].items()}
    assert printed[0].startswith("32 5 ")  # a batch of 32 instances, 5 options each

    assert json.loads(at_root_printed[-1]) == expected  # the root's card: the latest, never both


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
    assert header["license"] == "other"  # the synthetic corpus: the project's own text
    assert header["pretty_name"] and "synthetic" in header["tags"]
    assert header["size_categories"] == [size_category(values["total"]["instances"])]
    assert {s["name"]: s["num_bytes"] for s in info["splits"]} == {
        split: sum(os.path.getsize(p) for p in glob.glob(shard_pattern(latest, PARQUET, split)))
        for split in SPLITS
    }
    assert "lin2014coco" not in body and "CC BY" not in body
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


def card_snippets(card: pathlib.Path) -> dict[str, str]:
    """A card's python blocks, by the library each imports last (``os`` comes first)."""
    _, body = front_matter(card)
    return python_blocks(body, by=-1)


@pytest.mark.parametrize("card", ["version", "latest", "root"])
def test_every_card_snippet_runs_as_written_from_the_cards_folder(two_versions, tmp_path, card):
    """The issue's case among them: ``cd OUTPUT/latest`` and load the folder; every count is
    the latest version's, and the root's never mixes in the older version."""
    root, _, latest = two_versions
    folder = {"version": pathlib.Path(dataset_path(latest)), "latest": root / "latest"}.get(
        card, root
    )
    counts = {split: values["instances"] for split, values in statistics(latest)["splits"].items()}
    snippets = card_snippets(folder / "README.md")
    assert set(snippets) == {"pandas", "datasets", "polars", "duckdb"}
    outputs = run_in(list(snippets.values()), folder, tmp_path)  # one interpreter, all four
    printed = {name: output.strip() for name, output in zip(snippets, outputs, strict=True)}
    assert printed["pandas"] == str(counts["dev"])
    assert ast.literal_eval(printed["datasets"]) == counts
    assert printed["polars"] == str(counts["train"])
    assert printed["duckdb"] == str(sum(counts.values()))


def test_the_root_card_is_the_latest_versions_full_card(two_versions):
    root, _, latest = two_versions
    _, version_body = front_matter(pathlib.Path(dataset_path(latest, "README.md")))
    header, root_body = front_matter(root / "README.md")
    headings = re.findall(r"^#+ .*$", version_body, flags=re.MULTILINE)
    assert re.findall(r"^#+ .*$", root_body, flags=re.MULTILINE) == headings
    assert statistics(latest)["text_only_audit"]["verdict"]["line"] in root_body
    for plot in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", root_body):
        assert (root / plot).read_bytes().startswith(b"\x89PNG")
    version_header, _ = front_matter(pathlib.Path(dataset_path(latest, "README.md")))
    assert {k: v for k, v in header.items() if k != "configs"} == {
        k: v for k, v in version_header.items() if k != "configs"
    }


def rendered(latest: str, **options) -> str:
    """The latest version's card rendered again, with ``options`` changed in its manifest."""
    manifest = json.loads((pathlib.Path(latest) / "manifest.json").read_text())
    manifest["options"] = {**manifest["options"], **options}
    return version_card(manifest, statistics(latest), {}, {split: 0 for split in SPLITS})


def test_the_card_names_the_pool_and_the_version_and_code_it_was_made_with(two_versions):
    _, _, latest = two_versions
    manifest = json.loads((pathlib.Path(latest) / "manifest.json").read_text())
    _, body = front_matter(pathlib.Path(dataset_path(latest, "README.md")))
    assert manifest["options"]["decoy_pool"] == ""  # the strategy's own: split
    assert "| `--decoy_pool` | `split` |" in body
    assert "| `--decoy_pool` | `all` |" in rendered(latest, decoy_pool="all")
    assert f"Version `{manifest['version']}`" in body
    assert f"dmc-datasets {manifest['code']['versions']['dmc-datasets']}" in body
    commit = manifest["code"]["git_commit"]
    assert f"git commit `{commit}`" in body if commit else "no git commit" in body


def test_each_strategys_card_counts_its_decoys(two_versions):
    _, _, latest = two_versions
    for name, strategy in STRATEGIES.items():
        body = rendered(latest, decoys=name)
        decoys = strategy.num_options - 1
        assert (f"{decoys} *decoys*," if decoys > 1 else "1 *decoy*,") in body, name
        assert "decoy(s)" not in body and "*decoy*s" not in body


def test_the_cards_chance_band_is_the_verdicts_rule(two_versions):
    _, _, latest = two_versions
    verdict = statistics(latest)["text_only_audit"]["verdict"]
    _, body = front_matter(pathlib.Path(dataset_path(latest, "README.md")))
    low, high = map(float, re.search(r"([\d.]+)% to ([\d.]+)%", body).groups())
    assert low < 20 < high  # five options: chance 20%
    assert (low <= round(100 * verdict["accuracy"], 1) <= high) == verdict["at_chance"]
    assert f"{verdict['total']:,} instances" in body and "Anything above" not in body


def test_the_card_has_a_row_per_field_and_explains_repeated_targets(two_versions):
    _, _, latest = two_versions
    _, body = front_matter(pathlib.Path(dataset_path(latest, "README.md")))
    rows = dict(re.findall(r"^\| `(\w+)` \| (`list<\w+>` \(\d\)|`\w+`) \|", body, re.MULTILINE))
    assert list(rows)[: len(FIELDS)] == [field.name for field in FIELDS]
    assert rows["options"] == "`list<string>` (5)" and rows["decoy_sim_pv"] == "`list<float64>` (4)"
    ids = [row["example_id"] for split in SPLITS for row in read_parquet(latest, split)]
    assert any(re.fullmatch(r"\d+_\d+\.\d+", i) for i in ids)  # a caption in several sets
    assert "'.2', '.3'" in next(line for line in body.splitlines() if "| `example_id` |" in line)


def test_the_card_says_why_train_decoys_are_closer(two_versions):
    _, _, latest = two_versions
    values = statistics(latest)["splits"]
    _, body = front_matter(pathlib.Path(dataset_path(latest, "README.md")))
    for split in SPLITS:
        assert f"{split} {values[split]['coverage']['captions']:,}" in body
        assert f"{split} {values[split]['decoys']['sim_pv']['mean']:.3f}" in body
    assert values["train"]["coverage"]["captions"] > values["dev"]["coverage"]["captions"]


def test_the_licence_and_citations_follow_the_input(two_versions):
    _, _, latest = two_versions
    manifest = json.loads((pathlib.Path(latest) / "manifest.json").read_text())
    corpora = [entry for entry in manifest["inputs"] if "synthetic" in entry]
    assert [entry["synthetic"] for entry in corpora] == [True]
    assert len(manifest["inputs"]) == 2  # and the validity model's weights
    assert corpus(manifest).license == "other"
    coco = {**manifest, "inputs": [{**corpora[0], "synthetic": False}]}
    assert corpus(coco).license == manifest["options"]["captions_license"] == "cc-by-4.0"
    assert "@inproceedings{lin2014coco" in version_card(
        coco, statistics(latest), {}, {split: 0 for split in SPLITS}
    )
    # Flickr token files, and another language's captions, are not COCO's: not cited as such
    flickr = {**coco, "inputs": [{**coco["inputs"][0], "path": "/data/results_20130124.token"}]}
    german = {**coco, "language": language_record(LANGUAGES["de"])}
    for other in (flickr, german):
        assert corpus(other).license == "cc-by-4.0" and corpus(other).tag != "coco"
        card = version_card(other, statistics(latest), {}, {split: 0 for split in SPLITS})
        assert "lin2014coco" not in card and "COCO's captions" not in card
    real = pathlib.Path(__file__).resolve().parents[2] / "shared/data/coco/captions_val2017.json"
    if real.exists():  # COCO's own file is not the synthetic corpus
        with open(real, "rb") as handle:
            assert not is_synthetic(handle.read(HEAD_BYTES))


def test_a_producers_card_section_ends_the_version_card_and_the_root_card(two_versions):
    """A human filter's word (``dmc-rate filter``) reaches the root's card through the manifest."""
    _, _, latest = two_versions
    manifest = json.loads((pathlib.Path(latest) / "manifest.json").read_text())
    manifest[CARD_SECTION] = "\n## Human filter\n\nA subset of another version.\n"
    sizes = {split: 0 for split in SPLITS}
    for card in (
        version_card(manifest, statistics(latest), {}, sizes),
        root_card(manifest, statistics(latest), {}, sizes, "versions/v/dataset"),
    ):
        assert card.endswith(manifest[CARD_SECTION])
