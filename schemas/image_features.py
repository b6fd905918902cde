"""The Parquet files of image vectors: what dmc-features writes (a folder of sorted
shards, ``features-SSSSS-of-NNNNN.parquet``) and dmc-train ``--image_features`` reads (that
folder, or one Parquet file). One row per image: its id (the image file's name, which the
trainer matches against the dataset's image ids and file names) and its vector."""

SHARDS = "features"
# images per shard: a 2,048-float vector is 8 kB, so a shard is about 40 MB
IMAGES_PER_SHARD = 5_000

IMAGE_COLUMN = "image"
FEATURES_COLUMN = "features"
