"""A generator of COCO-style captioned images: the project's own default corpus.

The project may not ship COCO, yet ``./run_local.sh`` must produce a
meaningful dataset, and the scale benchmarks need corpora of any size. Each
image is a latent scene (a kind of subject with a count and attributes, an
activity, a place, a time of day); its five captions describe the
same scene with different templates, synonyms, and details left out, as five
annotators would. Scenes share vocabulary across images, so every caption has
"cunningly similar" captions of other images to serve as decoys. A scene
also knows its objects as COCO categories (the subjects, what the activity and
place show), so ``pipelines.make_corpus --instances`` can write the COCO
instances file its captions would have.

Image ``i``'s scene and captions depend only on (seed, i), so a corpus of
1,000 images is the first 1,000 images of a corpus of 660,000, and a corpus
of ``c`` captions per image holds each image's first ``c`` of its five (1 is
Conceptual Captions' shape: one caption per image).

Variety is finite (five sentence templates over a small vocabulary).
Counted on normalised text (``transforms/corpus/normalize.py``), seed 0,
five captions per image: 124,000 images give 598,575 captions after the
pipeline's per-image de-duplication, 351,056 distinct texts; 660,000 images
give 3,186,566 captions, 1,101,007 distinct texts, and 3.6% of the captions
have a text that more than 200 captions share (200: how deep closed sets
search, 50 x 4). One caption per image, 660,000 images give 373,606
distinct texts.
"""

import json
from collections.abc import Iterator

import numpy as np

from transforms.files import write_file

CAPTIONS_PER_IMAGE = 5
# The corpus's "info" description: how a run knows its input is this corpus (its captions are
# the project's, not COCO's: the card's licence and citations follow), read from the first
# bytes, where json.dumps puts "info".
DESCRIPTION = "dmc-datasets synthetic corpus"
HEAD_BYTES = 256

PEOPLE_ATTRIBUTES = ("young", "old", "happy", "tall", "smiling", "tired", "little", "blond")
ANIMAL_ATTRIBUTES = ("brown", "white", "black", "small", "large", "spotted", "wet", "cute")
THING_ATTRIBUTES = ("red", "white", "blue", "old", "large", "small", "yellow", "colorful")
FOOD_ATTRIBUTES = ("delicious", "fresh", "hot", "large", "small", "homemade", "healthy", "tasty")
OUTDOORS = (
    "on a beach",
    "in a park",
    "on a city street",
    "in a field",
    "near the water",
    "in a backyard",
    "on a sidewalk",
    "on a snowy hill",
    "in a forest",
    "on a dirt road",
)
INDOORS = (
    "in a kitchen",
    "in a living room",
    "in a bedroom",
    "in an office",
    "in a restaurant",
    "in a bathroom",
)
WILD = ("at the zoo", "in a grassy field", "near a river", "on the savanna", "in an enclosure")
STREETS = (
    "on a city street",
    "at a train station",
    "in a parking lot",
    "near a building",
    "on a highway",
    "at the airport",
)
TABLES = (
    "on a wooden table",
    "on a kitchen counter",
    "in a restaurant",
    "at a picnic",
    "on a tray",
    "in a cafe",
)

# the COCO categories a place shows (the others show none)
PLACE_OBJECTS = {"on a wooden table": ("dining table",)}

