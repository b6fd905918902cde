"""The construction rules of Hodosh & Hockenmaier's (2016) eight binary forced-choice tasks.

Each task turns one target caption into two options, the target and one
distractor (:class:`Constructed`), or a :class:`Refusal` carrying a short
stable reason why it cannot (the pipeline counts every skip). A :class:`Task`
is its rule, the kind of mention the rule works on (person or scene) and where
the distractor comes from (``pool``): the target's own caption, edited, or a
caption of another image. Section 3 of the paper, task by task:

- ``switch_people``: the caption's first two person mentions swapped, each
  with its modifiers and clothing ("a man in red holding a child" -> "a child
  holding a man in red"): the bag of words is unchanged. Skipped when the two
  have the same head lemma ("one man" / "another man"), when one is singular
  and the other plural (the swap would be ungrammatical), when a mention opens
  with a possessive ("her son": the swap breaks the reference), and when the
  words between them are a symmetric relation (:data:`SYMMETRIC_RELATIONS`),
  whose swap says the same thing ("a man talking with a woman").
- ``replace_person`` / ``replace_scene``: the main person mention (the first)
  or the scene mention (the last, "which typically occurs at the end of the
  sentence") replaced by a random mention from the train split whose head never
  co-occurs with the original's head, in the same number. "Co-occurs" is over
  the captions of one image: the paper avoids heads that "can co-occur in the
  training corpus" so that the distractor "does not actually still describe the
  image", because "multiple surface strings can describe the same overall
  scene" -- five annotators of one image say "street" and "road", "boy" and
  "child", which one caption rarely does. The paper states the rule for scenes;
  it is applied to people too, so "a man" is never replaced by "a guy". The
  number is kept ("a man is" never becomes "two surfers is"), which the paper
  does not say: a number clash would give the distractor away as bad grammar.
- ``share_person`` / ``share_scene``: a train caption of another image whose
  main person (scene) mention has the same head lemma as the target's.
- ``just_person`` / ``just_scene``: the distractor is the target's own main
  person (scene) mention alone.
- ``just_scene_plus``: the target option is the caption's scene mention alone,
  the distractor a train caption of another image with the same scene head.

The paper built one replace/just person item per person mention (5,816 and
5,811 items from 5,000 development captions); here each target caption gives
at most one item per task, built on its main mention.

Choices among several candidates use the caller's ``numpy.random.Generator``
(one per target), over lists sorted independently of the order of the train
split, so a fixed seed gives the same items on any runner.

How many items each task can build from a corpus, every caption being both
train and target (:func:`task_counts`):

python -m transforms.english.forced_choice_tasks ../shared/data/coco/captions_val2017.json
"""

import bisect
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from schemas.records import caption_order
from transforms.corpus.normalize import normalize_caption
from transforms.corpus.read import parse_captions
from transforms.english.chunker import KINDS, PERSON, SCENE, Chunk, chunk, chunk_text
from transforms.files import read_file
from transforms.seeds import keyed_rng

# Words between two person mentions that make swapping them say the same thing
# ("a man and a woman", "a boy playing with a girl", "a man sitting next to a
# woman"), or whose second mention is a comparison, not a person in the image
# ("a man dressed like a clown"): matched against the last words before the
# second mention, or "and"/"or" anywhere between them (coordination). Written
# from the paper's example ("A man talking with a woman") and the symmetric
# predicates of COCO captions.
SYMMETRIC_RELATIONS = frozenset(
    {
        ("with",),
        ("and",),
        ("or",),
        ("next", "to"),
        ("beside",),
        ("besides",),
        ("near",),
        ("by",),
        ("alongside",),
        ("against",),
        ("versus",),
        ("vs",),
        ("between",),
        ("among",),
        ("across", "from"),
        ("opposite",),
        ("facing",),
        ("meeting",),
        ("hugging",),
        ("kissing",),
        ("marrying",),
        ("talking", "to"),
        ("close", "to"),
        ("like",),
        ("as",),
    }
)
COORDINATION = frozenset({"and", "or"})
POSSESSIVES = frozenset({"his", "her", "their", "its", "my", "our", "your"})
# Draws of another image's caption before listing all of them (rejection sampling:
# a head's captions rarely come from the target's image, so one draw usually does).
DRAWS = 8


