"""The objects in an image, as COCO categories, and the images with the same objects.

Visual Madlibs' "hard" multiple choice (Yu et al. 2015, section 4) draws its
three decoys from "images containing the same objects as our question image",
then picks their descriptions arbitrarily. Here an image's objects are a set of
COCO's 80 category ids, from one of two sources:

- COCO's instance annotations (:func:`read_instances`): the categories of every
  box in ``instances_*.json``; what the paper used.
- The captions themselves (:func:`image_objects`): the union over an image's
  captions of the categories that :data:`LEXICON` finds in them; for corpora
  without instance annotations. It sees only what annotators named, so it is
  a subset of what is in the image, and words it misreads add categories.

"Same objects", the definition :func:`rank_same_objects` ranks by: a candidate
image with set T is as close to the target's set S as it can be when it shares
the most categories (largest ``|S & T|``), then adds the fewest others
(smallest ``|T - S|``); images equal on both are in a random order that
depends only on (seed, target image, candidate image). The target's own image
is never a candidate. A candidate meets the definition exactly when T == S; few
targets have three such images when S is large, so the ranking also says, per
candidate, whether it is exact, and callers report how often it is. An image
with no objects (S empty) is closest to the other images with none. For a
corpus of 124,000 images (COCO train+val 2014) the ranking takes about 2 ms
per target on one core (4 minutes for all; measured on 2,048 targets, 2026-11-23):

    matrix = object_matrix(objects[image_id] for image_id in image_ids)
    ranked = rank_same_objects(targets, matrix, tie_keys(image_ids, seed), k=3)

The lexicon (:data:`LEXICON`) maps a phrase of one to three normalised tokens
(``transforms.corpus.normalize.normalize_caption``) to categories; a caption is
read left to right taking the longest phrase at each token, so "hot dog" is
food and not a dog, "teddy bear" a toy and not a bear. Its words are COCO's
category names with their plurals, the synonyms and hyponyms COCO's annotators
and captions use for them (the list of Rohrbach et al. 2018, "Object
Hallucination in Image Captioning", synonyms.txt, was the checklist; the
entries here were chosen and written for this project), and checked against the
words of COCO val2017's captions. Ambiguous words, and what was decided:

- "bat", "mouse", "keyboard", "tie", "remote": mapped to COCO's baseball bat,
  computer mouse, keyboard, tie and remote. COCO has no category for the animal
  bat or mouse, and captions use the other senses rarely.
- "glass", "glasses": not mapped (a material, a drinking glass COCO labels as
  cup or wine glass, spectacles); only "wine glass" and "glass of wine" are.
- "orange": only the plural is the fruit; the singular is mostly a colour.
- "baby", "mother", "adult": a person, except before an animal ("baby
  elephant" is an elephant), phrases generated for every animal name.
- "bike": a bicycle; "dirt bike" and "motor bike" are motorcycles.
- "table": COCO's dining table, which its annotators use for most tables.
- "monitor": tv, "controller" and "wii": remote, "phone": cell phone, "plant":
  potted plant, "stuffed animal": teddy bear, as COCO's annotators labelled
  those things.
- "skier", "surfer", "skateboarder", "snowboarder": a person and their board or
  skis; "skiing", "surfing", ... the skis or board.
- "bus stop": nothing (usually no bus); "toilet bowl": a toilet, not a bowl;
  "cup cake": a cake, not a cup.
- Not mapped, too ambiguous: "pitcher", "board", "light", "sign", "meter",
  "glove", "bag", "couple", "computer", "desk", "plate".
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from transforms.corpus.read import decode, require_keys
from transforms.errors import InputError
from transforms.files import parse_json, read_file
from transforms.seeds import keyed_int

# COCO 2014/2017's 80 object categories: (id, name, supercategory), ids as in its files.
CATEGORIES = (
    (1, "person", "person"),
    (2, "bicycle", "vehicle"),
    (3, "car", "vehicle"),
    (4, "motorcycle", "vehicle"),
    (5, "airplane", "vehicle"),
    (6, "bus", "vehicle"),
    (7, "train", "vehicle"),
    (8, "truck", "vehicle"),
    (9, "boat", "vehicle"),
    (10, "traffic light", "outdoor"),
    (11, "fire hydrant", "outdoor"),
    (13, "stop sign", "outdoor"),
    (14, "parking meter", "outdoor"),
    (15, "bench", "outdoor"),
    (16, "bird", "animal"),
    (17, "cat", "animal"),
    (18, "dog", "animal"),
    (19, "horse", "animal"),
    (20, "sheep", "animal"),
    (21, "cow", "animal"),
    (22, "elephant", "animal"),
    (23, "bear", "animal"),
    (24, "zebra", "animal"),
    (25, "giraffe", "animal"),
    (27, "backpack", "accessory"),
    (28, "umbrella", "accessory"),
    (31, "handbag", "accessory"),
    (32, "tie", "accessory"),
    (33, "suitcase", "accessory"),
    (34, "frisbee", "sports"),
    (35, "skis", "sports"),
    (36, "snowboard", "sports"),
    (37, "sports ball", "sports"),
    (38, "kite", "sports"),
    (39, "baseball bat", "sports"),
    (40, "baseball glove", "sports"),
    (41, "skateboard", "sports"),
    (42, "surfboard", "sports"),
    (43, "tennis racket", "sports"),
    (44, "bottle", "kitchen"),
    (46, "wine glass", "kitchen"),
    (47, "cup", "kitchen"),
    (48, "fork", "kitchen"),
    (49, "knife", "kitchen"),
    (50, "spoon", "kitchen"),
    (51, "bowl", "kitchen"),
    (52, "banana", "food"),
    (53, "apple", "food"),
    (54, "sandwich", "food"),
    (55, "orange", "food"),
    (56, "broccoli", "food"),
    (57, "carrot", "food"),
    (58, "hot dog", "food"),
    (59, "pizza", "food"),
    (60, "donut", "food"),
    (61, "cake", "food"),
    (62, "chair", "furniture"),
    (63, "couch", "furniture"),
    (64, "potted plant", "furniture"),
    (65, "bed", "furniture"),
    (67, "dining table", "furniture"),
    (70, "toilet", "furniture"),
    (72, "tv", "electronic"),
    (73, "laptop", "electronic"),
    (74, "mouse", "electronic"),
    (75, "remote", "electronic"),
    (76, "keyboard", "electronic"),
    (77, "cell phone", "electronic"),
    (78, "microwave", "appliance"),
    (79, "oven", "appliance"),
    (80, "toaster", "appliance"),
    (81, "sink", "appliance"),
    (82, "refrigerator", "appliance"),
    (84, "book", "indoor"),
    (85, "clock", "indoor"),
    (86, "vase", "indoor"),
    (87, "scissors", "indoor"),
    (88, "teddy bear", "indoor"),
    (89, "hair drier", "indoor"),
    (90, "toothbrush", "indoor"),
)
CATEGORY_NAMES = {category_id: name for category_id, name, _ in CATEGORIES}
CATEGORY_IDS = {name: category_id for category_id, name in CATEGORY_NAMES.items()}
# a category id -> its column in an object matrix (0..79)
COLUMNS = {category_id: column for column, (category_id, _, _) in enumerate(CATEGORIES)}
PERSON = 1
ANIMALS = tuple(category_id for category_id, _, group in CATEGORIES if group == "animal")

# category id -> the phrases that name it, singular and plural written out.
SYNONYMS = {
    PERSON: (
        "person, persons, people, man, men, woman, women, guy, guys, lady, ladies, "
        "gentleman, gentlemen, boy, boys, girl, girls, child, children, kid, kids, baby, "
        "babies, toddler, toddlers, adult, adults, teenager, teenagers, teen, teens, player, "
        "players, rider, riders, biker, bikers, skier, skiers, surfer, surfers, skateboarder, "
        "skateboarders, skater, skaters, snowboarder, snowboarders, batter, catcher, umpire, "
        "chef, chefs, cook, baker, worker, workers, policeman, policemen, police officer, "
        "officer, officers, cop, cops, soldier, soldiers, student, students, tourist, "
        "tourists, passenger, passengers, pedestrian, pedestrians, spectator, spectators, "
        "crowd, mother, father, mom, dad, son, daughter, brother, sister, family, bride, "
        "cowboy, athlete, athletes, someone, somebody, friends, male, female"
    ),
    2: "bicycle, bicycles, bike, bikes, cycle, bmx bike",
    3: "car, cars, taxi, taxis, cab, suv, sedan, van, vans, minivan, jeep",
    4: "motorcycle, motorcycles, motorbike, motorbikes, motor bike, motor bikes, dirt bike, "
    "dirt bikes, moped, mopeds, scooter, scooters, motorcyclist",
    5: "airplane, airplanes, aeroplane, plane, planes, jet, jets, airliner, airliners, aircraft",
    6: "bus, buses, busses",
    7: "train, trains, locomotive, locomotives, tram, trams, trolley, subway",
    8: "truck, trucks, pickup truck, lorry",
    9: "boat, boats, ship, ships, sailboat, sailboats, kayak, kayaks, canoe, canoes, yacht, "
    "ferry, raft",
    10: "traffic light, traffic lights, stop light, stop lights, stoplight, traffic signal",
    11: "fire hydrant, fire hydrants, hydrant, hydrants",
    13: "stop sign, stop signs",
    14: "parking meter, parking meters",
    15: "bench, benches",
    16: "bird, birds, pigeon, pigeons, seagull, seagulls, gull, gulls, duck, ducks, goose, "
    "geese, swan, swans, parrot, parrots, owl, eagle, hawk, crow, sparrow",
    17: "cat, cats, kitten, kittens, kitty, kitties",
    18: "dog, dogs, puppy, puppies, pup",
    19: "horse, horses, pony, ponies, foal",
    20: "sheep, lamb, lambs",
    21: "cow, cows, cattle, calf, calves, bull, bulls, ox, oxen",
    22: "elephant, elephants",
    23: "bear, bears, polar bear, polar bears, grizzly",
    24: "zebra, zebras",
    25: "giraffe, giraffes",
    27: "backpack, backpacks, back pack, rucksack",
    28: "umbrella, umbrellas, parasol, parasols",
    31: "handbag, handbags, purse, purses",
    32: "tie, ties, necktie",
    33: "suitcase, suitcases, luggage",
    34: "frisbee, frisbees",
    35: "skis, ski, skier, skiers, skiing",
    36: "snowboard, snowboards, snowboarder, snowboarders, snowboarding",
    37: "ball, balls, sports ball, soccer ball, tennis ball, baseball ball",
    38: "kite, kites",
    39: "baseball bat, baseball bats, bat, bats",
    40: "baseball glove, baseball gloves, mitt",
    41: "skateboard, skateboards, skate board, skateboarder, skateboarders, skateboarding",
    42: "surfboard, surfboards, surf board, surf boards, surfer, surfers, surfing",
    43: "tennis racket, tennis rackets, racket, rackets, racquet, racquets",
    44: "bottle, bottles",
    46: "wine glass, wine glasses, glass of wine, glasses of wine",
    47: "cup, cups, mug, mugs, coffee cup",
    48: "fork, forks",
    49: "knife, knives",
    50: "spoon, spoons",
    51: "bowl, bowls",
    52: "banana, bananas",
    53: "apple, apples",
    54: "sandwich, sandwiches, burger, burgers, hamburger, hamburgers",
    55: "oranges",
    56: "broccoli",
    57: "carrot, carrots",
    58: "hot dog, hot dogs, hotdog, hotdogs",
    59: "pizza, pizzas",
    60: "donut, donuts, doughnut, doughnuts",
    61: "cake, cakes, cupcake, cupcakes, cup cake, cup cakes",
    62: "chair, chairs",
    63: "couch, couches, sofa, sofas",
    64: "potted plant, potted plants, plant, plants, houseplant",
    65: "bed, beds",
    67: "table, tables, dining table",
    70: "toilet, toilets, toilet bowl, urinal, urinals",
    72: "tv, tvs, t v, television, televisions, monitor, monitors",
    73: "laptop, laptops",
    74: "mouse, computer mouse",
    75: "remote, remotes, remote control, controller, controllers, wii",
    76: "keyboard, keyboards",
    77: "cell phone, cell phones, cellphone, cellphones, phone, phones, smartphone, mobile phone",
    78: "microwave, microwaves",
    79: "oven, ovens, stove, stoves",
    80: "toaster, toasters",
    81: "sink, sinks",
    82: "refrigerator, refrigerators, fridge, fridges",
    84: "book, books",
    85: "clock, clocks",
    86: "vase, vases",
    87: "scissors",
    88: "teddy bear, teddy bears, teddy, stuffed bear, stuffed animal, stuffed animals",
    89: "hair drier, hair dryer, hairdryer, blow dryer",
    90: "toothbrush, toothbrushes, tooth brush",
}
# phrases that name no object although a word of theirs does
NOT_OBJECTS = ("bus stop",)


def _lexicon() -> dict[tuple[str, ...], tuple[int, ...]]:
    """:data:`SYNONYMS` by phrase, "baby"/"mother"/"adult" + each animal name, then
    :data:`NOT_OBJECTS`."""
    lexicon: dict[tuple[str, ...], tuple[int, ...]] = {}
    for category_id, phrases in SYNONYMS.items():
        for phrase in phrases.split(", "):
            key = tuple(phrase.split())
            lexicon[key] = (*lexicon.get(key, ()), category_id)
    for animal in ANIMALS:
        for phrase in SYNONYMS[animal].split(", "):
            for parent in ("baby", "mother", "adult"):
                lexicon[(parent, *phrase.split())] = (animal,)
    lexicon.update({tuple(phrase.split()): () for phrase in NOT_OBJECTS})
    return lexicon


LEXICON = _lexicon()
LONGEST_PHRASE = max(len(phrase) for phrase in LEXICON)


def caption_objects(tokens: Sequence[str]) -> frozenset[int]:
    """The categories a normalised caption names, longest phrase first.

    >>> sorted(caption_objects(("a", "guy", "eating", "a", "hot", "dog", "on", "a", "bench")))
    [1, 15, 58]
    """
    found: set[int] = set()
    start = 0
    while start < len(tokens):
        for length in range(min(LONGEST_PHRASE, len(tokens) - start), 0, -1):
            categories = LEXICON.get(tuple(tokens[start : start + length]))
            if categories is not None:
                found.update(categories)
                start += length
                break
        else:
            start += 1
    return frozenset(found)


def image_objects(captions: Iterable[Sequence[str]]) -> frozenset[int]:
    """The categories any of an image's normalised captions names."""
    return frozenset().union(*(caption_objects(tokens) for tokens in captions))


