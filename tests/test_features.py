"""Feature building: concept bags from other captions only, user features matched or refused;
image files decoded the one way dmc-features and dmc-evaluate share."""

import io
import pathlib
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from transforms.errors import InputError
from transforms.trainer.features import (
    ConceptImages,
    build_lexicon,
    match_images,
    random_projection,
    read_image_features,
)
from transforms.vision.features import read_image
from transforms.vision.zero_shot import NOT_FOUND, find_image


def write_bomb(path: pathlib.Path) -> pathlib.Path:
    """A real decompression bomb: 20000 x 20000 pixels (over twice PIL's limit) of one bit
    each, all zero, which PNG's deflate packs into about 50 KB."""
    Image.new("1", (20000, 20000)).save(path)
    return path


def test_concept_features_come_from_the_images_other_captions_only():
    captions = {
        "7": [("70", "a dog runs on grass"), ("71", "a cat on a sofa"), ("72", "a red kite")],
        "8": [("80", "a dog and a kite")],
    }
    lexicon = build_lexicon([t for c in captions.values() for _, t in c], size=10, min_count=1)
    images = ConceptImages(lexicon, captions, random_projection(len(lexicon), 256, 0, "concepts"))
    instance = {"image_id": "7", "option_caption_ids": ["80", "70", "12", "13", "14"]}
    vector = images.vector(instance)
    present = {word for word, column in lexicon.items() if vector[column] > 0}
    assert present == {"cat", "sofa", "red", "kite"}
    assert np.linalg.norm(vector) == pytest.approx(1.0)


def test_lexicon_drops_closed_class_words_and_folds_plurals():
    lexicon = build_lexicon(
        ["two dogs are on the grass", "a dog is on a bench", "the benches"], 10, 1
    )
    assert set(lexicon) == {"dog", "grass", "bench"}
    assert list(lexicon)[:2] == ["bench", "dog"]  # two captions each, then alphabetical


def test_random_projection_is_seeded_and_keeps_inner_products():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((50, 2048))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    projection = random_projection(2048, 256, seed=3, salt="images")
    assert projection.shape == (2048, 256)
    np.testing.assert_array_equal(projection, random_projection(2048, 256, 3, "images"))
    assert not np.array_equal(projection, random_projection(2048, 256, 4, "images"))
    assert not np.array_equal(projection, random_projection(2048, 256, 3, "captions"))
    np.testing.assert_array_equal(random_projection(64, 256, 3, "images"), np.eye(64))
    projected = vectors @ projection
    error = np.abs(projected @ projected.T - vectors @ vectors.T)
    assert error.max() < 0.35 and error.mean() < 0.06  # Johnson-Lindenstrauss at dim 256


def test_user_features_match_by_id_or_file_name_and_missing_ones_are_counted(tmp_path):
    np.save(tmp_path / "feats.npy", np.eye(3))
    (tmp_path / "ids.txt").write_text("139\n000000000285.jpg\nunused\n")
    ids, vectors = read_image_features(str(tmp_path / "feats.npy"), str(tmp_path / "ids.txt"))
    np.testing.assert_array_equal(vectors, np.eye(3))
    images = {"139": "000000000139.jpg", "285": "val2017/000000000285.jpg"}
    assert match_images(ids, images, "feats.npy") == {"139": 0, "285": 1}
    more = {**images, **{str(i): f"{i}.jpg" for i in range(900, 910)}}
    with pytest.raises(
        InputError, match=r"feats.npy: 10 of 12 images .* \(e.g. image ids 900, 901, 902"
    ):
        match_images(ids, more, "feats.npy")
    (tmp_path / "ids.txt").write_text("139\n")
    with pytest.raises(InputError, match="1 ids for a feature array of shape"):
        read_image_features(str(tmp_path / "feats.npy"), str(tmp_path / "ids.txt"))


def test_non_finite_values_and_images_given_twice_are_errors_naming_the_rows(tmp_path):
    parquet = str(tmp_path / "features.parquet")
    vectors = [[0.5, 1.0], [float("nan"), 1.0], [1.0, 2.0], [0.0, float("-inf")]]
    pq.write_table(pa.table({"image": ["a", "b", "c", "d"], "features": vectors}), parquet)
    with pytest.raises(InputError) as raised:
        read_image_features(parquet, "")
    assert str(raised.value) == (
        f"{parquet}: 2 rows hold NaN or infinite values: row 1 (image b), row 3 (image d)"
    )

    pq.write_table(pa.table({"image": ["a", "b", "a"], "features": vectors[:1] * 3}), parquet)
    with pytest.raises(InputError) as raised:
        read_image_features(parquet, "")
    assert (
        str(raised.value) == f"{parquet}: image a has two rows, 0 and 2: give one vector per image"
    )

    npy, ids = str(tmp_path / "features.npy"), str(tmp_path / "ids.txt")
    np.save(npy, np.array([[1.0, 0.0], [0.0, np.inf]]))
    pathlib.Path(ids).write_text("139\n285\n")
    with pytest.raises(InputError, match=re.escape(f"{npy} with {ids}: 1 rows hold NaN")):
        read_image_features(npy, ids)
    np.save(npy, np.eye(2))
    pathlib.Path(ids).write_text("139\n139\n")
    with pytest.raises(InputError, match=re.escape(f"{npy} with {ids}: image 139 has two rows")):
        read_image_features(npy, ids)


def test_empty_feature_vectors_are_refused_when_read(tmp_path):
    parquet = str(tmp_path / "empty.parquet")
    empty = pa.array([[], []], type=pa.list_(pa.float64()))
    pq.write_table(pa.table({"image": ["a", "b"], "features": empty}), parquet)
    with pytest.raises(InputError) as raised:
        read_image_features(parquet, "")
    assert str(raised.value) == (
        f"{parquet}: every feature vector is empty: give at least one value each"
    )


def test_a_bad_image_file_is_a_reason_for_both_commands_never_a_crash(tmp_path):
    bomb = write_bomb(tmp_path / "bomb.png")
    assert bomb.stat().st_size < 100_000
    (tmp_path / "bytes.jpg").write_bytes(b"not an image")
    whole = io.BytesIO()
    Image.effect_noise((64, 48), 50).save(whole, "JPEG")
    (tmp_path / "whole.jpg").write_bytes(whole.getvalue())
    (tmp_path / "truncated.jpg").write_bytes(whole.getvalue()[: len(whole.getvalue()) // 2])

    why = read_image(str(bomb))  # what dmc-features skips and lists
    assert why.startswith("Image size (400000000 pixels) exceeds limit")
    assert "decompression bomb" in why
    assert read_image(str(tmp_path / "bytes.jpg")) == "not an image format PIL reads"
    assert read_image(str(tmp_path / "truncated.jpg")).startswith("image file is truncated")
    picture = read_image(str(tmp_path / "whole.jpg"))
    assert isinstance(picture, Image.Image) and (picture.mode, picture.size) == ("RGB", (64, 48))

    for name in ("bomb.png", "bytes.jpg", "truncated.jpg"):  # dmc-evaluate's: the same reason
        assert find_image(str(tmp_path / name)) == read_image(str(tmp_path / name))
    assert find_image(str(tmp_path / "gone.jpg")) == NOT_FOUND
