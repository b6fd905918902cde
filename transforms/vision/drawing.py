"""Pictures of the synthetic corpus's scenes, so vision models have images to look at.

The corpus (transforms/corpus/synthetic.py) has captions but no pixels. Image ``i`` is drawn
here from its latent scene, deterministically for (seed, i), so that what its captions say
is visible and a model can learn caption-image agreement from the pictures:

- the place is the ground (the lower part): a colour and a texture of its own per place;
- the time of day is the sky (the upper part): blue, dark with stars at night, grey with
  rain, orange at sunset, a sun on a sunny day, pale in the morning;
- the subject is ``count`` shapes (1 to 5), one outline per kind of subject (a tall bar for
  a person, a triangle for a woman, a star for a bird, ...), filled with the colour of the
  scene's first attribute and edged with its second's (a colour word is its colour, any
  other attribute a colour of its own);
- the activity is a small mark in the top-left corner: its own colour and glyph.

A picture is ``size`` x ``size`` pixels (64 by default), encoded by its file name's
extension: the corpus names its images ``SYNTH_<id>.jpg``, so they are JPEG (quality 95,
no chroma subsampling: colours stay what they were drawn).
"""

import colorsys
import io
import math
import os

import numpy as np
from apache_beam.io.filesystems import FileSystems
from PIL import Image, ImageDraw

from transforms.corpus.synthetic import SUBJECTS, TIMES, scene
from transforms.files import write_file

SIZE = 64
SKY = 0.45  # the sky's share of the height; the ground is the rest
SHAPE = 0.11  # a subject shape's radius, as a share of the side
JITTER = 0.03  # how far (share of the side) a shape moves off its slot
MARK = 0.09  # the activity mark's radius, as a share of the side

# the colours the corpus's colour words name; every other attribute gets a hue of its own
NAMED_COLOURS = {
    "red": (220, 30, 30),
    "white": (245, 245, 245),
    "black": (15, 15, 15),
    "blue": (30, 60, 220),
    "yellow": (240, 220, 30),
    "brown": (125, 75, 30),
    "gray": (128, 128, 128),
}
SKIES = {
    "": (135, 190, 235),
    "at night": (15, 20, 60),
    "on a sunny day": (60, 150, 255),
    "in the rain": (110, 115, 125),
    "at sunset": (245, 130, 50),
    "in the morning": (250, 225, 190),
}
SUN, STAR, RAIN = (255, 235, 60), (255, 255, 210), (70, 90, 200)

# slots of 1 to 5 shapes in the region below the sky's top quarter, as shares of the side
SLOTS = {
    1: ((0.5, 0.62),),
    2: ((0.3, 0.62), (0.7, 0.62)),
    3: ((0.5, 0.45), (0.28, 0.78), (0.72, 0.78)),
    4: ((0.3, 0.45), (0.7, 0.45), (0.3, 0.8), (0.7, 0.8)),
    5: ((0.3, 0.42), (0.7, 0.42), (0.2, 0.8), (0.5, 0.8), (0.8, 0.8)),
}


def _regular(corners: int, turn: float = 0.0, inner: float = 1.0) -> tuple:
    """A polygon of ``corners`` corners on the unit circle (a star when ``inner`` < 1)."""
    points = []
    for k in range(corners * (2 if inner < 1 else 1)):
        radius = inner if inner < 1 and k % 2 else 1.0
        angle = 2 * math.pi * (k / (corners * (2 if inner < 1 else 1)) + turn) - math.pi / 2
        points.append((radius * math.cos(angle), radius * math.sin(angle)))
    return tuple(points)


def _box(width: float, height: float) -> tuple:
    return ((-width, -height), (width, -height), (width, height), (-width, height))


# each kind of subject's outline, in unit coordinates (y down)
OUTLINES = {
    "person": _box(0.5, 1.0),
    "woman": _regular(3),
    "child": _regular(4),
    "dog": _box(1.0, 0.5),
    "cat": _regular(3, turn=0.5),
    "horse": _regular(5),
    "elephant": _regular(16),
    "giraffe": (
        (-0.3, -1),
        (0.3, -1),
        (0.3, -0.3),
        (1, -0.3),
        (1, 0.3),
        (0.3, 0.3),
        (0.3, 1),
        (-0.3, 1),
        (-0.3, 0.3),
        (-1, 0.3),
        (-1, -0.3),
        (-0.3, -0.3),
    ),
    "bird": _regular(5, inner=0.45),
    "vehicle": ((-0.6, -0.6), (0.6, -0.6), (1, 0.6), (-1, 0.6)),
    "food": _regular(6),
}
MARK_GLYPHS = (_box(1, 1), _regular(12), _regular(3), _box(1, 0.35), _regular(4, inner=0.5))
HUES = 12  # activity mark colours; with MARK_GLYPHS, 60 distinct marks


def _hue(position: float, saturation: float = 0.75, value: float = 0.9) -> tuple[int, int, int]:
    red, green, blue = colorsys.hsv_to_rgb(position % 1.0, saturation, value)
    return round(red * 255), round(green * 255), round(blue * 255)


def _distinct(values) -> tuple[str, ...]:
    return tuple(sorted(set(values)))


