"""Person and scene chunks of a normalised caption, by lexicon and a few rules.

Hodosh & Hockenmaier (2016, section 3.1) build their binary forced-choice
tasks from *person mentions* (noun phrases whose head denotes people or a group
of people, with their clothing) and *scene mentions* (noun phrases whose head
is a location). No parser model may be downloaded, so this module finds them
with the word lists of :mod:`transforms.english.lexicons` (tests/data/chunks_val2017.md
has the definitions the hand-labelled sample follows):

- A *head* is a person or scene noun that is not the modifier of a compound:
  "a baby elephant", "a man s hat", "a street sign", "a snow covered slope"
  have no person head at "baby"/"man" and no scene head at "street"/"snow".
- Its *pre-modifiers* run back to the nearest determiner or number over any
  words that are not stop words ("a busy city street", "a smiling young man"),
  except an -ing verb after a noun ("a dog chasing kids" -> "kids"); without a
  determiner only listed modifiers are taken ("young men", "tennis players").
- "<collective> of <person NP>" is one person chunk headed by the second noun
  ("a group of young people" -> head "people"); "a group of elephants" is none.
- A person chunk takes the clothing phrases that follow it after "in" or
  "wearing" ("a man in a black and white shirt and tie", "a team in blue").
- A scene chunk never includes its preposition, and "a glass of water" has no
  scene.

>>> tokens = "a young man in a red shirt riding a skateboard down a busy city street".split()
>>> [(c.kind, " ".join(tokens[c.start : c.end]), c.lemma) for c in chunk(tokens)]
[('person', 'a young man in a red shirt', 'man'), ('scene', 'a busy city street', 'street')]

About 20 microseconds per caption: a handful of set lookups per token.
"""

from collections.abc import Sequence
from typing import NamedTuple

from transforms.english.lexicons import (
    CLOTHING_NOUNS,
    COLLECTIVE_NOUNS,
    COLORS,
    CONTAINERS,
    DETERMINERS,
    MODIFIERS,
    NOT_VERBS,
    NUMBERS,
    PERSON_COMPOUND_NEXT,
    PERSON_NOUNS,
    SCENE_NOUNS,
    STOP_WORDS,
    plural_of,
)

PERSON = "person"
SCENE = "scene"
KINDS = (PERSON, SCENE)

# Pre-modifiers are looked for this far left of a head ("the two smiling young men").
MAX_PREMODIFIERS = 6
# A clothing phrase is looked for this far right of "in"/"wearing".
MAX_CLOTHING = 6
CLOTHING_INTRODUCERS = frozenset({"in", "wearing"})


class Chunk(NamedTuple):
    """A person or scene mention: the token span [start, end) of the caption."""

    kind: str
    start: int
    end: int
    head: str  # the head noun as written ("men")
    lemma: str  # its singular ("man"): what "the same head word" compares
    plural: bool


def _forms(singulars: Sequence[str]) -> dict[str, tuple[str, bool]]:
    """Each singular and its plural -> (lemma, plural)."""
    forms = {plural_of(noun): (noun, True) for noun in singulars}
    forms.update({noun: (noun, False) for noun in singulars})
    return forms


PERSON_FORMS = _forms(PERSON_NOUNS)
SCENE_FORMS = _forms(SCENE_NOUNS)
CLOTHING_FORMS = frozenset(_forms(CLOTHING_NOUNS))
OPENERS = DETERMINERS | NUMBERS


def chunk_text(tokens: Sequence[str], chunk: Chunk) -> str:
    """The chunk as the project writes captions: its tokens joined by single spaces."""
    return " ".join(tokens[chunk.start : chunk.end])


def chunk(tokens: Sequence[str]) -> tuple[Chunk, ...]:
    """The person and scene chunks of a normalised caption, left to right, never overlapping.

    >>> [chunk_text(t, c) for t in ["a group of people on the beach".split()] for c in chunk(t)]
    ['a group of people', 'the beach']
    """
    chunks = []
    floor = 0
    index = 0
    while index < len(tokens):
        found = _chunk_at(tokens, index, floor)
        if found is None:
            index += 1
            continue
        chunks.append(found)
        floor = index = found.end
    return tuple(chunks)


def _chunk_at(tokens: Sequence[str], index: int, floor: int) -> Chunk | None:
    """The chunk whose head (or collective noun) is tokens[index], if any."""
    word = tokens[index]
    following = tokens[index + 1] if index + 1 < len(tokens) else ""
    if word in COLLECTIVE_NOUNS and following == "of":
        return _group(tokens, index, floor)
    if word in PERSON_FORMS and _is_person_head(tokens, index):
        start = _start(tokens, index, floor)
        if tokens[start] == "its":  # "its mother": an animal's
            return None
        return _person(tokens, start, index, index + 1)
    if word in SCENE_FORMS and _is_scene_head(tokens, index):
        start = _start(tokens, index, floor)
        if start >= 2 and tokens[start - 1] == "of" and tokens[start - 2] in CONTAINERS:
            return None
        lemma, plural = SCENE_FORMS[word]
        return Chunk(SCENE, start, index + 1, word, lemma, plural)
    return None