# kind -> (nouns, activities, attributes, places). A noun is (singular synonyms, plural
# synonyms, its COCO categories); an activity is (phrase, the COCO categories it shows).
# Categories are COCO's names (transforms/english/objects.py), the instances file's truth.
SUBJECTS = {
    "person": (
        (
            (("man", "guy", "gentleman"), ("men", "guys"), ("person",)),
            (("person",), ("people", "friends"), ("person",)),
        ),
        (
            ("riding a bicycle", ("bicycle",)),
            ("holding an umbrella", ("umbrella",)),
            ("playing frisbee", ("frisbee",)),
            ("flying a kite", ("kite",)),
            ("throwing a ball", ("sports ball",)),
            ("eating a sandwich", ("sandwich",)),
            ("talking on a phone", ("cell phone",)),
            ("reading a book", ("book",)),
            ("riding a skateboard", ("skateboard",)),
            ("carrying a surfboard", ("surfboard",)),
            ("waiting for a bus", ("bus",)),
            ("walking a dog", ("dog",)),
        ),
        PEOPLE_ATTRIBUTES,
        OUTDOORS + INDOORS,
    ),
    "woman": (
        (
            (("woman", "lady"), ("women", "ladies"), ("person",)),
            (("girl", "young girl"), ("girls",), ("person",)),
        ),
        (
            ("holding a tennis racket", ("tennis racket",)),
            ("cutting a cake", ("cake", "knife")),
            ("riding a horse", ("horse",)),
            ("taking a picture", ()),
            ("sitting on a bench", ("bench",)),
            ("pushing a stroller", ()),
            ("drinking coffee", ("cup",)),
            ("playing a video game", ("remote",)),
            ("holding an umbrella", ("umbrella",)),
            ("walking a dog", ("dog",)),
            ("eating pizza", ("pizza",)),
            ("skiing down a hill", ("skis",)),
        ),
        PEOPLE_ATTRIBUTES,
        OUTDOORS + INDOORS,
    ),
    "child": (
        (
            (("boy", "little boy"), ("boys",), ("person",)),
            (("child", "kid"), ("children", "kids"), ("person",)),
        ),
        (
            ("playing soccer", ("sports ball",)),
            ("flying a kite", ("kite",)),
            ("eating a donut", ("donut",)),
            ("brushing his teeth", ("toothbrush",)),
            ("swinging a bat", ("baseball bat",)),
            ("riding a skateboard", ("skateboard",)),
            ("playing in the sand", ()),
            ("holding a teddy bear", ("teddy bear",)),
        ),
        PEOPLE_ATTRIBUTES,
        OUTDOORS + INDOORS,
    ),
    "dog": (
        ((("dog", "puppy"), ("dogs", "puppies"), ("dog",)),),
        (
            ("catching a frisbee", ("frisbee",)),
            ("lying on a couch", ("couch",)),
            ("running through the grass", ()),
            ("sitting in a car", ("car",)),
            ("chewing a toy", ()),
            ("looking out a window", ()),
            ("playing with a ball", ("sports ball",)),
        ),
        ANIMAL_ATTRIBUTES,
        OUTDOORS + INDOORS,
    ),
    "cat": (
        ((("cat", "kitten", "kitty"), ("cats", "kittens"), ("cat",)),),
        (
            ("sleeping on a bed", ("bed",)),
            ("sitting on a laptop", ("laptop",)),
            ("looking at a television", ("tv",)),
            ("lying in a sink", ("sink",)),
            ("sitting on a windowsill", ()),
            ("playing with a toy", ()),
        ),
        ANIMAL_ATTRIBUTES,
        INDOORS,
    ),
    "horse": (
        ((("horse", "pony"), ("horses", "ponies"), ("horse",)),),
        (
            ("grazing in a field", ()),
            ("pulling a carriage", ()),
            ("standing by a fence", ()),
            ("running in a pasture", ()),
        ),
        ANIMAL_ATTRIBUTES,
        OUTDOORS,
    ),
    "elephant": (
        ((("elephant",), ("elephants",), ("elephant",)),),
        (
            ("walking through the brush", ()),
            ("standing near a river", ()),
            ("spraying water", ()),
            ("eating leaves", ()),
        ),
        ("large", "small", "baby", "adult", "gray", "dusty"),
        WILD,
    ),
    "giraffe": (
        ((("giraffe",), ("giraffes",), ("giraffe",)),),
        (
            ("eating from a tree", ()),
            ("standing next to a fence", ()),
            ("walking across the grass", ()),
        ),
        ("tall", "young", "baby", "adult", "spotted"),
        WILD,
    ),
    "bird": (
        (
            (("bird",), ("birds",), ("bird",)),
            (("pigeon",), ("pigeons",), ("bird",)),
            (("seagull", "gull"), ("seagulls",), ("bird",)),
        ),
        (
            ("perched on a branch", ()),
            ("flying over the water", ()),
            ("standing on a rock", ()),
            ("eating bread crumbs", ()),
        ),
        ANIMAL_ATTRIBUTES,
        OUTDOORS,
    ),
    "vehicle": (
        (
            (("bus",), ("buses",), ("bus",)),
            (("train",), ("trains",), ("train",)),
            (("truck",), ("trucks",), ("truck",)),
            (("car", "vehicle"), ("cars", "vehicles"), ("car",)),
            (("motorcycle", "motorbike"), ("motorcycles",), ("motorcycle",)),
        ),
        (
            ("parked by the curb", ()),
            ("driving down the road", ()),
            ("stopped at a light", ("traffic light",)),
            ("waiting at the station", ()),
            ("covered in snow", ()),
        ),
        THING_ATTRIBUTES,
        STREETS,
    ),
    "food": (
        (
            (("pizza",), ("pizzas",), ("pizza",)),
            (("sandwich",), ("sandwiches",), ("sandwich",)),
            (("plate of food", "dish"), ("plates of food", "dishes"), ()),
            (("bowl of soup",), ("bowls of soup",), ("bowl",)),
        ),
        (
            ("sitting on a plate", ()),
            ("served with a fork", ("fork",)),
            ("next to a glass of wine", ("wine glass",)),
            ("topped with vegetables", ()),
            ("ready to be eaten", ()),
            ("cut into pieces", ()),
        ),
        FOOD_ATTRIBUTES,
        TABLES,
    ),
}
KINDS = tuple(SUBJECTS)
TIMES = ("", "", "", "at night", "on a sunny day", "in the rain", "at sunset", "in the morning")
COUNTS = ((1, "a"), (1, "a"), (2, "two"), (3, "three"), (4, "a group of"), (5, "several"))
OPENERS = ("", "", "", "a picture of ", "an image of ", "a photo of ", "there is ", "close up of ")


