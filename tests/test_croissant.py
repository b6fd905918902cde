"""The metadata other ecosystems read: Croissant's ``metadata.json`` and TFDS's files.

Croissant is checked by its own loader, offline: ``mlcroissant`` validates the
JSON-LD and reads every split's records from the Parquet shards it names, which must
be the rows pyarrow reads. TFDS needs TensorFlow to read (1.8 GB, not a CI
dependency), so its files are compared with ``tests/data/tfds/``: what
tensorflow-datasets 4.9.10 itself wrote (``builder_from_directory(...)
.info.write_to_directory(...)``) after reading a version's files, and its records,
with ``as_dataset``. docs/output.md has that command. One entry was added by hand since:
``option_originals`` (2026-11-27, no TensorFlow here), the twin of ``options``' entry, a
list of k strings as TFDS writes every such field.
"""

import json
import math
import os

import mlcroissant
import pyarrow.parquet as pq
import pytest
from mlcroissant._src.core.rdf import make_context

from pipelines.store.metadata import dataset_shards, write_metadata
from pipelines.store.versions import read_manifest
from schemas.instance import FIELDS
from schemas.layout import (
    CROISSANT_FILE,
    DATASET,
    PARQUET,
    TFDS_FEATURES_FILE,
    TFDS_INFO_FILE,
    TFRECORD,
    dataset_path,
    shard_pattern,
)
from transforms.corpus.split import SPLITS
from transforms.files import list_files
from transforms.report.card import cited, corpus
from transforms.report.croissant import CROISSANT, PARQUET_FORMAT, license_url
from transforms.report.tfds import tfds_dataset_info, tfds_features
from transforms.strategies.registry import STRATEGIES

TFDS_WRITTEN = os.path.join(os.path.dirname(__file__), "data", "tfds")
# Recommended, not required; a run's date would make reruns differ (croissant.py)
NO_DATE = 'Property "https://schema.org/datePublished" is recommended, but does not exist.'


def plain(value):
    """A value as mlcroissant or pyarrow gives it, comparable: text, and NaN as None."""
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


@pytest.fixture(scope="module")
def croissant(closed_sets_dataset) -> tuple[str, mlcroissant.Dataset]:
    directory, _ = closed_sets_dataset
    return directory, mlcroissant.Dataset(jsonld=dataset_path(directory, CROISSANT_FILE))


def test_metadata_is_valid_croissant(croissant):
    directory, dataset = croissant
    issues = dataset.metadata.ctx.issues
    assert not issues.errors
    assert [warning.split("] ", 1)[1] for warning in issues.warnings] == [NO_DATE]
    # the card's licence and citations: the synthetic corpus is the project's own text, under
    # no licence a URL names, so its licence is the card's word, named by the card's id
    manifest = read_manifest(directory)
    [license] = dataset.metadata.license
    assert (license.name, license.description) == ("other", corpus(manifest).licence)
    assert dataset.metadata.name == "dmc-synthetic-closed_sets"
    assert dataset.metadata.cite_as == "\n\n".join(cited(manifest))
    assert "Ding" in dataset.metadata.cite_as and "COCO" not in dataset.metadata.cite_as
    name = os.path.basename(directory)
    assert dataset.metadata.version.endswith(f"+{name}")


