"""A generator of COCO-style captioned images: the project's own default corpus.

The project may not ship COCO, yet ``./run_local.sh`` must produce a
meaningful dataset, and the scale benchmarks need corpora of any size. Each
image is a latent scene (a kind of subject with a count and attributes, an
activity, a place, a time of day); its five captions describe the
same scene with different templates, synonyms, and details left out, as five
annotators would. Scenes share vocabulary across images, so every caption has
"cunningly similar" captions of other images to serve as decoys.

Image ``i``'s scene and captions depend only on (seed, i), so a corpus of
1,000 images is the first 1,000 images of a corpus of 150,000.
"""

import json
from collections.abc import Iterator

import numpy as np

from transforms.files import write_file

CAPTIONS_PER_IMAGE = 5

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

# kind -> (nouns: (singular synonyms, plural synonyms) per noun, activities, attributes, places)
SUBJECTS = {
    "person": (
        ((("man", "guy", "gentleman"), ("men", "guys")), (("person",), ("people", "friends"))),
        (
            "riding a bicycle",
            "holding an umbrella",
            "playing frisbee",
            "flying a kite",
            "throwing a ball",
            "eating a sandwich",
            "talking on a phone",
            "reading a book",
            "riding a skateboard",
            "carrying a surfboard",
            "waiting for a bus",
            "walking a dog",
        ),
        PEOPLE_ATTRIBUTES,
        OUTDOORS + INDOORS,
    ),
    "woman": (
        ((("woman", "lady"), ("women", "ladies")), (("girl", "young girl"), ("girls",))),
        (
            "holding a tennis racket",
            "cutting a cake",
            "riding a horse",
            "taking a picture",
            "sitting on a bench",
            "pushing a stroller",
            "drinking coffee",
            "playing a video game",
            "holding an umbrella",
            "walking a dog",
            "eating pizza",
            "skiing down a hill",
        ),
        PEOPLE_ATTRIBUTES,
        OUTDOORS + INDOORS,
    ),
    "child": (
        ((("boy", "little boy"), ("boys",)), (("child", "kid"), ("children", "kids"))),
        (
            "playing soccer",
            "flying a kite",
            "eating a donut",
            "brushing his teeth",
            "swinging a bat",
            "riding a skateboard",
            "playing in the sand",
            "holding a teddy bear",
        ),
        PEOPLE_ATTRIBUTES,
        OUTDOORS + INDOORS,
    ),
    "dog": (
        ((("dog", "puppy"), ("dogs", "puppies")),),
        (
            "catching a frisbee",
            "lying on a couch",
            "running through the grass",
            "sitting in a car",
            "chewing a toy",
            "looking out a window",
            "playing with a ball",
        ),
        ANIMAL_ATTRIBUTES,
        OUTDOORS + INDOORS,
    ),
    "cat": (
        ((("cat", "kitten", "kitty"), ("cats", "kittens")),),
        (
            "sleeping on a bed",
            "sitting on a laptop",
            "looking at a television",
            "lying in a sink",
            "sitting on a windowsill",
            "playing with a toy",
        ),
        ANIMAL_ATTRIBUTES,
        INDOORS,
    ),
    "horse": (
        ((("horse", "pony"), ("horses", "ponies")),),
        ("grazing in a field", "pulling a carriage", "standing by a fence", "running in a pasture"),
        ANIMAL_ATTRIBUTES,
        OUTDOORS,
    ),
    "elephant": (
        ((("elephant",), ("elephants",)),),
        ("walking through the brush", "standing near a river", "spraying water", "eating leaves"),
        ("large", "small", "baby", "adult", "gray", "dusty"),
        WILD,
    ),
    "giraffe": (
        ((("giraffe",), ("giraffes",)),),
        ("eating from a tree", "standing next to a fence", "walking across the grass"),
        ("tall", "young", "baby", "adult", "spotted"),
        WILD,
    ),
    "bird": (
        (
            (("bird",), ("birds",)),
            (("pigeon",), ("pigeons",)),
            (("seagull", "gull"), ("seagulls",)),
        ),
        (
            "perched on a branch",
            "flying over the water",
            "standing on a rock",
            "eating bread crumbs",
        ),
        ANIMAL_ATTRIBUTES,
        OUTDOORS,
    ),
    "vehicle": (
        (
            (("bus",), ("buses",)),
            (("train",), ("trains",)),
            (("truck",), ("trucks",)),
            (("car", "vehicle"), ("cars", "vehicles")),
            (("motorcycle", "motorbike"), ("motorcycles",)),
        ),
        (
            "parked by the curb",
            "driving down the road",
            "stopped at a light",
            "waiting at the station",
            "covered in snow",
        ),
        THING_ATTRIBUTES,
        STREETS,
    ),
    "food": (
        (
            (("pizza",), ("pizzas",)),
            (("sandwich",), ("sandwiches",)),
            (("plate of food", "dish"), ("plates of food", "dishes")),
            (("bowl of soup",), ("bowls of soup",)),
        ),
        (
            "sitting on a plate",
            "served with a fork",
            "next to a glass of wine",
            "topped with vegetables",
            "ready to be eaten",
            "cut into pieces",
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
    return {
        "nouns": _pick(rng, nouns)[0 if count == 1 else 1],
        "count": count,
        "determiner": determiner,
        "attributes": tuple(rng.choice(attributes, size=2, replace=False).tolist()),
        "activity": _pick(rng, activities),
        "place": _pick(rng, places),
        "time": _pick(rng, TIMES),
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


def images(seed: int, num_images: int) -> Iterator[tuple[int, list[str]]]:
    """(image id, five captions) for images 1..num_images."""
    for index in range(num_images):
        rng = np.random.default_rng([seed, index, 1])
        latent = scene(seed, index)
        yield index + 1, [describe(latent, rng) for _ in range(CAPTIONS_PER_IMAGE)]


def coco_document(seed: int, num_images: int) -> dict:
    """A corpus in COCO's captions_*.json format."""
    document = {
        "info": {"description": f"dmc-datasets synthetic corpus, seed {seed}"},
        "licenses": [],
        "images": [],
        "annotations": [],
    }
    for image_id, captions in images(seed, num_images):
        document["images"].append(
            {"id": image_id, "file_name": f"SYNTH_{image_id:012d}.jpg", "width": 640, "height": 480}
        )
        for caption in captions:
            annotation_id = len(document["annotations"]) + 1
            document["annotations"].append(
                {"id": annotation_id, "image_id": image_id, "caption": caption}
            )
    return document


def write_coco(path: str, seed: int, num_images: int) -> None:
    write_file(path, json.dumps(coco_document(seed, num_images)).encode("utf-8"))
