"""Hodosh & Hockenmaier 2016's forced-choice tasks as decoy strategies: target + one distractor.

Each task is a strategy of its own (``--decoys switch_people`` ...); what they
share is here, the language of each (its ``Task``: the rule, the mention kind,
where the distractor comes from) is in :mod:`transforms.english.forced_choice_tasks`.
Replacement mentions and head co-occurrence come from the train split, as in the
paper. Distractors that are whole captions (share person, share scene, just scene
(+): ``pool`` ``OTHER_CAPTIONS``) come from the target's own split, where the paper took
training captions: a dev or test target is never a training caption, so a
training distractor would give it away to any model that remembers the train
split (on COCO val2017 the novelty guess got 99% on share_person that way).

A distractor is either a caption of another image (share person, share scene,
just scene (+)), which must pass the validity rules as any decoy does, or text
built from the target's own caption (switch, replace, just person, just scene),
carried with its source caption and the edit. The near-copy rules cannot apply
to an edit, which is near its caption by design (just person is a substring of
it), so an edit must only differ from every caption of the target's image.

Stages: targets in shards (parallel); every worker process chunks the splits
it draws from once, for the tasks' contexts (``SharedTasks``).
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared

from schemas.options import Group, below, option
from schemas.records import SKIPPED, Decoy, Selection, Skip
from transforms.corpus.neighbours import shard_ranges
from transforms.corpus.split import SPLITS
from transforms.corpus.store import Corpus, load_corpus
from transforms.corpus.surface import sim_surf_batch
from transforms.english.chunker import chunk
from transforms.english.forced_choice_tasks import (
    JUST_PERSON,
    JUST_SCENE,
    JUST_SCENE_PLUS,
    OTHER_CAPTIONS,
    REPLACE_PERSON,
    REPLACE_SCENE,
    SHARE_PERSON,
    SHARE_SCENE,
    SWITCH_PEOPLE,
    Constructed,
    Refusal,
    Result,
    Task,
    TaskContext,
    main_chunk,
    mention_alone,
    replace_mention,
    swap_people,
)
from transforms.progress import Progress, timed
from transforms.seeds import keyed_rng
from transforms.strategies.base import DecoyStrategy
from transforms.strategies.config import StrategyConfig, StrategyOptions
from transforms.strategies.invariants import WrittenDataset, holds
from transforms.strategies.scoring import score
from transforms.strategies.validity import RejectionCounters, choose_valid

HODOSH2016 = """@inproceedings{hodosh2016focused,
  title = {Focused Evaluation for Image Description with Binary Forced-Choice Tasks},
  author = {Hodosh, Micah and Hockenmaier, Julia},
  booktitle = {Proceedings of the 5th Workshop on Vision and Language},
  pages = {19--28},
  year = {2016}
}"""

NOT_SCORED = float("nan")  # an edited distractor has no PV vector: no simPV, simSURF or Score
REPEATS = "decoys/distractor_repeats_the_target"
COPIES = "decoys/edit_copies_a_caption_of_the_image"
INVALID = "decoys/distractor_fails_the_validity_rules"


@dataclass
class TaskSources:
    """What every target of a process needs: the corpus and the contexts of the splits the
    task draws from (the train split's, or each split's for ``own_split`` tasks)."""

    corpus: Corpus
    row_of: dict[str, int]  # caption id -> corpus row
    contexts: dict[str, TaskContext]


def load_sources(directory: str, cooccurrence_images: int, own_split: bool) -> TaskSources:
    corpus = load_corpus(directory)
    captions = corpus.captions
    contexts = {}
    for split in SPLITS if own_split else ("train",):
        rows = np.flatnonzero(corpus.split_of == SPLITS.index(split)).tolist()
        contexts[split] = TaskContext.build(
            (
                (
                    captions["caption_id"][row],
                    captions["image_id"][row],
                    captions["text"][row].split(),
                )
                for row in rows
            ),
            min_images=cooccurrence_images,
        )
    row_of = {caption_id: row for row, caption_id in enumerate(captions["caption_id"])}
    return TaskSources(corpus, row_of, contexts)


@dataclass(frozen=True)
class SharedTasks:
    """The one TaskSources of a worker process (as ``neighbours.SharedCorpus``)."""

    shared: Shared
    cooccurrence_images: int
    own_split: bool

    def acquire(self, directory: str) -> TaskSources:
        return self.shared.acquire(
            lambda: load_sources(directory, self.cooccurrence_images, self.own_split),
            tag=f"tasks|{directory}|{self.cooccurrence_images}|{self.own_split}",
        )


def copies_an_image_caption(corpus: Corpus, target: int, text: str) -> bool:
    rows = corpus.rows_of_image(int(corpus.image_of[target]))
    return any(corpus.captions["text"][row] == text for row in rows.tolist())


class _Construct(beam.DoFn):
    def __init__(self, task: Task, sources: SharedTasks, config: StrategyConfig):
        self._task, self._sources, self._seed = task, sources, config.seed
        self._lam, self._rules = config.score_lambda, config.rules
        self._scratch = self._progress = self._rejections = None

    def setup(self):
        self._rejections = RejectionCounters()

    def process(self, shard: tuple[str, int, int]) -> Iterator:
        directory, start, end = shard
        sources = self._sources.acquire(directory)
        if self._scratch is None:
            self._scratch = sources.corpus.ngrams.scratch()  # per DoFn instance: not thread-safe
            self._progress = Progress("decoys", "targets", len(sources.corpus))
        with timed("decoys", "construct"):
            built = [(row, self._construct(sources, row)) for row in range(start, end)]
            outputs = list(self._selections(sources, built))
        self._progress.advance(end - start)
        yield from outputs

    def _construct(self, sources: TaskSources, row: int) -> Result:
        caption = sources.corpus.caption(row)
        tokens = caption.text.split()
        rng = keyed_rng(self._seed, f"{self._task.name} {caption.caption_id}")
        context = sources.contexts.get(caption.split) or sources.contexts["train"]
        return self._task.build(
            caption.caption_id, caption.image_id, tokens, chunk(tokens), context, rng
        )

    def _selections(self, sources: TaskSources, built: list) -> Iterator:
        corpus = sources.corpus
        for row, result in built:
            target = corpus.caption(row)
            reason = self._check(sources, row, result)
            if reason is not None:
                Metrics.counter(*reason.split("/", 1)).inc()
                yield beam.pvalue.TaggedOutput(
                    SKIPPED, Skip(reason, target.caption_id, target.split)
                )
                continue
            yield Selection(
                target,
                (self._distractor(sources, row, result),),
                target_text=result.target_text if result.target_edit else "",
                target_edit=result.target_edit,
            )

    def _check(self, sources: TaskSources, row: int, result: Result) -> str | None:
        """The skip reason of a target (a counter name), None when its distractor stands."""
        if isinstance(result, Refusal):
            return f"decoys/{result.reason}"
        if result.distractor_text == result.target_text:
            return REPEATS
        if result.distractor_edit:
            if copies_an_image_caption(sources.corpus, row, result.distractor_text):
                return COPIES
            return None
        candidate = np.array([[sources.row_of[result.distractor_source]]])
        chosen, rejected = choose_valid(
            sources.corpus,
            np.array([row]),
            candidate,
            self._sim_pv(sources, row, candidate),
            np.zeros((1, 1), dtype=np.int64),
            1,
            self._rules,
            self._scratch,
        )
        self._rejections.add(rejected)
        return None if chosen[0, 0] >= 0 else INVALID

    def _sim_pv(self, sources: TaskSources, row: int, candidate: np.ndarray) -> np.ndarray:
        embeddings = sources.corpus.embeddings
        return (embeddings[candidate] @ embeddings[row]).astype(np.float64)

    def _distractor(self, sources: TaskSources, row: int, result: Constructed) -> Decoy:
        if result.distractor_edit:
            return Decoy(
                result.distractor_source,
                result.distractor_image,
                result.distractor_text,
                NOT_SCORED,
                NOT_SCORED,
                NOT_SCORED,
                result.distractor_edit,
            )
        candidate = np.array([[sources.row_of[result.distractor_source]]])
        sim_pv = self._sim_pv(sources, row, candidate)
        sim_surf = sim_surf_batch(sources.corpus.ngrams, np.array([row]), candidate, self._scratch)
        scored = score(sim_pv, sim_surf, self._lam, self._rules.limit)
        return Decoy(
            result.distractor_source,
            result.distractor_image,
            result.distractor_text,
            float(sim_pv[0, 0]),
            float(sim_surf[0, 0]),
            float(scored[0, 0]),
            original=sources.corpus.captions["original"][sources.row_of[result.distractor_source]],
        )


def constructed_by_rule(dataset: WrittenDataset) -> None:
    """Each instance follows its task's construction rule (section 3 of the paper), in terms
    of the chunker's mentions (whose own precision is measured separately)."""
    task: Task = dataset.strategy.task
    caption = {c["caption_id"]: c for c in dataset.corpus}
    context = TaskContext.build(
        (
            (c["caption_id"], c["image_id"], c["text"].split())
            for c in dataset.corpus
            if c["split"] == "train"
        ),
        min_images=dataset.strategy.min_images(dataset.config),
    )
    for row in (row for rows in dataset.rows.values() for row in rows):
        target = caption[row["target_caption_id"]]
        text = target["text"].split()
        label, [decoy_source], [edit] = row["label"], row["decoy_caption_ids"], row["decoy_edits"]
        answer, decoy = row["options"][label].split(), row["options"][1 - label].split()
        main = main_chunk(chunk(text), task.kind)
        holds(main is not None, row["example_id"])
        mention = text[main.start : main.end]
        holds(bool(row["option_edits"][label]) == task.target_is_mention, row["example_id"])
        holds(answer == (mention if task.target_is_mention else text), row["example_id"])
        if task.pool == OTHER_CAPTIONS:
            source = caption[decoy_source]
            holds(not edit and source["text"].split() == decoy, row["example_id"])
            holds(source["split"] == target["split"], row["example_id"])
            holds(source["image_id"] != target["image_id"], row["example_id"])
            holds(main_chunk(chunk(decoy), task.kind).lemma == main.lemma, row["example_id"])
            continue
        holds(edit.startswith(f"{task.name}:"), row["example_id"])
        holds(decoy_source == target["caption_id"], row["example_id"])
        if task.rule is swap_people:
            holds(sorted(decoy) == sorted(text) and decoy != text, row["example_id"])
        elif task.rule is mention_alone:
            holds(decoy == mention, row["example_id"])
        else:  # replace: the mention alone differs, by a train mention of an unrelated head
            holds(task.rule is replace_mention, task.name)
            end = len(decoy) - (len(text) - main.end)
            holds(decoy[: main.start] == text[: main.start], row["example_id"])
            holds(decoy[end:] == text[main.end :], row["example_id"])
            inserted = " ".join(decoy[main.start : end])
            drawable = context.mentions[task.kind, main.plural]
            [lemma] = [lemma for lemma, (texts, _) in drawable.items() if inserted in texts]
            unrelated = lemma not in context.cooccurring[task.kind].get(main.lemma, ())
            holds(unrelated, row["example_id"])