def _pick(rng: np.random.Generator, values: tuple):
    return values[int(rng.integers(len(values)))]


def scene(seed: int, image_index: int) -> dict:
    """The latent scene of one image."""
    rng = np.random.default_rng([seed, image_index, 0])
    kind = _pick(rng, KINDS)
    nouns, activities, attributes, places = SUBJECTS[kind]
    count, determiner = _pick(rng, COUNTS)
    singulars, plurals, subject_objects = _pick(rng, nouns)
    chosen_attributes = tuple(rng.choice(attributes, size=2, replace=False).tolist())
    activity, activity_objects = _pick(rng, activities)
    place = _pick(rng, places)
    return {
        "kind": kind,
        "nouns": singulars if count == 1 else plurals,
        "count": count,
        "determiner": determiner,
        "attributes": chosen_attributes,
        "activity": activity,
        "place": place,
        "time": _pick(rng, TIMES),
        # one COCO category name per object in the image, the subjects count times
        "objects": subject_objects * count + activity_objects + PLACE_OBJECTS.get(place, ()),
    }


def describe(scene: dict, rng: np.random.Generator) -> str:
    """One annotator's caption of a scene: synonyms, optional details, a template."""
    noun = _pick(rng, scene["nouns"])
    attribute = scene["attributes"][int(rng.integers(2))] + " " if rng.random() < 0.5 else ""
    determiner = scene["determiner"]
    if scene["count"] == 1 and determiner == "a" and (attribute or noun)[0] in "aeiou":
        determiner = "an"
    if scene["count"] > 1 and rng.random() < 0.3:
        determiner = "some" if determiner == "several" else "several"
    subject = f"{determiner} {attribute}{noun}"
    place = scene["place"] if rng.random() < 0.75 else ""
    time = scene["time"] if rng.random() < 0.6 else ""
    verb = "is" if scene["count"] == 1 else "are"
    template = int(rng.integers(5))
    if template == 0:
        text = f"{subject} {scene['activity']} {place} {time}"
    elif template == 1:
        text = f"{subject} {verb} {scene['activity']} {place} {time}"
    elif template == 2 and place:
        text = f"{place} {subject} {verb} {scene['activity']} {time}"
    elif template == 3:
        text = f"{subject} that {verb} {scene['activity']} {place}"
    else:
        text = f"{_pick(rng, OPENERS)}{subject} {scene['activity']} {time} {place}"
    text = " ".join(text.split())
    return text[0].upper() + text[1:] + ("." if rng.random() < 0.7 else "")


def images(
    seed: int, num_images: int, captions_per_image: int = CAPTIONS_PER_IMAGE
) -> Iterator[tuple[int, list[str]]]:
    """(image id, its first ``captions_per_image`` captions) for images 1..num_images."""
    for index in range(num_images):
        rng = np.random.default_rng([seed, index, 1])
        latent = scene(seed, index)
        yield index + 1, [describe(latent, rng) for _ in range(captions_per_image)]


def scene_objects(seed: int, num_images: int) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(image id, the COCO category name of each object in it) for images 1..num_images."""
    for index in range(num_images):
        yield index + 1, scene(seed, index)["objects"]


def coco_document(seed: int, num_images: int, captions_per_image: int = CAPTIONS_PER_IMAGE) -> dict:
    """A corpus in COCO's captions_*.json format."""
    document = {
        "info": {"description": f"{DESCRIPTION}, seed {seed}"},
        "licenses": [],
        "images": [],
        "annotations": [],
    }
    for image_id, captions in images(seed, num_images, captions_per_image):
        document["images"].append(
            {"id": image_id, "file_name": f"SYNTH_{image_id:012d}.jpg", "width": 640, "height": 480}
        )
        for caption in captions:
            annotation_id = len(document["annotations"]) + 1
            document["annotations"].append(
                {"id": annotation_id, "image_id": image_id, "caption": caption}
            )
    return document


def is_synthetic(head: bytes) -> bool:
    """Whether a COCO captions file that starts with ``head`` (its first HEAD_BYTES) is this
    corpus.

    >>> is_synthetic(json.dumps(coco_document(0, 1)).encode()[:HEAD_BYTES])
    True
    >>> is_synthetic(b'{"info": {"description": "COCO 2017 Dataset"')
    False
    """
    return f'{{"info": {{"description": "{DESCRIPTION}, seed '.encode() in head


def write_coco(
    path: str, seed: int, num_images: int, captions_per_image: int = CAPTIONS_PER_IMAGE
) -> dict:
    """Writes the corpus and returns it."""
    document = coco_document(seed, num_images, captions_per_image)
    write_file(path, json.dumps(document).encode("utf-8"))
    return document
