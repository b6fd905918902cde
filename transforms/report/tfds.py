"""TensorFlow Datasets' metadata beside the TFRecord shards, without TensorFlow.

``tfds.builder_from_directory("<version>/dataset/tfrecord")`` reads a folder that
holds ``dataset_info.json`` (TFDS's ``DatasetInfo`` proto as JSON: camelCase names,
int64 as strings) and ``features.json`` (its ``FeaturesDict`` proto as JSON). Each
split's ``filepathTemplate`` names the shards where they already are
(``<split>/<split>-00000-of-00001.tfrecord``), so nothing is renamed or copied.
Every field is a TFDS ``Tensor``: the shape and dtype
:func:`schemas.tf_example.tfrecord_feature_spec` gives it, which is what TFDS parses
the ``tf.train.Example`` with. The formats are those of tensorflow-datasets 4.9
(``core/proto/dataset_info.proto``, ``core/proto/feature.proto``).
"""

import re

from schemas.layout import SHARD_NAME
from schemas.tf_example import tfrecord_feature_spec
from transforms.corpus.split import SPLITS

# the shards' path under the TFRecord folder, in naming.ShardedFileTemplate's variables
FILEPATH_TEMPLATE = "{SPLIT}/{SPLIT}-{SHARD_X_OF_Y}.tfrecord"
_TENSOR = "tensorflow_datasets.core.features.tensor_feature.Tensor"
_FEATURES_DICT = "tensorflow_datasets.core.features.features_dict.FeaturesDict"


def tfds_name(strategy: str) -> str:
    """A TFDS dataset name (snake case) for a strategy's datasets.

    >>> tfds_name("closed-sets")
    'dmc_closed_sets'
    """
    return "dmc_" + re.sub(r"[^a-z0-9_]", "_", strategy.lower())


def tfds_features(num_options: int) -> dict:
    """``features.json``: one fixed-shape ``Tensor`` per instance field."""
    features = {
        name: {
            "pythonClassName": _TENSOR,
            "tensor": {
                # a proto's repeated int64 is a list of strings in JSON; a scalar has none
                "shape": {"dimensions": [str(n) for n in spec["shape"]]} if spec["shape"] else {},
                "dtype": spec["dtype"],
                "encoding": "none",
            },
        }
        for name, spec in tfrecord_feature_spec(num_options).items()
    }
    return {"pythonClassName": _FEATURES_DICT, "featuresDict": {"features": features}}


def tfds_dataset_info(
    *,
    name: str,
    package: str,
    description: str,
    license: str,
    citation: str,
    shards: list[dict],
) -> dict:
    """``dataset_info.json``. ``package``: the code's version, MAJOR.MINOR.PATCH as TFDS wants
    (the version's own name is in the description); ``shards``: the manifest's entries
    (``path`` relative to the dataset folder, ``bytes``, ``records``) of the TFRecord shards.
    """
    by_split: dict[str, list[dict]] = {}
    for entry in sorted(shards, key=lambda e: e["path"]):
        by_split.setdefault(SHARD_NAME.fullmatch(entry["path"])["prefix"], []).append(entry)
    return {
        "name": name,
        "version": package,
        "description": description,
        "citation": citation,
        "fileFormat": "tfrecord",
        "redistributionInfo": {"license": license},
        "splits": [
            {
                "name": split,
                "shardLengths": [str(entry["records"]) for entry in by_split[split]],
                "numBytes": str(sum(entry["bytes"] for entry in by_split[split])),
                "filepathTemplate": FILEPATH_TEMPLATE,
            }
            for split in SPLITS
            if split in by_split
        ],
    }