class ForcedChoice(DecoyStrategy):
    """CorpusRef -> a Selection (target + one distractor) per target its task can build."""

    num_options = 2
    pools = ("all",)
    references = (HODOSH2016,)
    english_only = (
        "builds its distractors with an English chunker and lexicons, and no option gives it "
        "another language's"
    )
    invariants = (constructed_by_rule,)
    task: ClassVar[Task]  # its rule, mention kind and distractor pool

    @classmethod
    def min_images(cls, config: StrategyConfig) -> int:
        """Train images whose captions make two head words co-occur: only replacements
        consult co-occurrence, so the other tasks' contexts keep the paper's 1."""
        return 1

    def expand(self, corpus_ref):
        # A whole-caption distractor comes from the target's own split (module docstring).
        own_split = self.task.pool == OTHER_CAPTIONS
        return (
            corpus_ref
            | "Shards" >> beam.FlatMap(shard_ranges, shard_size=self.config.shard_size)
            | "Distribute" >> beam.Reshuffle()
            | "Construct"
            >> beam.ParDo(
                _Construct(
                    self.task,
                    SharedTasks(Shared(), self.min_images(self.config), own_split),
                    self.config,
                )
            ).with_outputs(SKIPPED, main="selections")
        )


EDIT_LIMITATION = (
    "The distractor is built by editing the target's caption with a lexicon chunker (README: "
    "the chunker's measured precision); a wrong chunk makes an odd sentence, which a language "
    "model may spot without the image (see the bigram LM row of the audit). "
)