def through_mlcroissant(manifest: dict, written: dict) -> dict:
    """What mlcroissant's own API (``mlc.Metadata(...).to_json()``) writes for the version of
    ``manifest``: its shards and fields from the manifest and the instance schema, its prose
    and scalars (``written``'s, what the other tests check) as given."""
    # mlc.Context starts with Croissant 1.0's @context; 1.1's comes from this private helper
    ctx = mlcroissant.Context(conforms_to=CROISSANT)
    ctx.rdf = mlcroissant.Rdf(context=make_context(ctx))
    shards = sorted(dataset_shards(manifest["files"], PARQUET), key=lambda entry: entry["path"])
    splits = [s for s in SPLITS if any(e["path"].startswith(f"{PARQUET}/{s}/") for e in shards)]
    num_options = STRATEGIES[manifest["options"]["decoys"]].num_options
    described = {node["@id"]: node["description"] for node in written["recordSet"]}
    described |= {node["@id"]: node.get("description") for node in written["distribution"]}
    types = {
        "string": mlcroissant.DataType.TEXT,
        "int64": mlcroissant.DataType.INTEGER,
        "float64": mlcroissant.DataType.FLOAT,
    }

    def field(split: str, field) -> mlcroissant.Field:
        return mlcroissant.Field(
            ctx=ctx,
            id=f"{split}/{field.name}",
            name=field.name,
            description=field.doc,
            data_types=[types[field.kind]],
            source=mlcroissant.Source(
                ctx=ctx,
                file_set=f"{PARQUET}/{split}",
                extract=mlcroissant.Extract(ctx=ctx, column=field.name),
            ),
            is_array=True if field.repeated else None,
            array_shape=str(field.length(num_options)) if field.repeated else None,
        )

    files = [
        mlcroissant.FileObject(
            ctx=ctx,
            id=entry["path"],
            name=entry["path"],
            content_url=entry["path"],
            content_size=f"{entry['bytes']} B",
            encoding_formats=[PARQUET_FORMAT],
            sha256=entry["sha256"],
        )
        for entry in shards
    ]
    sets = [
        mlcroissant.FileSet(
            ctx=ctx,
            id=f"{PARQUET}/{split}",
            name=f"{PARQUET}/{split}",
            description=described[f"{PARQUET}/{split}"],
            encoding_formats=[PARQUET_FORMAT],
            includes=[f"{PARQUET}/{split}/{split}-*.parquet"],
        )
        for split in splits
    ]
    records = [
        mlcroissant.RecordSet(
            ctx=ctx,
            id=split,
            name=split,
            description=described[split],
            key=[f"{split}/example_id"],
            fields=[field(split, one) for one in FIELDS],
        )
        for split in splits
    ]
    source = corpus(manifest)
    url = license_url(source.license)
    license = url or mlcroissant.CreativeWork(
        ctx=ctx, name=source.license, description=source.licence
    )
    language = manifest.get("language", {}).get("code")
    metadata = mlcroissant.Metadata(  # raises on a validation error
        ctx=ctx,
        name=written["name"],
        description=written["description"],
        version=written["version"],
        license=[license],
        cite_as="\n\n".join(cited(manifest)),
        in_language=[language] if language else None,
        distribution=[*files, *sets],
        record_sets=records,
        # schema.org's identifier is not among mlcroissant's properties
        extra_properties={"identifier": written["identifier"]},
    )
    return metadata.to_json()


def test_croissant_is_what_mlcroissants_api_writes(croissant):
    """The hand-built JSON-LD (croissant.py says why) is the document mlcroissant's Python API
    makes of the same version: the same keys, values, @context and licence node."""
    directory, _ = croissant
    with open(dataset_path(directory, CROISSANT_FILE), encoding="utf-8") as handle:
        written = json.load(handle)
    assert written == through_mlcroissant(read_manifest(directory), written)


def manifest_of(inputs: list[dict]) -> dict:
    """The parts of a manifest ``write_metadata`` reads, for a version of ``inputs``."""
    return {
        "inputs": inputs,
        "options": {"decoys": "closed_sets", "captions_license": "cc-by-4.0"},
        "code": {"versions": {"dmc-datasets": "0.1.0"}},
    }


CORPORA = {
    "coco": [{"path": "/in/captions_train2014.json", "bytes": 1, "synthetic": False}],
    "flickr": [{"path": "/in/results_20130124.token", "bytes": 1, "synthetic": False}],
    "synthetic": [{"path": "/in/captions_synthetic.json", "bytes": 1, "synthetic": True}],
}


