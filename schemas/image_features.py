"""The Parquet file of image vectors: what dmc-features writes and dmc-train
``--image_features`` reads. One row per image: its id (the image file's name, which the
trainer matches against the dataset's image ids and file names) and its vector."""

IMAGE_COLUMN = "image"
FEATURES_COLUMN = "features"