class Constructed(NamedTuple):
    """The two options of one item, with where the distractor comes from."""

    target_text: str  # the target option: the caption, or (just scene +) its scene chunk
    target_edit: str  # "" when the target option is the caption itself, else what was done
    distractor_text: str
    distractor_source: str  # caption id the distractor text comes from (the target's for edits)
    distractor_image: str  # image id of that caption
    distractor_edit: str  # "" for an unedited corpus caption, else "<task>: <edit>"


@dataclass(frozen=True)
class Refusal:
    """Why a task builds no item from a caption: a short stable reason, counted by the pipeline.

    >>> Refusal("no_person_chunk") == Refusal("no_person_chunk"), Refusal("x") == "x"
    (True, False)
    """

    reason: str  # e.g. "no_person_chunk", "no_replacement"


class _Train(NamedTuple):
    caption_id: str
    image_id: str
    text: str


@dataclass(frozen=True)
class TaskContext:
    """What the tasks know of the train split, built once from its captions.

    ``cooccurring[kind][lemma]``: the head lemmas of that kind in the captions of
    any train image whose captions use ``lemma`` (``lemma`` included).
    ``mentions[(kind, plural)]``: head lemma -> (sorted mention texts, running
    totals of their counts), to draw a train mention with its frequency.
    ``sharing[kind][lemma]``: the train captions whose main mention has that head.
    """

    cooccurring: dict[str, dict[str, frozenset[str]]]
    mentions: dict[tuple[str, bool], dict[str, tuple[tuple[str, ...], np.ndarray]]]
    sharing: dict[str, dict[str, tuple[_Train, ...]]]
    # (kind, plural, lemma) -> the lemmas a replacement may have, running totals of counts
    _allowed: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(
        cls, train: Iterable[tuple[str, str, Sequence[str]]], min_images: int = 1
    ) -> "TaskContext":
        """From (caption id, image id, normalised tokens) of every train caption.

        Two heads co-occur when the captions of at least ``min_images`` train
        images use both; 1 is the paper's rule ("can co-occur"). On large
        corpora nearly every person head shares some image with "man" (105 of
        115 do on COCO val2017's 5,000 images), so a higher value keeps
        replacements for the frequent heads, at the cost of the paper's
        guarantee for rare pairings.
        """
        heads_of_image: dict[str, dict[str, set[str]]] = {kind: defaultdict(set) for kind in KINDS}
        counts: dict[tuple[str, bool], dict[str, Counter]] = defaultdict(
            lambda: defaultdict(Counter)
        )
        sharing: dict[str, dict[str, list[_Train]]] = {kind: defaultdict(list) for kind in KINDS}
        for caption_id, image_id, tokens in train:
            chunks = chunk(tokens)
            caption = _Train(str(caption_id), str(image_id), " ".join(tokens))
            for found in chunks:
                heads_of_image[found.kind][caption.image_id].add(found.lemma)
                counts[found.kind, found.plural][found.lemma][chunk_text(tokens, found)] += 1
            for kind in KINDS:
                main = main_chunk(chunks, kind)
                if main is not None:
                    sharing[kind][main.lemma].append(caption)
        return cls(
            cooccurring={kind: _cooccurring(heads_of_image[kind], min_images) for kind in KINDS},
            mentions={key: _drawable(by_lemma) for key, by_lemma in counts.items()},
            sharing={
                kind: {lemma: tuple(sorted(found)) for lemma, found in by_lemma.items()}
                for kind, by_lemma in sharing.items()
            },
        )


