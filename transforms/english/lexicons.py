"""Closed word lists for the person and scene chunker (:mod:`transforms.english.chunker`).

Every word is a normalised token (lowercase a-z, see
``transforms.corpus.normalize.normalize_caption``). The lists were written by
hand from the chunk definitions of Hodosh & Hockenmaier (2016, section 3.1:
people, groups of people, "NP1-of-NP2" groups, clothing, locations) and from
the words COCO and Flickr30k annotators use for them, then completed by reading
the most frequent words around "a"/"the" in a tuning part of COCO val2017's
captions (images whose id is a multiple of 4), never the hand-labelled sample.
Plurals are spelled out where they are irregular and made by
:func:`plural_of` otherwise.
"""


def _words(text: str) -> frozenset[str]:
    """A word list written as text, several words a line."""
    return frozenset(text.split())


# Nouns that denote a person (Hodosh & Hockenmaier: "people", e.g. "a tall man").
# Singular forms; plurals come from plural_of. From COCO captions' subjects:
# generic people, age and kin terms, sports players by sport, and occupations.
PERSON_NOUNS = _words(
    """
    man woman person boy girl child kid baby toddler infant adult teenager teen youth
    youngster guy gal lady gentleman dude fellow male female human individual friend mother
    father mom dad parent son daughter brother sister grandmother grandfather grandma
    grandpa husband wife bride groom player athlete surfer skier snowboarder skateboarder
    skater boarder kiteboarder kitesurfer windsurfer wakeboarder biker cyclist bicyclist
    motorcyclist rider jockey driver pilot batter catcher pitcher umpire fielder outfielder
    infielder referee goalie coach runner jogger hiker swimmer dancer performer musician
    singer guitarist drummer clown cowboy farmer fisherman businessman businesswoman doctor
    nurse dentist patient chef baker butcher waiter waitress bartender cashier vendor seller
    customer shopper passenger pedestrian commuter tourist traveler spectator onlooker
    worker employee officer policeman policewoman cop soldier fireman firefighter lifeguard
    sailor captain conductor mechanic repairman student teacher competitor contestant
    participant teammate opponent member owner trainer handler photographer visitor couple
    crowd team family audience crew
    """
)

# Collective nouns of Hodosh & Hockenmaier's "NP1-of-NP2" groups ("a group of
# protesters"): the chunk is the whole phrase and its head is NP2's, so "a group
# of elephants" is no person chunk. Also "a lot of", "lots of" ("a lot of people").
COLLECTIVE_NOUNS = _words(
    """
    group groups crowd crowds team teams bunch couple pair family families line lot lots
    number herd gang band troop class set row crew handful member members
    """
)

# Nouns that denote a location or setting (Hodosh & Hockenmaier: "beach", "city",
# "office", "street", "park"); the chunk spec adds surfaces people stand on
# (grass, snow, sand, water, ground, floor) and excludes objects and furniture.
SCENE_NOUNS = _words(
    """
    beach street road roadway highway freeway intersection avenue alley lane sidewalk
    crosswalk corner park playground field yard backyard lawn garden meadow pasture farm
    countryside kitchen room bathroom bedroom restroom hallway hall lobby office classroom
    garage basement porch patio deck balcony courtyard plaza square market marketplace store
    shop restaurant cafe diner pub bakery cafeteria ocean sea water lake river pond stream
    creek canal bay harbor marina dock pier shore shoreline coast sand desert snow ice slope
    hill hillside mountain mountainside valley trail path forest woods jungle zoo enclosure
    city town village downtown neighborhood court rink arena stadium gym pool course airport
    runway tarmac airfield station platform terminal track railroad railway lot grass dirt
    mud ground floor sky air campus school church hospital library museum hotel home
    boardwalk waterfront infield outfield area wilderness savanna
    """
)

# What annotators put after "in" / "wearing" about a person's clothes (the chunk
# spec's post-modifiers, Hodosh & Hockenmaier's "a girl in jeans", "a team in
# blue"): garments, headwear, footwear and worn accessories, singular and plural.
CLOTHING_NOUNS = _words(
    """
    shirt tshirt top tank blouse jacket coat hoodie sweater sweatshirt vest dress gown skirt
    pants jeans shorts trousers slacks leggings tights suit tuxedo tie uniform outfit
    costume gear attire clothes clothing apron robe scarf glove mitten boot shoe sneaker
    sandal sock hat cap helmet beanie visor hood bandana headband wristband mask sunglasses
    glasses goggles wetsuit swimsuit bikini trunks jersey overalls backpack necklace
    bracelet earrings jewelry kimono sari wig bib diaper pajamas underwear bra belt armor
    """
)

COLORS = _words(
    """
    red orange yellow green blue purple pink brown black white gray grey tan beige navy
    maroon teal gold silver dark light bright colorful colored striped plaid camouflage camo
    """
)