ATTRIBUTES = _distinct(word for entry in SUBJECTS.values() for word in entry[2])
ACTIVITIES = _distinct(phrase for entry in SUBJECTS.values() for phrase, _ in entry[1])
PLACES = _distinct(place for entry in SUBJECTS.values() for place in entry[3])
_UNNAMED = tuple(word for word in ATTRIBUTES if word not in NAMED_COLOURS)
ATTRIBUTE_COLOURS = {
    **{word: _hue((k + 0.5) / len(_UNNAMED), 0.65, 0.85) for k, word in enumerate(_UNNAMED)},
    **NAMED_COLOURS,
}
# ground: a hue per place, and one of four textures, so neighbouring hues differ in texture too
GROUNDS = {place: (_hue(k / len(PLACES), 0.55, 0.7), k % 4) for k, place in enumerate(PLACES)}
MARKS = {
    phrase: (_hue(k % HUES / HUES, 0.9, 1.0), MARK_GLYPHS[k // HUES % len(MARK_GLYPHS)])
    for k, phrase in enumerate(ACTIVITIES)
}
assert set(SKIES) == set(TIMES), "every time of day of the corpus has a sky"
assert set(OUTLINES) == set(SUBJECTS), "every kind of subject has an outline"


def _polygon(unit: tuple, centre: tuple[float, float], radius: float) -> list[tuple]:
    return [(centre[0] + x * radius, centre[1] + y * radius) for x, y in unit]


def _darker(colour: tuple[int, int, int]) -> tuple[int, int, int]:
    return tuple(channel * 3 // 5 for channel in colour)


def _draw_ground(draw: ImageDraw.ImageDraw, place: str, size: int) -> None:
    colour, texture = GROUNDS[place]
    top = round(SKY * size)
    draw.rectangle((0, top, size, size), fill=colour)
    ink, step = _darker(colour), max(size // 8, 2)
    for offset in range(0, size + step, step):
        if texture == 1:  # stripes
            draw.line((0, top + offset // 2, size, top + offset // 2), fill=ink)
        elif texture == 2:  # dots
            for x in range(step // 2, size, step):
                y = top + offset // 2 + step // 4
                draw.point([(x, y)], fill=ink)
        elif texture == 3:  # diagonals
            draw.line((offset, top, offset - (size - top), size), fill=ink)


def _draw_sky(draw: ImageDraw.ImageDraw, time: str, size: int, rng: np.random.Generator) -> None:
    top = round(SKY * size)
    draw.rectangle((0, 0, size, top), fill=SKIES[time])
    if time == "at night":
        for x, y in rng.uniform((0, 0), (size, top), size=(8, 2)).round().tolist():
            draw.point([(x, y)], fill=STAR)
    elif time == "on a sunny day":
        radius = size * 0.08
        draw.ellipse((size - 3 * radius, radius, size - radius, 3 * radius), fill=SUN)
    elif time == "in the rain":
        step = max(size // 10, 2)
        for x in range(0, size, step):
            draw.line((x, 0, x - step // 2, top), fill=RAIN)


def draw_scene(latent: dict, rng: np.random.Generator, size: int = SIZE) -> Image.Image:
    """The picture of a scene (``synthetic.scene``); ``rng`` places the shapes and stars."""
    jitter = rng.uniform(-JITTER, JITTER, size=(latent["count"], 2))  # first: the same whatever sky
    picture = Image.new("RGB", (size, size))
    draw = ImageDraw.Draw(picture)
    _draw_sky(draw, latent["time"], size, rng)
    _draw_ground(draw, latent["place"], size)
    colour, mark = MARKS[latent["activity"]]
    draw.polygon(_polygon(mark, (MARK * size * 1.2, MARK * size * 1.2), MARK * size), fill=colour)
    fill, edge = (ATTRIBUTE_COLOURS[word] for word in latent["attributes"])
    shape = OUTLINES[latent["kind"]]
    for (x, y), (dx, dy) in zip(SLOTS[latent["count"]], jitter.tolist(), strict=True):
        outline = _polygon(shape, ((x + dx) * size, (y + dy) * size), SHAPE * size)
        draw.polygon(outline, fill=fill, outline=edge, width=max(size // 32, 1))
    return picture


def encode(picture: Image.Image, file_name: str) -> bytes:
    """The picture's file bytes in the format its name's extension says."""
    extension = os.path.splitext(file_name)[1].lower()
    image_format = Image.registered_extensions()[extension]
    settings = {"quality": 95, "subsampling": 0} if image_format == "JPEG" else {}
    buffer = io.BytesIO()
    picture.save(buffer, format=image_format, **settings)
    return buffer.getvalue()


def draw_image(seed: int, image_id: int, size: int = SIZE) -> Image.Image:
    """The picture of the corpus's image ``image_id`` (scene ``image_id - 1``: ids start at 1)."""
    rng = np.random.default_rng([seed, image_id - 1, 2])
    return draw_scene(scene(seed, image_id - 1), rng, size)


def write_images(directory: str, seed: int, images: list[dict], size: int = SIZE) -> int:
    """Draws every image of a corpus (its ``images`` records: ``id``, ``file_name``) into
    ``directory`` (local or gs://) under its file name; returns how many."""
    for image in images:
        path = FileSystems.join(directory, image["file_name"])
        write_file(path, encode(draw_image(seed, image["id"], size), image["file_name"]))
    return len(images)