def _cooccurring(heads_of_image: dict[str, set[str]], min_images: int) -> dict[str, frozenset[str]]:
    """Head -> the heads used with it in the captions of at least ``min_images`` images."""
    images = Counter(
        (head, other) for heads in heads_of_image.values() for head in heads for other in heads
    )
    together: dict[str, set[str]] = defaultdict(set)
    for (head, other), count in images.items():
        if head == other or count >= min_images:
            together[head].add(other)
    return {head: frozenset(others) for head, others in together.items()}


def _drawable(by_lemma: dict[str, Counter]) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    drawable = {}
    for lemma, counter in by_lemma.items():
        texts = tuple(sorted(counter))
        drawable[lemma] = (texts, np.cumsum([counter[text] for text in texts]))
    return drawable


def main_chunk(chunks: Sequence[Chunk], kind: str) -> Chunk | None:
    """The person mention a task works on is the first ("the main actor"), the scene the last."""
    of_kind = [found for found in chunks if found.kind == kind]
    if not of_kind:
        return None
    return of_kind[0] if kind == PERSON else of_kind[-1]


Result = Constructed | Refusal
# A task's construction rule: (the task, its target caption, context, rng) -> item or refusal.
Rule = Callable[["Task", "Target", TaskContext, np.random.Generator], Result]


class Target(NamedTuple):
    """The caption a task builds its item from: its ids, normalised tokens and their chunks."""

    caption_id: str
    image_id: str
    tokens: Sequence[str]
    chunks: Sequence[Chunk]


# Where a task's distractor comes from (``Task.pool``).
OWN_CAPTION = "own_caption"  # the target's own caption, edited (replacements: train mentions)
OTHER_CAPTIONS = "other_captions"  # a caption of another image (the pipeline: of the same split)


@dataclass(frozen=True)
class Task:
    """One forced-choice task: its construction rule, the mention kind the rule works on, and
    where its distractor comes from. Nothing reads the name but the output (edits, the
    ``--decoys`` value, seeds): what a task does is in these fields.

    >>> REPLACE_SCENE.kind, REPLACE_SCENE.pool, REPLACE_SCENE.rule.__name__
    ('scene', 'own_caption', 'replace_mention')
    """

    name: str  # the --decoys value, the prefix of its edits, part of each target's seed key
    rule: Rule
    kind: str  # PERSON or SCENE: the main mention the rule works on
    pool: str  # OWN_CAPTION or OTHER_CAPTIONS

    @property
    def target_is_mention(self) -> bool:
        """Whether the target option is the caption's main mention alone (just scene (+))."""
        return self.rule is mention_as_target

    def build(
        self,
        caption_id: str,
        image_id: str,
        tokens: Sequence[str],
        chunks: Sequence[Chunk],
        context: TaskContext,
        rng: np.random.Generator,
    ) -> Result:
        """The item of one target caption, or why there is none."""
        return self.rule(self, Target(caption_id, image_id, tokens, chunks), context, rng)


def main_mention(task: Task, target: Target, part: bool = False) -> Chunk | Refusal:
    """The target's main mention of the task's kind (:func:`main_chunk`); with ``part``, only
    when the caption says more than the mention."""
    main = main_chunk(target.chunks, task.kind)
    if main is None:
        return Refusal(f"no_{task.kind}_chunk")
    if part and main.end - main.start == len(target.tokens):
        return Refusal("chunk_is_caption")
    return main


