"""Croissant ``metadata.json``: the version's dataset described for other ecosystems' loaders.

Croissant (mlcommons.org/croissant, JSON-LD on schema.org) is what dataset search,
HuggingFace, Kaggle and OpenML read, and what ``mlcroissant`` loads records from.
The file sits in the version's ``dataset/`` folder, beside what it describes, so it
travels with it. Its ``contentUrl``\\ s are relative to that folder, and no dataset
``url`` is written: where the folder will be published is unknown when it is
written (a local disk, a bucket, a hub), and a placeholder would be a wrong link.
Whoever publishes it adds ``url``. Nothing in it depends on where or when the run was,
so reruns write the same bytes (so no ``datePublished`` either).

Distribution: one FileObject per Parquet shard, with its sha256 and size (Croissant
checks a FileObject's checksum), and one FileSet per split (its shards' glob), which
the split's RecordSet reads; the fields come from :data:`schemas.instance.FIELDS`.
The JSON-LD ``@context`` is ``assets/croissant_context.json``, Croissant 1.1's own.
"""

import json
import re

from schemas.instance import FIELDS
from schemas.layout import PARQUET, SHARD_NAME, relative_shard_pattern
from transforms.corpus.split import SPLITS
from transforms.report import assets

CROISSANT = "http://mlcommons.org/croissant/1.1"
PARQUET_FORMAT = "application/x-parquet"
_DATA_TYPES = {"string": "sc:Text", "int64": "sc:Integer", "float64": "sc:Float"}
# semver build metadata (what may follow "+") holds letters, digits, hyphens and dots
_NOT_IN_BUILD = re.compile(r"[^0-9A-Za-z.-]")


def croissant_version(package: str, name: str) -> str:
    """The version name as semver build metadata on the package's version: Croissant wants
    MAJOR.MINOR.PATCH, and the name (``identifier``) tells versions of one release apart.

    >>> croissant_version("0.1.0", "nightly_v2-bcf0af6e9e10.2")
    '0.1.0+nightly-v2-bcf0af6e9e10.2'
    """
    return f"{package}+{_NOT_IN_BUILD.sub('-', name)}"


def _shard_object(entry: dict) -> dict:
    return {
        "@type": "cr:FileObject",
        "@id": entry["path"],
        "name": entry["path"],
        "contentUrl": entry["path"],
        "contentSize": f"{entry['bytes']} B",
        "encodingFormat": PARQUET_FORMAT,
        "sha256": entry["sha256"],
    }


def _split_files(split: str) -> dict:
    return {
        "@type": "cr:FileSet",
        "@id": f"{PARQUET}/{split}",
        "name": f"{PARQUET}/{split}",
        "description": f"The {split} split's Parquet shards, each listed with its sha256.",
        "encodingFormat": PARQUET_FORMAT,
        "includes": relative_shard_pattern(PARQUET, split),
    }


def _field(split: str, field, num_options: int) -> dict:
    described = {
        "@type": "cr:Field",
        "@id": f"{split}/{field.name}",
        "name": field.name,
        "description": field.doc,
        "dataType": _DATA_TYPES[field.kind],
        "source": {"fileSet": {"@id": f"{PARQUET}/{split}"}, "extract": {"column": field.name}},
    }
    if field.repeated:
        described |= {"isArray": True, "arrayShape": str(field.length(num_options))}
    return described


def _record_set(split: str, num_options: int) -> dict:
    return {
        "@type": "cr:RecordSet",
        "@id": split,
        "name": split,
        "description": f"The {split} split's instances, one per Parquet row.",
        "key": {"@id": f"{split}/example_id"},
        "field": [_field(split, field, num_options) for field in FIELDS],
    }


def croissant_metadata(
    *,
    name: str,
    version: str,
    package: str,
    description: str,
    license: str,
    citation: str,
    num_options: int,
    shards: list[dict],
    language: str | None = None,
) -> dict:
    """The JSON-LD of one version's dataset folder.

    ``version``: the version's name; ``package``: the version of the code that wrote it.
    ``shards``: the manifest's entries (``path`` relative to the dataset folder, ``bytes``,
    ``sha256``) of its Parquet shards; a split without shards has no record set.
    ``language``: the captions' (schema.org ``inLanguage``), given for a version whose
    manifest records one (not English: its metadata is what it was before --language).
    """
    present = {SHARD_NAME.fullmatch(entry["path"])["prefix"] for entry in shards}
    splits = [split for split in SPLITS if split in present]
    return {
        # Croissant 1.1's own @context, as its examples and mlcroissant spell it
        "@context": json.loads(assets.read("croissant_context.json")),
        "@type": "sc:Dataset",
        "conformsTo": CROISSANT,
        "name": name,
        "description": description,
        "identifier": version,
        "version": croissant_version(package, version),
        "license": license,
        "citeAs": citation,
        **({"inLanguage": language} if language else {}),
        "distribution": [
            *(_shard_object(entry) for entry in sorted(shards, key=lambda e: e["path"])),
            *(_split_files(split) for split in splits),
        ],
        "recordSet": [_record_set(split, num_options) for split in splits],
    }