class SwitchPeople(ForcedChoice):
    task = SWITCH_PEOPLE
    name = task.name
    summary = "Hodosh et al.: the caption with its two person mentions swapped (same words)"
    limitations = EDIT_LIMITATION + (
        "Only captions with two person mentions of the same number qualify; symmetric "
        "relations are excluded by a word list."
    )


@dataclass(frozen=True)
class CooccurrenceOptions(StrategyOptions):
    cooccurrence_images: int = option(
        1,
        "two head words co-occur (and never replace each other) when the captions of at least "
        "this many train images use both; 1 is the paper's rule, which on large corpora "
        "relates frequent heads such as 'man' to nearly every other",
        group=Group.DECOYS,
    )

    def problems(self) -> list[str]:
        return below(self, 1, ("cooccurrence_images",))


class Replacement(ForcedChoice):
    """A task whose distractor replaces a mention by a train one of an unrelated head."""

    Options = CooccurrenceOptions

    @classmethod
    def min_images(cls, config: StrategyConfig) -> int:
        return config.options.cooccurrence_images


class ReplacePerson(Replacement):
    task = REPLACE_PERSON
    name = task.name
    summary = "Hodosh et al.: the caption with its main person mention replaced by a training one"
    limitations = EDIT_LIMITATION


class ReplaceScene(Replacement):
    task = REPLACE_SCENE
    name = task.name
    summary = (
        "Hodosh et al.: the caption with its scene replaced by a training scene whose head "
        "never co-occurs with the original's"
    )
    limitations = EDIT_LIMITATION