def _person(tokens: Sequence[str], start: int, head: int, end: int) -> Chunk:
    lemma, plural = PERSON_FORMS[tokens[head]]
    return Chunk(PERSON, start, _clothing_end(tokens, end), tokens[head], lemma, plural)


def _group(tokens: Sequence[str], index: int, floor: int) -> Chunk | None:
    """ "a group of (young) people": one person chunk headed by the second noun."""
    for head in range(index + 2, min(len(tokens), index + 2 + MAX_PREMODIFIERS)):
        word = tokens[head]
        if word in PERSON_FORMS and _is_person_head(tokens, head):
            return _person(tokens, _start(tokens, index, floor), head, head + 1)
        if word in STOP_WORDS or _is_verb(tokens, head):
            return None
    return None


def _is_verb(tokens: Sequence[str], index: int) -> bool:
    """An -ing or -ed word that is not a listed noun or adjective ("riding", "parked")."""
    word = tokens[index]
    return len(word) > 4 and word.endswith(("ing", "ed")) and word not in NOT_VERBS


def _is_person_head(tokens: Sequence[str], index: int) -> bool:
    """Not a modifier: "a baby elephant", "a man s hat", "a clown suit", "a male tennis player"."""
    following = tokens[index + 1] if index + 1 < len(tokens) else ""
    if (
        following in PERSON_COMPOUND_NEXT
        or following in PERSON_FORMS
        or following in CLOTHING_FORMS
    ):
        return False
    if following == "of" and tokens[index] in CONTAINERS:
        return False
    after = tokens[index + 2] if index + 2 < len(tokens) else ""
    return not (following in MODIFIERS and after in PERSON_FORMS)


def _is_scene_head(tokens: Sequence[str], index: int) -> bool:
    """The next word ends the noun phrase: a stop word, a determiner, a verb, a person.

    Any other next word continues a compound ("a street sign", "a city street",
    "ice cream"), and "snow covered", "tree lined" are compound adjectives.
    """
    if index + 1 == len(tokens):
        return True
    following = tokens[index + 1]
    if following == "of" and tokens[index] in COLLECTIVE_NOUNS:
        return False
    if _is_verb(tokens, index + 1):
        after = tokens[index + 2] if index + 2 < len(tokens) else ""
        return following.endswith("ing") or not after or after in STOP_WORDS | OPENERS
    return following in STOP_WORDS or following in OPENERS or following in PERSON_FORMS


def _start(tokens: Sequence[str], head: int, floor: int) -> int:
    """Where the chunk headed at ``head`` starts: its pre-modifiers."""
    index = head - 1
    while index >= floor and head - index <= MAX_PREMODIFIERS:
        word = tokens[index]
        if word in STOP_WORDS:
            break
        if word in OPENERS:
            while index - 1 >= floor and tokens[index - 1] in OPENERS:
                index -= 1
            return index
        if _is_verb(tokens, index) and word.endswith("ing"):
            previous = tokens[index - 1] if index > floor else ""
            if previous not in OPENERS and previous not in MODIFIERS:
                break
        index -= 1
    start = head
    while start - 1 >= floor and (tokens[start - 1] in MODIFIERS or tokens[start - 1] in NUMBERS):
        start -= 1
    return start


def _clothing_end(tokens: Sequence[str], end: int) -> int:
    """The end of the clothing phrases after a person: "in a red shirt", "wearing a hat"."""
    while end < len(tokens) and tokens[end] in CLOTHING_INTRODUCERS:
        phrase_end = _clothing_phrase(tokens, end + 1)
        if phrase_end is None:
            break
        end = phrase_end
    return end


def _clothing_phrase(tokens: Sequence[str], start: int) -> int | None:
    """The end of "(a) (black and white) shirt (and tie)" or "blue" from ``start``, if any.

    Words between a determiner and the clothing noun are modifiers ("a tank
    top", "a cowboy hat"); a person or scene noun, a stop word or a verb ends
    the search, and "and" joins colours or a further clothing phrase.
    """
    last = None
    colors_only = True
    index = start
    while index < len(tokens) and index - start < MAX_CLOTHING:
        word = tokens[index]
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        if word in CLOTHING_FORMS:
            last = index + 1
        elif word == "and":
            if last is not None:
                more = _clothing_phrase(tokens, index + 1)
                return more if more is not None else last
            if following not in MODIFIERS:
                break
        elif last is not None or word in STOP_WORDS or _is_verb(tokens, index):
            break
        elif (word in PERSON_FORMS or word in SCENE_FORMS) and following not in CLOTHING_FORMS:
            return None
        colors_only = colors_only and (word in COLORS or word in ("and", "all"))
        index += 1
    if last is not None:
        return last
    ended = index == len(tokens) or tokens[index] in STOP_WORDS or _is_verb(tokens, index)
    return index if colors_only and index > start and ended else None
