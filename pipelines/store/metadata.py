"""The metadata other ecosystems read, written into a version's dataset folder as it is finished.

Croissant's ``dataset/metadata.json`` (:mod:`transforms.report.croissant`) and TFDS's
``dataset/tfrecord/{dataset_info,features}.json`` (:mod:`transforms.report.tfds`),
from the manifest and the entries (size, checksum, record count) of the shards as
written, which the manifest's inventory then reuses: a shard is read once as a version
is finished.
"""

from schemas.layout import (
    CROISSANT_FILE,
    DATASET,
    PARQUET,
    SHARD_NAME,
    SUFFIXES,
    TFDS_FEATURES_FILE,
    TFDS_INFO_FILE,
    TFRECORD,
    dataset_path,
)
from transforms.files import write_json
from transforms.report.card import cited, corpus
from transforms.report.croissant import croissant_metadata, croissant_name
from transforms.report.tfds import tfds_dataset_info, tfds_features, tfds_name
from transforms.strategies.registry import STRATEGIES


def is_shard(path: str, form: str) -> bool:
    """Whether ``path`` (relative to the version) is a shard of format ``form``.

    >>> is_shard("dataset/parquet/dev/dev-00000-of-00001.parquet", "parquet")
    True
    >>> is_shard("dataset/tfrecord/feature_spec.json", "tfrecord")
    False
    """
    match = SHARD_NAME.fullmatch(path)
    return (
        match is not None
        and match["dir"].startswith(f"{DATASET}/{form}/")
        and match["suffix"] == SUFFIXES[form]
    )


def dataset_shards(files: list[dict], form: str) -> list[dict]:
    """The entries of one format's shards among the version's ``files``, ``path`` relative
    to the dataset folder."""
    prefix = f"{DATASET}/"
    return [
        {**entry, "path": entry["path"][len(prefix) :]}
        for entry in files
        if is_shard(entry["path"], form)
    ]


METADATA_FILES = (CROISSANT_FILE, TFDS_INFO_FILE, TFDS_FEATURES_FILE)  # in the dataset folder


def write_metadata(directory: str, name: str, manifest: dict, files: list[dict]) -> list[str]:
    """Croissant and TFDS metadata of version ``name`` in ``directory``, whose ``files``
    (their manifest entries) hold the shards; the files written, relative to the version
    (a version made from another, as the rating filter makes one, had them already)."""
    options = manifest["options"]
    strategy = STRATEGIES[options["decoys"]]
    package = manifest["code"]["versions"]["dmc-datasets"]
    description = (
        f"Multiple-choice image captioning (MC-IC), version {name}: each instance is an image "
        f"and {strategy.num_options} captions, its own and {strategy.num_options - 1} decoys "
        f"({strategy.name}: {strategy.summary})."
    )
    source = corpus(manifest)
    about = {
        "description": description,
        "license": source.license,
        "citation": "\n\n".join(cited(manifest)),
    }
    croissant = croissant_metadata(
        name=croissant_name(source.tag, options["decoys"]),
        version=name,
        license_terms=source.licence,
        package=package,
        num_options=strategy.num_options,
        shards=dataset_shards(files, PARQUET),
        language=manifest.get("language", {}).get("code"),
        **about,
    )
    write_json(dataset_path(directory, CROISSANT_FILE), croissant)
    info = tfds_dataset_info(
        name=tfds_name(options["decoys"]),
        package=package,
        shards=dataset_shards(files, TFRECORD),
        **about,
    )
    write_json(dataset_path(directory, TFDS_INFO_FILE), info)
    write_json(dataset_path(directory, TFDS_FEATURES_FILE), tfds_features(strategy.num_options))
    return [f"{DATASET}/{path}" for path in METADATA_FILES]