def read_instances(paths: Iterable[str]) -> dict[str, frozenset[int]]:
    """COCO ``instances_*.json`` files -> image id -> the categories annotated in it.

    An image without annotations has the empty set; an image in two files is an
    error naming both. Every problem is an InputError naming the file and record.
    """
    objects: dict[str, frozenset[int]] = {}
    source: dict[str, str] = {}
    for path in paths:
        for image_id, categories in _parse_instances(path, read_file(path)).items():
            if image_id in source:
                raise InputError(
                    f"{path}: image {image_id} is also in {source[image_id]}; give each image's "
                    "instances once"
                )
            source[image_id] = path
            objects[image_id] = categories
    return objects


def _parse_instances(path: str, data: bytes) -> dict[str, frozenset[int]]:
    document = parse_json(path, decode(path, data), dict, "a COCO instances file")
    require_keys(path, "the document", document, ("images", "annotations", "categories"))
    for key in ("images", "annotations", "categories"):
        if not isinstance(document[key], list):
            raise InputError(f"{path}: '{key}' is not a list")
    declared = set()
    for index, category in enumerate(document["categories"]):
        require_keys(path, f"categories[{index}]", category, ("id",))
        if category["id"] not in CATEGORY_NAMES:
            raise InputError(
                f"{path}: categories[{index}]: id {category['id']!r} is not one of COCO's 80 "
                "object categories"
            )
        declared.add(category["id"])
    images: dict[str, set[int]] = {}
    for index, image in enumerate(document["images"]):
        require_keys(path, f"images[{index}]", image, ("id",))
        images.setdefault(str(image["id"]), set())
    for index, annotation in enumerate(document["annotations"]):
        record = f"annotations[{index}]"
        require_keys(path, record, annotation, ("id", "image_id", "category_id"))
        record = f"{record} (id {annotation['id']})"
        categories = images.get(str(annotation["image_id"]))
        if categories is None:
            raise InputError(
                f"{path}: {record} refers to image_id {annotation['image_id']}, which is not "
                "in 'images'"
            )
        if annotation["category_id"] not in declared:
            raise InputError(
                f"{path}: {record} has category_id {annotation['category_id']!r}, which is not "
                "in 'categories'"
            )
        categories.add(annotation["category_id"])
    return {image_id: frozenset(categories) for image_id, categories in images.items()}


