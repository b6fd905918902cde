"""A TFRecord + tf.train.Example reader written from the formats' specs.

Independent of the writer on purpose: it shares no code with Beam's
WriteToTFRecord or with schemas/tf_example.py, so a test that reads our files
with it checks the bytes, not our own round trip.
"""

import struct

_CRC_TABLE = []
for _byte in range(256):
    _crc = _byte
    for _ in range(8):
        _crc = (_crc >> 1) ^ 0x82F63B78 if _crc & 1 else _crc >> 1
    _CRC_TABLE.append(_crc)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path: str) -> list[bytes]:
    """TFRecord framing: length, masked crc(length), data, masked crc(data)."""
    records = []
    with open(path, "rb") as handle:
        data = handle.read()
    position = 0
    while position < len(data):
        header = data[position : position + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[position + 8 : position + 12])
        assert length_crc == masked_crc(header), f"{path}: bad length crc at {position}"
        body = data[position + 12 : position + 12 + length]
        (body_crc,) = struct.unpack("<I", data[position + 12 + length : position + 16 + length])
        assert body_crc == masked_crc(body), f"{path}: bad data crc at {position}"
        records.append(body)
        position += 16 + length
    return records


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, position


def _fields(data: bytes):
    """(field number, wire type, value) for each field of a message."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = _varint(data, position)
        elif wire_type == 1:
            value, position = data[position : position + 8], position + 8
        elif wire_type == 2:
            length, position = _varint(data, position)
            value, position = data[position : position + length], position + length
        elif wire_type == 5:
            value, position = data[position : position + 4], position + 4
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        yield number, wire_type, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _list_values(kind: int, data: bytes) -> list:
    values = []
    for number, wire_type, value in _fields(data):
        assert number == 1
        if kind == 1:  # BytesList
            values.append(bytes(value))
        elif kind == 2:  # FloatList, packed or not
            values.extend(struct.unpack(f"<{len(value) // 4}f", value))
        elif wire_type == 2:  # Int64List, packed
            position = 0
            while position < len(value):
                item, position = _varint(value, position)
                values.append(_signed(item))
        else:
            values.append(_signed(value))
    return values


def parse_example(data: bytes) -> dict[str, list]:
    """tf.train.Example bytes -> {feature name: list of values}."""
    features = {}
    for number, _, features_message in _fields(data):
        assert number == 1  # Example.features
        for entry_number, _, entry in _fields(features_message):
            assert entry_number == 1  # Features.feature (map entry)
            key, feature = "", b""
            for field_number, _, value in _fields(entry):
                if field_number == 1:
                    key = value.decode("utf-8")
                else:
                    feature = value
            values = []
            for kind, _, list_message in _fields(feature):
                values = _list_values(kind, list_message)
            features[key] = values
    return features
