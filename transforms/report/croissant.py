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

Written as a dict, not through mlcroissant's Python API (``mlc.Metadata(...).to_json()``):
mlcroissant is a test dependency only (``setup.py``'s ``test`` extra; it would bring rdflib,
networkx and pandas to every worker), and writing a version must not need it. The API could
express all of this (``identifier`` only as an extra property, the 1.1 ``@context`` only
through a private helper); ``tests/test_croissant.py`` builds the document with it from the
same inputs and checks its ``to_json()`` is this dict, then validates it and loads its
records with mlcroissant.
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
# The SPDX licences among HuggingFace's licence ids (the card's ``license``,
# ``--captions_license``), keyed by that id: Croissant's ``license`` is a URL, and spdx.org's
# pages are named in SPDX's spelling. HuggingFace's id is SPDX's in lower case, but for the
# three Open Data Commons licences added after.
_SPDX = (
    "Apache-2.0",
    "MIT",
    "Unlicense",
    "CC0-1.0",
    "CC-BY-2.0",
    "CC-BY-2.5",
    "CC-BY-3.0",
    "CC-BY-4.0",
    "CC-BY-SA-3.0",
    "CC-BY-SA-4.0",
    "CC-BY-ND-4.0",
    "CC-BY-NC-2.0",
    "CC-BY-NC-3.0",
    "CC-BY-NC-4.0",
    "CC-BY-NC-SA-2.0",
    "CC-BY-NC-SA-3.0",
    "CC-BY-NC-SA-4.0",
    "CC-BY-NC-ND-3.0",
    "CC-BY-NC-ND-4.0",
    "CDLA-Permissive-1.0",
    "CDLA-Permissive-2.0",
    "CDLA-Sharing-1.0",
)
SPDX_IDS = {spdx.lower(): spdx for spdx in _SPDX} | {
    "odc-by": "ODC-By-1.0",
    "odbl": "ODbL-1.0",
    "pddl": "PDDL-1.0",
}


def license_url(license: str) -> str | None:
    """spdx.org's page of a HuggingFace licence id; None for one that is no SPDX licence
    (``other``, ``unknown``) or that this table does not know.

    >>> license_url("cc-by-4.0")
    'https://spdx.org/licenses/CC-BY-4.0.html'
    >>> license_url("other") is None
    True
    """
    spdx = SPDX_IDS.get(license)
    return f"https://spdx.org/licenses/{spdx}.html" if spdx else None


def croissant_license(license: str, terms: str | None = None) -> str | dict:
    """Croissant's ``license`` for a HuggingFace licence id: its SPDX URL where it has one.
    Otherwise (the synthetic corpus's ``other``: no corpus licence applies) a schema.org
    CreativeWork named by the id and described by ``terms``, the card's Licence section:
    no URL names those terms, a made-up one would be a wrong link, and the bare id
    ``other`` would tell a reader nothing.

    >>> croissant_license("cc-by-4.0", "COCO's captions")
    'https://spdx.org/licenses/CC-BY-4.0.html'
    >>> croissant_license("other", "The project's own text.")["name"]
    'other'
    """
    url = license_url(license)
    if url:
        return url
    return {
        "@type": "sc:CreativeWork",
        "name": license,
        **({"description": terms} if terms else {}),
    }


def croissant_name(corpus: str, strategy: str) -> str:
    """The dataset's name, from its corpus's tag (the card's) and the strategy, so that
    COCO's, another corpus's (Flickr, caption lines) and the synthetic corpus's datasets
    differ. Versions of one corpus and strategy share it, as versions of a dataset do in
    schema.org: ``version`` and ``identifier`` tell them apart.

    >>> croissant_name("coco", "closed_sets")
    'dmc-coco-closed_sets'
    """
    return f"dmc-{corpus}-{strategy}"


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
    license_terms: str | None = None,
) -> dict:
    """The JSON-LD of one version's dataset folder.

    ``name``: :func:`croissant_name`; ``version``: the version's name; ``package``: the
    version of the code that wrote it. ``license``: the corpus's HuggingFace licence id,
    ``license_terms`` the card's word on it (:func:`croissant_license`).
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
        "license": croissant_license(license, license_terms),
        "citeAs": citation,
        **({"inLanguage": language} if language else {}),
        "distribution": [
            *(_shard_object(entry) for entry in sorted(shards, key=lambda e: e["path"])),
            *(_split_files(split) for split in splits),
        ],
        "recordSet": [_record_set(split, num_options) for split in splits],
    }