def instances_document(images: Sequence[dict], objects: Mapping[int, Sequence[int]]) -> dict:
    """A COCO instances file: ``images`` (COCO image records) and one annotation per object
    in ``objects`` (image id -> category ids, one per object), each a unit box.

    >>> document = instances_document([{"id": 7}], {7: [18, 18]})
    >>> [(a["image_id"], a["category_id"]) for a in document["annotations"]]
    [(7, 18), (7, 18)]
    """
    annotations = [
        {
            "id": 0,
            "image_id": image["id"],
            "category_id": category_id,
            "bbox": [0, 0, 1, 1],
            "area": 1,
            "iscrowd": 0,
        }
        for image in images
        for category_id in objects.get(image["id"], ())
    ]
    for number, annotation in enumerate(annotations, start=1):
        annotation["id"] = number
    return {
        "images": list(images),
        "annotations": annotations,
        "categories": [
            {"id": category_id, "name": name, "supercategory": group}
            for category_id, name, group in CATEGORIES
        ],
    }


def object_matrix(object_sets: Iterable[Iterable[int]]) -> np.ndarray:
    """Images x 80 booleans: row i marks image i's categories, in :data:`CATEGORIES`' order."""
    sets = list(object_sets)
    matrix = np.zeros((len(sets), len(CATEGORIES)), dtype=bool)
    for row, categories in enumerate(sets):
        matrix[row, [COLUMNS[category_id] for category_id in categories]] = True
    return matrix