def swap_people(
    task: Task, target: Target, context: TaskContext, rng: np.random.Generator
) -> Result:
    """The first two person mentions swapped: "a man holding a child" -> "a child holding a man"."""
    caption_id, image_id, tokens, chunks = target
    people = [found for found in chunks if found.kind == task.kind]
    if not people:
        return Refusal(f"no_{task.kind}_chunk")
    if len(people) == 1:
        return Refusal("one_person_only")
    first, second = people[0], people[1]
    if first.lemma == second.lemma:
        return Refusal("same_person_head")
    if first.plural != second.plural:
        return Refusal("plural_mismatch")
    if tokens[first.start] in POSSESSIVES or tokens[second.start] in POSSESSIVES:
        return Refusal("possessive_mention")
    between = tuple(tokens[first.end : second.start])
    if _symmetric(between):
        return Refusal("symmetric_relation")
    switched = (
        list(tokens[: first.start])
        + list(tokens[second.start : second.end])
        + list(between)
        + list(tokens[first.start : first.end])
        + list(tokens[second.end :])
    )
    text = " ".join(tokens)
    return Constructed(
        text,
        "",
        " ".join(switched),
        caption_id,
        image_id,
        f"{task.name}: {chunk_text(tokens, first)!r} <-> {chunk_text(tokens, second)!r}",
    )


def _symmetric(between: tuple[str, ...]) -> bool:
    """Adjacent mentions, a coordination, or a symmetric predicate just before the second."""
    return (
        not between
        or bool(COORDINATION.intersection(between))
        or any(between[-len(relation) :] == relation for relation in SYMMETRIC_RELATIONS)
    )


def replace_mention(
    task: Task, target: Target, context: TaskContext, rng: np.random.Generator
) -> Result:
    """The main mention replaced by a train one with an unrelated head."""
    caption_id, image_id, tokens, _ = target
    original = main_mention(task, target)
    if isinstance(original, Refusal):
        return original
    replacement = draw_mention(context, original, rng)
    if replacement is None:
        return Refusal("no_replacement")
    before = chunk_text(tokens, original)
    edited = [*tokens[: original.start], replacement, *tokens[original.end :]]
    return Constructed(
        " ".join(tokens),
        "",
        " ".join(edited),
        caption_id,
        image_id,
        f"{task.name}: {before!r} -> {replacement!r}",
    )


def draw_mention(context: TaskContext, original: Chunk, rng: np.random.Generator) -> str | None:
    """A train mention of the same kind and number whose head never shares an image with
    the original's, drawn with its train frequency; None when there is none."""
    by_lemma = context.mentions.get((original.kind, original.plural), {})
    allowed, totals = _allowed_lemmas(context, original)
    if not allowed:
        return None
    draw = int(rng.integers(totals[-1]))
    index = bisect.bisect_right(totals, draw)
    texts, running = by_lemma[allowed[index]]
    within = draw - (totals[index - 1] if index else 0)
    return texts[int(np.searchsorted(running, within, side="right"))]


def _allowed_lemmas(context: TaskContext, original: Chunk) -> tuple[list[str], list[int]]:
    """The heads a replacement may have (sorted) and the running totals of their mentions."""
    key = (original.kind, original.plural, original.lemma)
    if key not in context._allowed:
        related = context.cooccurring[original.kind].get(original.lemma, {original.lemma})
        by_lemma = context.mentions.get((original.kind, original.plural), {})
        allowed = sorted(lemma for lemma in by_lemma if lemma not in related)
        totals = np.cumsum([int(by_lemma[lemma][1][-1]) for lemma in allowed]).tolist()
        context._allowed[key] = (allowed, totals)
    return context._allowed[key]


def other_image_caption(
    context: TaskContext, kind: str, lemma: str, image_id: str, rng: np.random.Generator
) -> _Train | None:
    """A random train caption whose main ``kind`` mention has head ``lemma``, of another image."""
    captions = context.sharing[kind].get(lemma, ())
    for _ in range(DRAWS):
        if not captions:
            return None
        caption = captions[int(rng.integers(len(captions)))]
        if caption.image_id != image_id:
            return caption
    others = [caption for caption in captions if caption.image_id != image_id]
    return others[int(rng.integers(len(others)))] if others else None


def share_head(
    task: Task, target: Target, context: TaskContext, rng: np.random.Generator
) -> Result:
    """A train caption of another image with the same main mention head."""
    _, image_id, tokens, _ = target
    main = main_mention(task, target)
    if isinstance(main, Refusal):
        return main
    other = other_image_caption(context, task.kind, main.lemma, image_id, rng)
    if other is None:
        return Refusal("no_other_image")
    return Constructed(" ".join(tokens), "", other.text, other.caption_id, other.image_id, "")


