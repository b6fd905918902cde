import io
import json

import numpy as np
import pytest
from PIL import Image

from pipelines import make_corpus
from transforms.corpus.synthetic import scene
from transforms.vision.drawing import (
    ATTRIBUTE_COLOURS,
    SKY,
    draw_image,
    draw_scene,
    encode,
)


def _pixels(picture: Image.Image) -> np.ndarray:
    return np.asarray(picture, dtype=np.int16)


def test_the_same_seed_draws_the_same_bytes_and_another_seed_others():
    first = [encode(draw_image(7, image_id), "a.jpg") for image_id in range(1, 6)]
    again = [encode(draw_image(7, image_id), "a.jpg") for image_id in range(1, 6)]
    other = [encode(draw_image(8, image_id), "a.jpg") for image_id in range(1, 6)]
    assert first == again
    assert all(a != b for a, b in zip(first, other, strict=True))


def test_different_scenes_draw_differently():
    drawn = {encode(draw_image(0, image_id), "a.png") for image_id in range(1, 101)}
    assert len(drawn) == 100


def _alone(latent: dict, **changes) -> dict:
    """The scene with a few fields changed: what each part of the picture shows."""
    return {**latent, "time": "", **changes}


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_count_shapes_in_the_first_attribute_s_colour(count):
    latent = _alone(scene(0, 0), kind="food", attributes=("red", "blue"), count=count)
    pixels = _pixels(draw_scene(latent, np.random.default_rng(0)))
    red = (pixels == ATTRIBUTE_COLOURS["red"]).all(axis=2)
    one = _alone(latent, count=1)
    single = (_pixels(draw_scene(one, np.random.default_rng(0))) == ATTRIBUTE_COLOURS["red"]).all(2)
    assert red.sum() == pytest.approx(count * single.sum(), rel=0.1)
    assert (pixels == ATTRIBUTE_COLOURS["blue"]).all(axis=2).sum() > 0  # the edge


def test_place_is_the_ground_and_time_the_sky():
    latent = _alone(scene(0, 0), place="on a beach", count=1)
    size, sky = 64, int(SKY * 64)
    base = _pixels(draw_scene(latent, np.random.default_rng(0), size))
    place = _pixels(draw_scene(_alone(latent, place="in a kitchen"), np.random.default_rng(0)))
    night = _pixels(draw_scene(_alone(latent, time="at night"), np.random.default_rng(0)))
    ground_changed = (base != place).any(axis=2)
    sky_changed = (base != night).any(axis=2)
    assert ground_changed[sky + 1 :].mean() > 0.5 and not ground_changed[:sky].any()
    assert sky_changed[: sky - 1].mean() > 0.5 and not sky_changed[sky + 1 :].any()


def test_make_corpus_draws_every_image_under_its_file_name(tmp_path):
    corpus, folder = tmp_path / "c.json", tmp_path / "images"
    argv = ["--output", str(corpus), "--num_images", "12", "--seed", "3"]
    assert make_corpus.main([*argv, "--images_dir", str(folder), "--image_size", "32"]) == 0
    records = json.loads(corpus.read_text())["images"]
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        record["file_name"] for record in records
    )
    for record in records:
        data = (folder / record["file_name"]).read_bytes()
        assert data == encode(draw_image(3, record["id"], 32), record["file_name"])
        picture = Image.open(io.BytesIO(data))
        assert (picture.format, picture.size) == ("JPEG", (32, 32))


def test_image_size_is_bounded(tmp_path, capsys):
    argv = ["--output", str(tmp_path / "c.json"), "--images_dir", str(tmp_path), "--image_size"]
    assert make_corpus.main([*argv, "8"]) == 2
    assert "--image_size must be between 16 and 512" in capsys.readouterr().err