# Determiners and quantifiers that open a noun phrase (closed class), with the
# possessive pronouns that act as determiners ("her daughter").
DETERMINERS = _words(
    """
    a an the this these those some several many few other another each every both all any
    various multiple numerous his her their its my our your no
    """
)

NUMBERS = _words(
    """
    one two three four five six seven eight nine ten eleven twelve dozen dozens hundreds
    thousands single lone
    """
)

# Pre-modifiers allowed without a determiner ("young men", "tennis players",
# "snowy slope"): the frequent adjectives and noun modifiers of COCO subjects
# and places. Between a determiner and a head any non-stop word is a modifier.
MODIFIERS = (
    _words(
        """
    young old older elderly little small big large tall short happy smiling laughing cute
    pretty beautiful handsome blond blonde bald bearded asian african american indian
    professional male female adult teenage baby baseball tennis soccer football basketball
    volleyball frisbee ski snow police military business college school street city busy
    crowded empty open wet dry sandy snowy grassy rocky dirt paved wooded urban rural public
    local outdoor indoor modern clean dirty messy huge giant long wide narrow steep main
    residential country train bus parking living dining tiled same different skinny fat
    overweight shirtless barefoot uniformed costumed ocean sea lake river mountain beach
    hotel restaurant kitchen home front back side very pro league double decker
    """
    )
    | COLORS
)

# Words that end a noun phrase and never sit inside one: prepositions,
# conjunctions, auxiliaries, pronouns, relative words, adverbs of place.
STOP_WORDS = _words(
    """
    in on at of with without near by beside besides next to from into onto off over under
    underneath beneath below above behind across along alongside through throughout down up
    around round outside inside within towards toward past between among amongst against
    beyond after before during while for like as than atop upon via and or but nor so yet is
    are was were be being been am has have had having does do did can could will would
    should may might must he she it they them him we us i you me itself himself herself
    themselves who whom whose which that what where when why how there here then together
    alone nearby indoors today s not out away also just too full about if because
    """
)

# Words ending in -ing/-ed that are nouns or adjectives, not verbs ("a building",
# "the ceiling", "a red sled"); every other -ing word after a noun is a verb.
NOT_VERBS = _words(
    """
    building buildings clothing ceiling evening morning wedding painting paintings railing
    railings ring rings king string thing things something nothing everything swing swings
    wing wings spring icing frosting topping toppings stuffing pudding awning lighting
    sibling siblings bed beds red shed sled sleds seed seeds need bread head steed weed
    flooring landing crossing parking dining living bedding kingdom
    """
)

# Words after a person noun that make it a noun modifier, not a head:
# "a baby elephant", "a man s hat", "a family photo", "the police officer".
PERSON_COMPOUND_NEXT = _words(
    """
    s elephant elephants giraffe giraffes zebra zebras bear bears cow cows calf sheep goat
    goats horse horses bird birds animal animals duck ducks chick carrot carrots stroller
    carriage seat bottle shower photo picture portrait statue statues figurine figurines
    doll dolls toy toys meal food car cars room bed crib made size sized shaped net court
    racket racquet ball balls match game tournament station box department uniform
    motorcycle motorcycles
    """
)

# Heads of "X of <scene noun>" where the scene noun is a substance in a container,
# not a place: "a glass of water", "a pile of snow".
CONTAINERS = _words(
    """
    glass glasses bottle bottles cup cups bowl bowls pitcher jug pile piles bucket buckets
    bag bags jar jars can cans mug mugs splash spray pot patch clump bunch pool puddle
    drop drops pieces piece chunk chunks block blocks
    """
)

IRREGULAR_PLURALS = {
    "man": "men",
    "woman": "women",
    "gentleman": "gentlemen",
    "fisherman": "fishermen",
    "businessman": "businessmen",
    "businesswoman": "businesswomen",
    "policeman": "policemen",
    "policewoman": "policewomen",
    "fireman": "firemen",
    "repairman": "repairmen",
    "woods": "woods",
    "child": "children",
    "person": "people",
    "shorts": "shorts",
    "pants": "pants",
    "jeans": "jeans",
    "trousers": "trousers",
    "slacks": "slacks",
    "leggings": "leggings",
    "tights": "tights",
    "clothes": "clothes",
    "clothing": "clothing",
    "gear": "gear",
    "attire": "attire",
    "sunglasses": "sunglasses",
    "glasses": "glasses",
    "goggles": "goggles",
    "trunks": "trunks",
    "overalls": "overalls",
    "earrings": "earrings",
    "jewelry": "jewelry",
    "pajamas": "pajamas",
    "underwear": "underwear",
    "audience": "audiences",
    "crew": "crews",
}


def plural_of(noun: str) -> str:
    """English plural by the regular rules, unless :data:`IRREGULAR_PLURALS` says otherwise.

    >>> [plural_of(noun) for noun in ("lady", "beach", "man", "boy", "bus")]
    ['ladies', 'beaches', 'men', 'boys', 'buses']
    """
    if noun in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[noun]
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "o", "u"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"