def tie_keys(image_ids: Sequence[str], seed: int) -> np.ndarray:
    """One 64-bit number per image; with the target's, it orders equally close candidates."""
    return np.array([keyed_int(seed, image_id) for image_id in image_ids], dtype=np.uint64)


@dataclass(frozen=True)
class SameObjects:
    """The ``k`` closest candidate images of each target, best first (targets x k arrays)."""

    candidates: np.ndarray  # rows of the object matrix
    overlap: np.ndarray  # |S & T|: the target's categories the candidate has
    extra: np.ndarray  # |T - S|: the candidate's categories the target lacks
    exact: np.ndarray  # T == S: the candidate has the same objects

    def all_exact(self) -> np.ndarray:
        """Per target: whether every one of its k candidates has exactly its objects."""
        return self.exact.all(axis=1)


def rank_same_objects(
    targets: np.ndarray,
    matrix: np.ndarray,
    ties: np.ndarray,
    *,
    k: int = 3,
    batch_size: int = 128,
) -> SameObjects:
    """The ``k`` images closest to each target's objects, its own image excluded.

    ``targets``: rows of ``matrix`` (images x 80, :func:`object_matrix`);
    ``ties``: :func:`tie_keys` of the images. Targets are ranked ``batch_size``
    at a time (memory: a few batch_size x images arrays), with the same result
    for any batch size.

    >>> matrix = object_matrix([{1, 18}, {1}, {1, 18}, {1, 18, 3}])
    >>> ranked = rank_same_objects(np.array([0]), matrix, tie_keys("abcd", 0), k=2)
    >>> ranked.candidates.tolist(), ranked.exact.tolist()
    ([[2, 3]], [[True, False]])
    """
    if not 1 <= k < len(matrix):
        raise ValueError(f"k={k}: need 1 <= k < {len(matrix)} images")
    objects = matrix.astype(np.float32)
    room = len(CATEGORIES) - objects.sum(axis=1)
    best = np.concatenate(
        [
            _closest(targets[start : start + batch_size], objects, room, ties, k)
            for start in range(0, max(len(targets), 1), batch_size)
        ]
    )
    target_objects, candidate_objects = matrix[targets][:, None, :], matrix[best]
    overlap = (target_objects & candidate_objects).sum(axis=2)
    extra = (candidate_objects & ~target_objects).sum(axis=2)
    return SameObjects(
        candidates=best,
        overlap=overlap,
        extra=extra,
        exact=(overlap == target_objects.sum(axis=2)) & (extra == 0),
    )


def _closest(
    targets: np.ndarray, objects: np.ndarray, room: np.ndarray, ties: np.ndarray, k: int
) -> np.ndarray:
    """Targets x k candidate rows, best first: one targets x images overlap product.

    A candidate's score, 82 |S & T| + (80 - |T|) (``room``), orders by overlap,
    then by fewest extra categories (|T| = |S & T| + |T - S|, and 80 - |T| < 82);
    the target's own image scores -1. Only candidates scoring at least the k-th
    best score are drawn in random order.
    """
    score = (82 * (objects[targets] @ objects.T) + room).astype(np.int32)
    score[np.arange(len(targets)), targets] = -1
    kth = np.partition(score, -k, axis=1)[:, -k]
    rows, columns = np.nonzero(score >= kth[:, None])
    random = _mix(ties[targets][rows] ^ ties[columns])
    order = np.lexsort((~random, -score[rows, columns], rows))
    first = np.searchsorted(rows[order], np.arange(len(targets)))
    return columns[order][first[:, None] + np.arange(k)]


def _mix(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: every input bit flips about half the output bits."""
    values = (values ^ (values >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    values = (values ^ (values >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return values ^ (values >> np.uint64(31))
