"""``tf.train.Example`` and TFRecord framing without TensorFlow.

The message types are declared here from the same field numbers as
``tensorflow/core/example/{example,feature}.proto``, in a private descriptor
pool, so the writer needs only ``protobuf`` and the bytes are what
``tf.io.parse_single_example`` reads. Floats are stored as float32
(``FloatList``), as TensorFlow does; Parquet keeps float64.
"""

import struct

import google_crc32c
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from schemas.instance import FIELDS

_F = descriptor_pb2.FieldDescriptorProto


def _message(name: str, *fields: tuple[str, int, int, int, str], oneof: str | None = None):
    message = descriptor_pb2.DescriptorProto(name=name)
    if oneof:
        message.oneof_decl.add(name=oneof)
    for field_name, number, label, kind, type_name in fields:
        field = message.field.add(name=field_name, number=number, label=label, type=kind)
        if type_name:
            field.type_name = type_name
        if oneof:
            field.oneof_index = 0
        if kind in (_F.TYPE_FLOAT, _F.TYPE_INT64):
            field.options.packed = True
    return message


def _example_file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="dmc/tf_example.proto", package="tensorflow", syntax="proto3"
    )
    repeated, optional = _F.LABEL_REPEATED, _F.LABEL_OPTIONAL
    proto.message_type.extend(
        [
            _message("BytesList", ("value", 1, repeated, _F.TYPE_BYTES, "")),
            _message("FloatList", ("value", 1, repeated, _F.TYPE_FLOAT, "")),
            _message("Int64List", ("value", 1, repeated, _F.TYPE_INT64, "")),
            _message(
                "Feature",
                ("bytes_list", 1, optional, _F.TYPE_MESSAGE, ".tensorflow.BytesList"),
                ("float_list", 2, optional, _F.TYPE_MESSAGE, ".tensorflow.FloatList"),
                ("int64_list", 3, optional, _F.TYPE_MESSAGE, ".tensorflow.Int64List"),
                oneof="kind",
            ),
            _message("Example", ("features", 1, optional, _F.TYPE_MESSAGE, ".tensorflow.Features")),
        ]
    )
    features = _message(
        "Features", ("feature", 1, repeated, _F.TYPE_MESSAGE, ".tensorflow.Features.FeatureEntry")
    )
    entry = _message(
        "FeatureEntry",
        ("key", 1, optional, _F.TYPE_STRING, ""),
        ("value", 2, optional, _F.TYPE_MESSAGE, ".tensorflow.Feature"),
    )
    entry.options.map_entry = True
    features.nested_type.append(entry)
    proto.message_type.append(features)
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_example_file())
Example = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("tensorflow.Example"))

_LIST_OF_KIND = {"string": "bytes_list", "int64": "int64_list", "float64": "float_list"}


def to_tf_example(instance: dict) -> bytes:
    """Serialises an instance; scalars become one-element lists, as in TF."""
    example = Example()
    for field in FIELDS:
        values = instance[field.name] if field.repeated else [instance[field.name]]
        if field.kind == "string":
            values = [value.encode("utf-8") for value in values]
        getattr(example.features.feature[field.name], _LIST_OF_KIND[field.kind]).value.extend(
            values
        )
    return example.SerializeToString(deterministic=True)


_TF_DTYPES = {"string": "string", "int64": "int64", "float64": "float32"}


def tfrecord_feature_spec(num_options: int) -> dict[str, dict]:
    """How to parse the TFRecord files of a version whose instances have ``num_options``
    options, as plain data: no TensorFlow needed to read it.

    Every field is a ``tf.io.FixedLenFeature`` of the given shape and ``tf`` dtype;
    floats are float32 in TFRecord (Parquet keeps float64). With TensorFlow::

        spec = {name: tf.io.FixedLenFeature(f["shape"], getattr(tf, f["dtype"]))
                for name, f in tfrecord_feature_spec(5).items()}

    >>> tfrecord_feature_spec(5)["options"]
    {'kind': 'FixedLenFeature', 'shape': [5], 'dtype': 'string'}
    >>> tfrecord_feature_spec(2)["decoy_edits"]
    {'kind': 'FixedLenFeature', 'shape': [1], 'dtype': 'string'}
    >>> tfrecord_feature_spec(5)["label"]
    {'kind': 'FixedLenFeature', 'shape': [], 'dtype': 'int64'}
    """
    return {
        field.name: {
            "kind": "FixedLenFeature",
            "shape": [] if field.per is None else [field.length(num_options)],
            "dtype": _TF_DTYPES[field.kind],
        }
        for field in FIELDS
    }


def _masked_crc(data: bytes) -> bytes:
    crc = google_crc32c.value(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def tfrecord_frame(record: bytes) -> bytes:
    """One TFRecord: length, masked CRC-32C of the length, data, masked CRC-32C of the data."""
    length = struct.pack("<Q", len(record))
    return length + _masked_crc(length) + record + _masked_crc(record)
