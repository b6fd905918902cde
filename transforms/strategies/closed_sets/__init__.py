"""``--decoys closed_sets``: decoys no text-only model can tell from the target, by construction.

The captions of each split are grouped into *sets* of five captions of five
different images, mutually close in PV space, every pair valid both ways
round (``validity.pairs_allowed``). Each member of a set is the target of its
own instance and the other four are its decoys. The five instances of a set
show the same five option texts, so any function of the option texts (hub,
longest option, a learned text-only model, ...) picks the same text in all
five and is right on exactly one: text-only accuracy is exactly chance, on
every split, whatever the model. Sets form within a split, so the novelty
leak of a whole-corpus pool cannot arise.

Stages, none of which holds a whole split's neighbour graph, each a module here:

1. Allowed pairs (``pairs.py``): the ``K * --set_search_depth`` nearest captions of the
   same split, which of them may share a set, each caption's K nearest such, and the
   *part* of the split it lies in (``parts.py``: regions of PV space of at most
   ``--set_shard_size`` captions); parallel over shards of targets.
2. Forming sets in parts (``forming.py``): the edges go to their part in files
   (``transforms/spill.py``), and only where they are crosses the shuffle; each part is
   grouped on one worker at a time (``grouping.py``), then gets its own border sets
   (``cliques.py``).
3. The border pass (``border.py``): what the parts still left out gets a border set among
   its candidates across the parts' borders, the pairs among them checked in parallel
   (``leftovers.py``), the sets chosen in rounds up the part tree, each caption's room
   granted to one region at a time (``grants.py``), so no caption exceeds its room.
4. The selections: one per member of each set (``selections.py``), from the parts and
   every border round, merged through files.

A caption in no set is skipped and counted under why (``decoys/closed_set_<why>``):
``no_valid_neighbours`` (fewer than four candidates pass the validity rules with it),
``no_5_clique`` (no four of them are mutually valid), ``neighbours_taken`` (every such set
needs a caption already in as many sets as allowed). With ``--set_memberships`` m a caption
sits in at most m sets, and its further instances' example ids end in ``.2``, ``.3``, ...;
a caption a part holds joins at most one set across borders, under ``.m``.
"""

from dataclasses import dataclass

import apache_beam as beam

from schemas.layout import (
    BORDER_DIRECTORY,
    EDGES_DIRECTORY,
    LEFTOVERS_DIRECTORY,
    SELECTIONS_DIRECTORY,
)
from schemas.options import Group, below, option
from schemas.records import SKIPPED
from transforms.corpus.neighbours import BuildIndexes
from transforms.spill import ThroughFiles, folder_under
from transforms.strategies.base import NEIGHBOURS_MAY_FIT, DecoyStrategy
from transforms.strategies.closed_sets.border import BorderPass
from transforms.strategies.closed_sets.forming import FormSets
from transforms.strategies.closed_sets.pairs import AllowedPairs
from transforms.strategies.closed_sets.parts import plan_trees
from transforms.strategies.config import StrategyConfig, StrategyOptions
from transforms.strategies.invariants import WrittenDataset, holds

# What grows with the corpus crosses the runner through files under the corpus directory
# (transforms/spill.py): Beam's local runner held every edge of a 3.3M-caption run in its
# own process (7.5 GB), then the parts' selections and leftovers (3.6 GB, 8.2 GB as they
# were handed on), then the border rounds' groups (6.1 GB in the first).
SPILLED = (EDGES_DIRECTORY, LEFTOVERS_DIRECTORY, BORDER_DIRECTORY, SELECTIONS_DIRECTORY)


@dataclass(frozen=True)
class ClosedSetsOptions(StrategyOptions):
    set_neighbours: int = option(
        50,
        "a caption's set is formed among its K nearest captions of its split",
        group=Group.DECOYS,
    )
    set_search_depth: int = option(
        4,
        "captions searched per caption, as a multiple of K; its K nearest that pass the "
        "validity rules both ways round are the ones its sets are formed among",
        group=Group.DECOYS,
    )
    set_memberships: int = option(
        3,
        "the most sets a caption may belong to (1: a partition; more: captions the partition "
        "leaves out get overlay sets among captions in fewer sets)",
        group=Group.DECOYS,
    )
    set_shard_size: int = option(
        50_000,
        "sets form in parts of a split of at most this many captions, cut along PV space, in "
        "parallel; the captions a part leaves out get sets across the parts' borders",
        group=Group.DECOYS,
    )

    def problems(self) -> list[str]:
        small = ["--set_neighbours must be at least 4 (a set has five members)"]
        return (small if self.set_neighbours < 4 else []) + below(
            self, 1, ("set_memberships", "set_search_depth", "set_shard_size")
        )