def mention_alone(
    task: Task, target: Target, context: TaskContext, rng: np.random.Generator
) -> Result:
    """The caption's own main mention alone."""
    caption_id, image_id, tokens, _ = target
    main = main_mention(task, target, part=True)
    if isinstance(main, Refusal):
        return main
    text = chunk_text(tokens, main)
    return Constructed(
        " ".join(tokens), "", text, caption_id, image_id, f"{task.name}: {text!r} alone"
    )


def mention_as_target(
    task: Task, target: Target, context: TaskContext, rng: np.random.Generator
) -> Result:
    """The main mention alone is the target; a caption of another image with its head is not."""
    _, image_id, tokens, _ = target
    main = main_mention(task, target, part=True)
    if isinstance(main, Refusal):
        return main
    other = other_image_caption(context, task.kind, main.lemma, image_id, rng)
    if other is None:
        return Refusal("no_other_image")
    text = chunk_text(tokens, main)
    return Constructed(
        text,
        f"{task.name}: {text!r} alone",
        other.text,
        other.caption_id,
        other.image_id,
        "",
    )


SWITCH_PEOPLE = Task("switch_people", swap_people, PERSON, OWN_CAPTION)
REPLACE_PERSON = Task("replace_person", replace_mention, PERSON, OWN_CAPTION)
REPLACE_SCENE = Task("replace_scene", replace_mention, SCENE, OWN_CAPTION)
SHARE_PERSON = Task("share_person", share_head, PERSON, OTHER_CAPTIONS)
SHARE_SCENE = Task("share_scene", share_head, SCENE, OTHER_CAPTIONS)
JUST_PERSON = Task("just_person", mention_alone, PERSON, OWN_CAPTION)
JUST_SCENE = Task("just_scene", mention_alone, SCENE, OWN_CAPTION)
JUST_SCENE_PLUS = Task("just_scene_plus", mention_as_target, SCENE, OTHER_CAPTIONS)

TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        SWITCH_PEOPLE,
        REPLACE_PERSON,
        REPLACE_SCENE,
        SHARE_PERSON,
        SHARE_SCENE,
        JUST_PERSON,
        JUST_SCENE,
        JUST_SCENE_PLUS,
    )
}


def task_counts(
    captions: Sequence[tuple[str, str, Sequence[str]]], seed: int = 0
) -> dict[str, Counter]:
    """Per task: how many items it builds ("built") and why it skips the other captions,
    when every caption is both in the train split and a target (the corpus-level potential).
    """
    context = TaskContext.build(captions)
    counts = {name: Counter() for name in TASKS}
    for caption_id, image_id, tokens in captions:
        chunks = chunk(tokens)
        for name, task in TASKS.items():
            rng = keyed_rng(seed, f"{name} {caption_id}")
            result = task.build(str(caption_id), str(image_id), tokens, chunks, context, rng)
            counts[name]["built" if isinstance(result, Constructed) else result.reason] += 1
    return counts


def corpus_captions(path: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(caption id, image id, tokens) of a corpus file, normalised and de-duplicated per image
    as the pipeline does (``normalize.NormalizeCaptions``)."""
    raw = sorted(parse_captions(path, read_file(path)), key=lambda c: caption_order(c.caption_id))
    seen, captions = set(), []
    for caption in raw:
        tokens = normalize_caption(caption.caption)
        if tokens and (caption.image_id, tokens) not in seen:
            seen.add((caption.image_id, tokens))
            captions.append((caption.caption_id, caption.image_id, tokens))
    return captions


if __name__ == "__main__":
    captions = corpus_captions(sys.argv[1])
    print(f"{len(captions)} captions")
    for name, counts in task_counts(captions).items():
        print(f"{name}: " + ", ".join(f"{why} {n}" for why, n in counts.most_common()))