class SharePerson(ForcedChoice):
    task = SHARE_PERSON
    name = task.name
    summary = "Hodosh et al.: a caption of another image of the split with the same person head"
    limitations = (
        "The distractor shares the target's person head word, so it may also fit the image."
    )


class ShareScene(ForcedChoice):
    task = SHARE_SCENE
    name = task.name
    summary = "Hodosh et al.: a caption of another image of the split with the same scene head"
    limitations = (
        "The distractor shares the target's scene head word, so it may also fit the image."
    )


class JustPerson(ForcedChoice):
    task = JUST_PERSON
    name = task.name
    summary = "Hodosh et al.: the caption's own person mention alone (a correct but shorter text)"
    limitations = (
        "The distractor is a substring of the target: any model preferring longer texts "
        "solves it without the image (the paper's point; see just_scene_plus)."
    )


class JustScene(ForcedChoice):
    task = JUST_SCENE
    name = task.name
    summary = "Hodosh et al.: the caption's own scene mention alone (a correct but shorter text)"
    limitations = JustPerson.limitations


class JustScenePlus(ForcedChoice):
    task = JUST_SCENE_PLUS
    name = task.name
    summary = (
        "Hodosh et al.'s just scene (+): the target is the caption's scene mention alone, the "
        "distractor a caption of another image of the split with the same scene head"
    )
    limitations = (
        "The target is shorter than the distractor: any model preferring shorter texts "
        "solves it without the image."
    )


TASK_STRATEGIES = (
    SwitchPeople,
    ReplacePerson,
    ReplaceScene,
    SharePerson,
    ShareScene,
    JustPerson,
    JustScene,
    JustScenePlus,
)