def closed_option_sets(dataset: WrittenDataset) -> None:
    """Instances come in sets: five instances share one option set, each member the target
    once, of five images; so any function of the option texts alone is right on exactly one
    instance of each set."""
    for rows in dataset.rows.values():
        by_set: dict[frozenset, list[dict]] = {}
        for row in rows:
            by_set.setdefault(frozenset(row["option_caption_ids"]), []).append(row)
        for members in by_set.values():
            ids = [row["example_id"] for row in members]
            holds(len(members) == 5, ids)
            targets = {row["target_caption_id"] for row in members}
            holds(targets == set(members[0]["option_caption_ids"]), ids)
            holds(len({row["image_id"] for row in members}) == 5, ids)
            holds(len({frozenset(row["options"]) for row in members}) == 1, ids)


class ClosedSets(DecoyStrategy):
    name = "closed_sets"
    answered_in_sets = True
    summary = (
        "sets of 5 mutually close captions of 5 images within a split; each member is the target "
        "of one instance, the other 4 its decoys"
    )
    pools = ("split",)
    guarantee = (
        "exact: the 5 instances of a set share their option texts, so any text-only function "
        "is right on exactly 1 of 5"
    )
    limitations = NEIGHBOURS_MAY_FIT + (
        "Each caption is the target of up to `--set_memberships` instances, and the five "
        "instances of a set show the same five options: split-level accuracies count each set "
        "five times. Each instance is to be answered on its own: a model answering a set's "
        "five instances jointly (each option is the target of exactly one of them) would "
        "gain. `dmc-evaluate` and `dmc-train` also report the set score, the share of sets "
        "whose five instances are all answered right (Winoground's group score), which is 0 "
        "for any text-only model. Captions in no valid set are skipped and counted by why "
        "(`decoys/closed_set_no_valid_neighbours`, `decoys/closed_set_no_5_clique`, "
        "`decoys/closed_set_neighbours_taken`)."
    )
    invariants = (closed_option_sets,)
    Options = ClosedSetsOptions

    @classmethod
    def searched(cls, config: StrategyConfig) -> int:
        return config.options.set_neighbours * config.options.set_search_depth

    def expand(self, corpus_ref):
        """The outline: allowed pairs, forming sets in parts, the border pass, the
        selections (the module docstring's stages, each a composite of its own module)."""
        config, own = self.config, self.config.options
        searched = self.searched(config)
        indexed = corpus_ref | "BuildIndex" >> BuildIndexes(corpus=self.corpus)
        folders = {name: folder_under(indexed, name) for name in SPILLED}
        trees = indexed | "PlanParts" >> beam.Map(
            plan_trees, corpus=self.corpus, shard_size=own.set_shard_size, seed=config.seed
        )
        edges = indexed | "AllowedPairs" >> AllowedPairs(
            self.corpus, config, k=own.set_neighbours, searched=searched, trees=trees
        )
        formed = edges | "FormSets" >> FormSets(
            self.corpus,
            config,
            own.set_shard_size,
            own.set_memberships,
            folder=folders[EDGES_DIRECTORY],
            trees=trees,
        )
        border = (formed.leftovers, formed.capacity) | "BorderPass" >> BorderPass(
            self.corpus,
            config,
            own.set_memberships,
            searched=searched,
            folder=folders[LEFTOVERS_DIRECTORY],
            rounds_folder=folders[BORDER_DIRECTORY],
            trees=trees,
        )
        selections = (formed.selections, *border.selections)  # a tuple: Beam takes a list for one
        return {
            "selections": selections
            | "Selections"
            >> ThroughFiles(
                folder=folders[SELECTIONS_DIRECTORY], name=SELECTIONS_DIRECTORY, fence=config.fence
            ),
            SKIPPED: border.skipped,
        }