def test_each_corpus_names_its_own_dataset_and_a_licence_url(tmp_path):
    """COCO's, Flickr's and the synthetic corpus's datasets of one strategy differ in name;
    the licence of a corpus under an SPDX licence is its URL."""
    shard = {"path": f"{DATASET}/{PARQUET}/dev/dev-00000-of-00001.parquet", "bytes": 1}
    written = {}
    for name, inputs in CORPORA.items():
        directory = str(tmp_path / name)
        write_metadata(directory, "v1", manifest_of(inputs), [{**shard, "sha256": "0" * 64}])
        path = dataset_path(directory, CROISSANT_FILE)
        assert not mlcroissant.Dataset(jsonld=path).metadata.ctx.issues.errors
        with open(path, encoding="utf-8") as handle:
            written[name] = json.load(handle)
    names = {name: metadata["name"] for name, metadata in written.items()}
    assert names == {
        "coco": "dmc-coco-closed_sets",
        "flickr": "dmc-image-captions-closed_sets",
        "synthetic": "dmc-synthetic-closed_sets",
    }
    cc_by = "https://spdx.org/licenses/CC-BY-4.0.html"
    assert written["coco"]["license"] == written["flickr"]["license"] == cc_by
    assert written["synthetic"]["license"]["name"] == "other"


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_croissant_records_are_the_parquet_rows(croissant, split):
    directory, dataset = croissant
    read = [
        {name.split("/", 1)[1]: plain(value) for name, value in record.items()}
        for record in dataset.records(split)
    ]
    rows = [
        {name: plain(value) for name, value in row.items()}
        for path in list_files(shard_pattern(directory, PARQUET, split))
        for row in pq.read_table(path).to_pylist()
    ]
    assert len(read) == len(rows) > 0
    assert sorted(read, key=lambda r: r["example_id"]) == sorted(
        rows, key=lambda r: r["example_id"]
    )


def test_croissant_lists_each_parquet_shard_as_the_manifest_does(croissant):
    directory, dataset = croissant
    manifest = {entry["path"]: entry for entry in read_manifest(directory)["files"]}
    listed = {
        f"{DATASET}/{file.content_url}": file.sha256 for file in dataset.metadata.file_objects
    }
    shards = {path for path in manifest if path.startswith(f"{DATASET}/{PARQUET}/")}
    assert set(listed) == shards
    assert all(listed[path] == manifest[path]["sha256"] for path in shards)
    # the metadata is part of the version: listed, so a changed byte is refused
    assert f"{DATASET}/{CROISSANT_FILE}" in manifest


def test_croissant_fields_are_the_instance_schema(croissant):
    _, dataset = croissant
    for record_set in dataset.metadata.record_sets:
        assert [field.name for field in record_set.fields] == [field.name for field in FIELDS]
        arrays = {field.name: bool(field.is_array) for field in record_set.fields}
        assert arrays == {field.name: field.repeated for field in FIELDS}


def written_by_tfds(name: str) -> dict:
    with open(os.path.join(TFDS_WRITTEN, name), encoding="utf-8") as handle:
        return json.load(handle)


def test_tfds_files_are_what_tfds_writes():
    """TFDS read our files and wrote these back: ours must be the same, given its values."""
    assert tfds_features(5) == written_by_tfds("features.json")
    written = written_by_tfds("dataset_info.json")
    shards = [
        {
            "path": f"{split['name']}/{split['name']}-00000-of-00001.tfrecord",
            "records": int(split["shardLengths"][0]),
            "bytes": int(split["numBytes"]),
        }
        for split in written["splits"]
    ]
    ours = tfds_dataset_info(
        name=written["name"],
        package=written["version"],
        description=written["description"],
        license=written["redistributionInfo"]["license"],
        citation=written["citation"],
        shards=shards,
    )
    # TFDS adds the module that read it, when it writes the info back
    assert ours == {key: value for key, value in written.items() if key != "moduleName"}


def test_tfds_files_describe_the_tfrecord_shards(closed_sets_dataset):
    directory, _ = closed_sets_dataset
    with open(dataset_path(directory, TFDS_FEATURES_FILE), encoding="utf-8") as handle:
        assert json.load(handle) == tfds_features(5)
    with open(dataset_path(directory, TFDS_INFO_FILE), encoding="utf-8") as handle:
        info = json.load(handle)
    statistics = read_manifest(directory)["statistics"]["splits"]
    for split in info["splits"]:
        lengths = split["shardLengths"]
        # TFDS's naming.ShardedFileTemplate, relative to the folder it reads
        paths = [
            split["filepathTemplate"].format(
                SPLIT=split["name"], SHARD_X_OF_Y=f"{shard:05d}-of-{len(lengths):05d}"
            )
            for shard in range(len(lengths))
        ]
        folder = dataset_path(directory, TFRECORD)
        found = list_files(shard_pattern(directory, TFRECORD, split["name"]))
        assert sorted(os.path.join(folder, path) for path in paths) == sorted(found)
        assert sum(int(length) for length in lengths) == statistics[split["name"]]["instances"]
