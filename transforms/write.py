"""Writing instances: Parquet, TFRecord and MCIC text, per split.

Layout under the output directory, for each split in train/dev/test::

    <split>/instances-SSSSS-of-NNNNN.parquet
    <split>/instances-SSSSS-of-NNNNN.tfrecord
    <split>/mcic-SSSSS-of-NNNNN.txt
"""

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas.instance import ARROW_SCHEMA, mcic_line
from schemas.tf_example import to_tf_example
from transforms.split import SPLITS


class WriteSplit(beam.PTransform):
    """One split's instances -> its three formats, the same records in each."""

    def __init__(self, *, directory: str, num_shards: int):
        super().__init__()
        self._directory, self._num_shards = directory, num_shards

    def expand(self, instances):
        prefix = FileSystems.join(self._directory, "instances")
        parquet = instances | "Parquet" >> beam.io.WriteToParquet(
            prefix, ARROW_SCHEMA, file_name_suffix=".parquet", num_shards=self._num_shards
        )
        tfrecord = (
            instances
            | "Serialize" >> beam.Map(to_tf_example)
            | "TFRecord"
            >> beam.io.WriteToTFRecord(
                prefix, file_name_suffix=".tfrecord", num_shards=self._num_shards
            )
        )
        text = (
            instances
            | "Format" >> beam.Map(mcic_line)
            | "Text"
            >> beam.io.WriteToText(
                FileSystems.join(self._directory, "mcic"),
                file_name_suffix=".txt",
                num_shards=self._num_shards,
            )
        )
        return (parquet, tfrecord, text) | "Files" >> beam.Flatten()


class WriteInstances(beam.PTransform):
    """Instances -> per-split files; returns the written file names."""

    def __init__(self, *, output: str, num_shards: int):
        super().__init__()
        self._output, self._num_shards = output, num_shards

    def expand(self, instances):
        by_split = instances | "BySplit" >> beam.Partition(
            lambda instance, _: SPLITS.index(instance["split"]), len(SPLITS)
        )
        written = [
            by_split[code]
            | f"Write {split}"
            >> WriteSplit(
                directory=FileSystems.join(self._output, split), num_shards=self._num_shards
            )
            for code, split in enumerate(SPLITS)
        ]
        return written | "Written" >> beam.Flatten()
