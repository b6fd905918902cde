"""The TFRecord files, read by a parser written from the specs
(tests/support/tfrecord_reader.py)."""

import glob

import numpy as np

from schemas.instance import FIELDS
from schemas.layout import TFRECORD, shard_pattern
from tests.support.dataset_checks import read_parquet
from tests.support.tfrecord_reader import masked_crc, parse_example, read_records


def test_crc32c_reference_vector():
    from tests.support.tfrecord_reader import crc32c

    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert masked_crc(b"") == ((0 >> 15 | 0 << 17) + 0xA282EAD8) & 0xFFFFFFFF


def test_every_schema_field_is_in_every_record_with_parquet_values(small_dataset):
    output, _ = small_dataset
    for split in ("dev", "test"):
        rows = {row["example_id"]: row for row in read_parquet(output, split)}
        paths = glob.glob(shard_pattern(output, TFRECORD, split))
        records = [parse_example(r) for path in paths for r in read_records(path)]
        assert len(records) == len(rows) > 0
        for features in records:
            assert set(features) == {field.name for field in FIELDS}
            row = rows[features["example_id"][0].decode()]
            for field in FIELDS:
                values = features[field.name]
                expected = row[field.name] if field.repeated else [row[field.name]]
                if field.kind == "string":
                    assert [v.decode("utf-8") for v in values] == expected
                elif field.kind == "int64":
                    assert values == expected
                else:  # FloatList is float32
                    np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-7)
