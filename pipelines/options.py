"""Every option of the generator and the trainer, with its default and help: their one home.

The argparse flags and their --help groups, the manual's option tables (docs/) and the
run manifest are all derived from :class:`GenerateOptions` and :class:`TrainOptions`.
"""

import argparse
import dataclasses
import difflib
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser

from pipelines.versions import LABEL
from transforms.corpus.index import IndexConfig
from transforms.corpus.paragraph_vectors import PVConfig
from transforms.corpus.split import SPLITS
from transforms.corpus.store import DECOY_POOLS
from transforms.errors import InputError
from transforms.strategies.base import StrategyConfig
from transforms.strategies.registry import DEFAULT_STRATEGY, STRATEGIES, strategy_table
from transforms.strategies.validity import ValidityRules
from transforms.trainer.dataset_audit import AuditConfig
from transforms.trainer.features import FeatureConfig
from transforms.trainer.models import DECODINGS, TrainConfig, Vec2seqSize

REQUIRED = dataclasses.MISSING


class Group:
    """The option groups of ``--help`` and of the manual's option tables.

    Every option names one (``_option(..., group=Group.X)``), so a new option
    cannot land outside a group, and a misspelt group is an AttributeError.
    """

    IO = "input and output"
    SPLITS = "splits and seed"
    DECOYS = "decoys"
    PV = "paragraph vectors (PV-DBOW)"
    SEARCH = "search (OPTIMIZE-PV, OPTIMIZE-SCORE)"
    INDEX = "nearest-neighbour index"
    PERFORMANCE = "performance"
    AUDIT = "audit"
    FEATURES = "features"
    TRAINING = "training"
    MODELS = "models"
    REGENERATE = "regenerate"
    SAMPLE = "sample"
    RATING = "rating job"
    CHECKS = "checks"
    FILTER = "filter"
    LOGGING = "logging"


def _option(
    default: Any,
    help: str,
    choices: tuple[str, ...] | None = None,
    *,
    group: str,
    empty_means: str = "none",
) -> Any:
    """``empty_means``: what an empty-string default does, in a word or two for --help."""
    metadata = {"help": help, "choices": choices, "group": group, "empty_means": empty_means}
    if default is REQUIRED:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


def _dataset_option() -> Any:
    """``--dataset`` of every reader of a generated dataset (a new field each: dataclasses
    name the field they are given)."""
    return _option(
        REQUIRED,
        "generate's --output (its latest version is read) or one completed "
        "OUTPUT/versions/<version>",
        group=Group.IO,
    )


@dataclass(frozen=True)
class GenerateOptions:
    input: str = _option(
        REQUIRED,
        "comma-separated COCO captions_*.json or Flickr token files (paths or globs, "
        "read through Beam's filesystems)",
        group=Group.IO,
    )
    output: str = _option(
        REQUIRED,
        "output root: each run writes OUTPUT/versions/<version>/ and makes it the latest "
        "(OUTPUT/latest.txt, the OUTPUT/latest symlink on a local disk, OUTPUT/README.md); "
        "through Beam's filesystems",
        group=Group.IO,
    )
    label: str = _option(
        "", "prefix of the version name, e.g. coco2014 -> coco2014-<digest>", group=Group.IO
    )
    captions_license: str = _option(
        "cc-by-4.0",
        "licence of the input captions, for the dataset card (a HuggingFace licence id: COCO's "
        "captions are cc-by-4.0; 'other' where the corpus has its own terms)",
        group=Group.IO,
    )
    force: bool = _option(
        False,
        "run even when a completed version for these inputs and options exists",
        group=Group.IO,
    )
    merge_inputs: bool = _option(
        False,
        "let an image id occur in several input files and merge its captions (without it, "
        "that is an error naming both files)",
        group=Group.IO,
    )
    n_dev: int = _option(2000, "images in the dev split", group=Group.SPLITS)
    n_test: int = _option(2000, "images in the test split", group=Group.SPLITS)
    seed: int = _option(
        0, "seed of the split keys, PV training and option shuffling", group=Group.SPLITS
    )
    neighbours: int = _option(
        500, "N: candidates per target, the top-N by simPV", group=Group.DECOYS
    )
    decoys: str = _option(
        DEFAULT_STRATEGY,
        "the decoy strategy (docs/strategies/)",
        tuple(STRATEGIES),
        group=Group.DECOYS,
    )
    decoy_pool: str = _option(
        "",
        "where candidates come from: all (the whole corpus, as in the paper) or split (the "
        "target's split only); each strategy has its own: "
        + ", ".join(f"{name} {strategy.pools[0]}" for name, strategy in STRATEGIES.items()),
        ("", *DECOY_POOLS),
        group=Group.DECOYS,
        empty_means="the strategy's own",
    )
    set_neighbours: int = _option(
        50,
        "closed_sets: a caption's set is formed among its K nearest captions of its split",
        group=Group.DECOYS,
    )
    set_search_depth: int = _option(
        4,
        "closed_sets: captions searched per caption, as a multiple of K; its K nearest that "
        "pass the validity rules both ways round are the ones its sets are formed among",
        group=Group.DECOYS,
    )
    set_memberships: int = _option(
        3,
        "closed_sets: the most sets a caption may belong to (1: a partition; more: captions the "
        "partition leaves out get overlay sets among captions in fewer sets)",
        group=Group.DECOYS,
    )
    set_shard_size: int = _option(
        50_000,
        "closed_sets: sets form in parts of a split of at most this many captions, cut along PV "
        "space, in parallel; the captions a part leaves out get sets across the parts' borders",
        group=Group.DECOYS,
    )
    objects: str = _option(
        "",
        "madlibs_hard: COCO instances files (comma-separated paths or globs, e.g. "
        "annotations/instances_*2014.json) giving each image's objects",
        group=Group.DECOYS,
        empty_means="objects read from the captions through the COCO-category lexicon",
    )
    cooccurrence_images: int = _option(
        1,
        "replace_person/replace_scene: two head words co-occur (and never replace each other) "
        "when the captions of at least this many train images use both; 1 is the paper's rule, "
        "which on large corpora relates frequent heads such as 'man' to nearly every other",
        group=Group.DECOYS,
    )
    score_lambda: float = _option(
        0.3, "lambda of Score = lambda*simPV + (1-lambda)*simSURF", group=Group.DECOYS
    )
    surf_limit: float = _option(
        0.5,
        "L: candidates with simSURF >= L score 0; no decoy reaches it against any caption of "
        "the target's image",
        group=Group.DECOYS,
    )
    own_caption_rule: bool = _option(
        False,
        "also reject decoys whose simPV to the target reaches the target's mean simPV to its "
        "image's other captions",
        group=Group.DECOYS,
    )
    adversarial_rounds: int = _option(
        0,
        "rounds of adversarial filtering (AFLite-like): decoys of instances a cross-fitted "
        "text-only model gets right are swapped for reserve candidates; 0 = off; not for "
        "strategies with a guarantee",
        group=Group.DECOYS,
    )
    adversarial_reserve: int = _option(
        8,
        "adversarial filtering: further valid candidates kept per target, which it may swap in",
        group=Group.DECOYS,
    )
    pv_dim: int = _option(256, "PV-DBOW vector size (paper: 1024)", group=Group.PV)
    pv_epochs: int = _option(
        20, "PV-DBOW training epochs (paper: 5, too few below ~500k captions)", group=Group.PV
    )
    pv_min_count: int = _option(1, "PV-DBOW: ignore words rarer than this", group=Group.PV)
    pv_hs: int = _option(
        1, "PV-DBOW: 1 = hierarchical softmax (paper's softmax loss)", group=Group.PV
    )
    pv_negative: int = _option(0, "PV-DBOW: negative samples (0 = none)", group=Group.PV)
    pv_workers: int = _option(
        1,
        "PV-DBOW training threads; 1 is reproducible for a seed, more is faster but not",
        group=Group.PV,
    )
    pv_train_sample: int = _option(
        1_000_000,
        "corpora with more captions than this train PV on a seeded sample of this many (by "
        "--seed and caption id) and infer the others' vectors in parallel; 0 = train on all",
        group=Group.PV,
    )
    pv_model: str = _option(
        "",
        "use this trained Doc2Vec model instead of training one: a `pv/doc2vec.model` written "
        "by `generate` or the winner `optimize` kept, on exactly these captions in this order "
        "(the model carries their checksum); one saved by gensim itself, or of other captions, "
        "is refused",
        group=Group.PV,
    )
    optimize: bool = _option(
        False,
        "generate: run OPTIMIZE-PV and OPTIMIZE-SCORE first and use their winners",
        group=Group.SEARCH,
    )
    pv_dim_grid: str = _option(
        "64,256,512,1024", "OPTIMIZE-PV: PV dimensions to try", group=Group.SEARCH
    )
    pv_epochs_grid: str = _option("5,10,20,50", "OPTIMIZE-PV: PV epochs to try", group=Group.SEARCH)
    lambda_grid: str = _option(
        "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
        "OPTIMIZE-SCORE: lambdas to try",
        group=Group.SEARCH,
    )
    search_split: str = _option(
        "dev", "the split whose captions the searches evaluate on", SPLITS, group=Group.SEARCH
    )
    search_sample_images: int = _option(
        0,
        "search on only this many images (smallest split keys: dev first); 0 = all",
        group=Group.SEARCH,
    )
    index_exact_limit: int = _option(
        100_000,
        "pools of up to this many captions are searched exactly; larger ones by IVF",
        group=Group.INDEX,
    )
    ivf_nlist: int = _option(0, "IVF clusters (0: 4 * sqrt(pool size))", group=Group.INDEX)
    ivf_nprobe: int = _option(
        0,
        "IVF clusters scanned per query (0: enough to scan --ivf_scan x N vectors)",
        group=Group.INDEX,
    )
    ivf_scan: float = _option(
        20.0,
        "with --ivf_nprobe 0: vectors each query scans, as a multiple of N (recall vs time)",
        group=Group.INDEX,
    )
    search_threads: int = _option(
        0,
        "faiss threads per worker process (0: all cores; 1 when running several workers)",
        group=Group.PERFORMANCE,
    )
    shard_size: int = _option(
        5000, "targets per shard of neighbour search and scoring", group=Group.PERFORMANCE
    )
    batch_size: int = _option(
        500, "targets per faiss query and scoring batch", group=Group.PERFORMANCE
    )
    output_shards: int = _option(
        0,
        "files per split and format (0: one per 20,000 captions of the split)",
        group=Group.PERFORMANCE,
    )
    audit_sample: int = _option(
        20_000,
        "the learned text-only audits (Text-FFNN, trainer defaults, and the bigram LM) are "
        "fitted on this many train instances; 0 = all",
        group=Group.AUDIT,
    )

    def pv_config(self) -> PVConfig:
        return PVConfig(
            dim=self.pv_dim,
            epochs=self.pv_epochs,
            min_count=self.pv_min_count,
            hs=self.pv_hs,
            negative=self.pv_negative,
            seed=self.seed,
            workers=self.pv_workers,
            train_sample=self.pv_train_sample,
        )

    def strategy_config(self) -> StrategyConfig:
        config = StrategyConfig(
            neighbours=self.neighbours,
            score_lambda=self.score_lambda,
            seed=self.seed,
            decoy_pool=self.decoy_pool,
            rules=ValidityRules(limit=self.surf_limit, own_caption_rule=self.own_caption_rule),
            index=self.index_config(),
            shard_size=self.shard_size,
            batch_size=self.batch_size,
            set_neighbours=self.set_neighbours,
            set_search_depth=self.set_search_depth,
            set_memberships=self.set_memberships,
            set_shard_size=self.set_shard_size,
            objects=self.objects,
            cooccurrence_images=self.cooccurrence_images,
            adversarial_rounds=self.adversarial_rounds,
            adversarial_reserve=self.adversarial_reserve,
        )
        return STRATEGIES[self.decoys].resolve(config)

    def audit_config(self, dataset: str) -> AuditConfig:
        """The audit of ``dataset`` with the trainer's default settings and this run's seed."""
        trainer = TrainOptions(dataset=dataset, output="", seed=self.seed)
        return AuditConfig(
            features=trainer.feature_config(dataset),
            train=trainer.train_config(),
            train_sample=self.audit_sample,
        )

    def search_grid(self) -> list[tuple[int, int]]:
        return [
            (dim, epochs)
            for dim in _ints(self.pv_dim_grid)
            for epochs in _ints(self.pv_epochs_grid)
        ]

    def lambdas(self) -> list[float]:
        return [float(value) for value in self.lambda_grid.split(",")]

    def index_config(self) -> IndexConfig:
        return IndexConfig(
            exact_limit=self.index_exact_limit,
            nlist=self.ivf_nlist,
            nprobe=self.ivf_nprobe,
            scan=self.ivf_scan,
            neighbours=self.neighbours,
            seed=self.seed,
            threads=self.search_threads,
        )

    def validate(self) -> None:
        problems = []
        if self.n_dev < 0 or self.n_test < 0:
            problems.append("--n_dev and --n_test must be >= 0")
        if self.set_neighbours < 4:
            problems.append("--set_neighbours must be at least 4 (a set has five members)")
        if self.neighbours < 4:
            problems.append("--neighbours must be at least 4 (four decoys per instance)")
        if not 0.0 <= self.score_lambda <= 1.0:
            problems.append("--score_lambda must be in [0, 1]")
        if not 0.0 < self.surf_limit <= 1.0:
            problems.append("--surf_limit must be in (0, 1]")
        if self.pv_hs not in (0, 1) or (self.pv_hs == 0 and self.pv_negative == 0):
            problems.append("--pv_hs must be 0 or 1, and with 0, --pv_negative must be > 0")
        for name in (
            "pv_dim",
            "pv_epochs",
            "pv_min_count",
            "pv_workers",
            "shard_size",
            "batch_size",
            "set_memberships",
            "set_search_depth",
            "set_shard_size",
            "cooccurrence_images",
        ):
            if getattr(self, name) < 1:
                problems.append(f"--{name} must be >= 1")
        try:
            grid, lambdas = self.search_grid(), self.lambdas()
        except ValueError:
            problems.append("grids are comma-separated numbers, e.g. --pv_epochs_grid 5,10,20")
        else:
            if not grid or min(min(point) for point in grid) < 1:
                problems.append("--pv_dim_grid and --pv_epochs_grid need positive integers")
            if not lambdas or not all(0.0 <= lam <= 1.0 for lam in lambdas):
                problems.append("--lambda_grid needs values in [0, 1]")
        for name in (
            "ivf_nlist",
            "ivf_nprobe",
            "search_threads",
            "search_sample_images",
            "output_shards",
            "audit_sample",
            "adversarial_rounds",
            "adversarial_reserve",
            "pv_train_sample",
        ):
            if getattr(self, name) < 0:
                problems.append(f"--{name} must be >= 0")
        if self.ivf_scan <= 0:
            problems.append("--ivf_scan must be > 0")
        pools = STRATEGIES[self.decoys].pools
        if self.decoy_pool and self.decoy_pool not in pools:
            problems.append(
                f"--decoys {self.decoys} takes --decoy_pool {' or '.join(pools)}, "
                f"not {self.decoy_pool}"
            )
        if self.adversarial_rounds and not STRATEGIES[self.decoys].filterable:
            filterable = " or ".join(name for name, s in STRATEGIES.items() if s.filterable)
            problems.append(
                f"--adversarial_rounds filters the decoys of --decoys {filterable}, "
                f"not {self.decoys}"
            )
        if self.objects and not STRATEGIES[self.decoys].reads_objects:
            readers = " or ".join(name for name, s in STRATEGIES.items() if s.reads_objects)
            problems.append(f"--objects is read by --decoys {readers}, not {self.decoys}")
        if self.label and not LABEL.fullmatch(self.label):
            problems.append("--label takes letters, digits, '_' and '-', starting alphanumeric")
        if problems:
            raise InputError("; ".join(problems))


@dataclass(frozen=True)
class TrainOptions:
    dataset: str = _dataset_option()
    output: str = _option(
        REQUIRED,
        "where metrics.json, table.txt, accuracy.png, models/ and captions/ are written",
        group=Group.IO,
    )
    image_features: str = _option(
        "",
        "Parquet (columns image, features) or .npy (with --image_ids) of image vectors; "
        "without it, concept features read off the image's other captions (an oracle, not "
        "vision)",
        group=Group.FEATURES,
        empty_means="concept features",
    )
    image_ids: str = _option(
        "",
        "with a .npy --image_features: its rows' image ids or file names, one a line",
        group=Group.FEATURES,
    )
    dim: int = _option(
        256,
        "longer image and caption vectors are randomly projected to this size",
        group=Group.FEATURES,
    )
    seed: int = _option(
        0, "seed of the projections, initial weights and minibatch order", group=Group.TRAINING
    )
    concept_vocabulary: int = _option(
        1000, "concept features: the most frequent visual words", group=Group.FEATURES
    )
    concept_min_count: int = _option(
        5, "concept features: ignore words in fewer train captions", group=Group.FEATURES
    )
    ridge_alphas: str = _option(
        "0.1,1,10,100,1000",
        "Baseline-I2C/C2I: ridge penalties tried; the best on dev wins",
        group=Group.MODELS,
    )
    epochs: int = _option(
        20, "LinM, FFNNs: passes over train; the best epoch on dev is kept", group=Group.TRAINING
    )
    batch_size: int = _option(
        20,
        "LinM, FFNNs, Vec2seq+FFNN: instances per step (paper: 20)",
        group=Group.TRAINING,
    )
    linm_learning_rate: float = _option(
        0.001, "Baseline-LinM: subgradient step size", group=Group.MODELS
    )
    linm_l2: float = _option(1e-4, "Baseline-LinM: L2 penalty on Theta", group=Group.MODELS)
    ffnn_hidden: str = _option(
        "256,128", "FFNNs: sizes of the two ReLU hidden layers", group=Group.MODELS
    )
    ffnn_learning_rate: float = _option(
        0.05,
        "FFNNs: Adagrad learning rate (paper: 0.01 over 3M steps)",
        group=Group.MODELS,
    )
    clip_norm: float = _option(
        4.0,
        "FFNNs and Vec2seq+FFNN: gradients are clipped to this norm (paper: 4)",
        group=Group.MODELS,
    )
    vec2seq_sizes: str = _option(
        "256:256:64",
        "Vec2seq+FFNN: GRU state:FFNN hidden-1:hidden-2, one model per comma-separated size "
        "(Table 4's, e.g. 64:64:16,256:256:64,512:512:128)",
        group=Group.MODELS,
    )
    lambda_gen: str = _option(
        "1",
        "Vec2seq+FFNN: weight of Eq. 4's generation loss, one model per comma-separated value "
        "(Table 5's sweep, e.g. 0,0.1,1,10)",
        group=Group.MODELS,
    )
    vec2seq_epochs: int = _option(
        5,
        "Vec2seq+FFNN: passes over train; the best epoch on dev is kept",
        group=Group.TRAINING,
    )
    vec2seq_learning_rate: float = _option(
        0.01, "Vec2seq+FFNN: Adagrad learning rate (paper: 0.01)", group=Group.MODELS
    )
    vocabulary_min_count: int = _option(
        5,
        "Vec2seq+FFNN: words seen fewer times among the train targets are <unk> (paper: 5)",
        group=Group.MODELS,
    )
    decoding: str = _option(
        "greedy",
        "Vec2seq+FFNN: how captions are generated for CIDEr and ROUGE-L",
        DECODINGS,
        group=Group.MODELS,
    )
    beam_size: int = _option(
        3, "Vec2seq+FFNN: captions kept per step with --decoding beam", group=Group.MODELS
    )
    fit_buffer: int = _option(
        10_000,
        "fitting holds at most this many examples at once (the shuffle buffer of train's "
        "minibatches; dev and statistics passes read through it too)",
        group=Group.TRAINING,
    )

    def feature_config(self, dataset: str) -> FeatureConfig:
        """``dataset``: the completed dataset directory the run resolved."""
        return FeatureConfig(
            dataset=dataset,
            dim=self.dim,
            seed=self.seed,
            image_features=self.image_features,
            image_ids=self.image_ids,
            concept_vocabulary=self.concept_vocabulary,
            concept_min_count=self.concept_min_count,
        )

    def train_config(self) -> TrainConfig:
        return TrainConfig(
            ridge_alphas=tuple(float(alpha) for alpha in self.ridge_alphas.split(",")),
            epochs=self.epochs,
            batch_size=self.batch_size,
            linm_learning_rate=self.linm_learning_rate,
            linm_l2=self.linm_l2,
            ffnn_hidden=tuple(_ints(self.ffnn_hidden)),
            ffnn_learning_rate=self.ffnn_learning_rate,
            clip_norm=self.clip_norm,
            seed=self.seed,
            vec2seq_sizes=tuple(_sizes(self.vec2seq_sizes)),
            lambda_gen=tuple(float(value) for value in self.lambda_gen.split(",")),
            vec2seq_epochs=self.vec2seq_epochs,
            vec2seq_learning_rate=self.vec2seq_learning_rate,
            vocabulary_min_count=self.vocabulary_min_count,
            decoding=self.decoding,
            beam_size=self.beam_size,
            fit_buffer=self.fit_buffer,
        )

    def validate(self) -> None:
        problems = []
        positive = ("dim", "concept_vocabulary", "epochs", "batch_size", "vec2seq_epochs")
        for name in (*positive, "vocabulary_min_count", "beam_size"):
            if getattr(self, name) < 1:
                problems.append(f"--{name} must be >= 1")
        if self.decoding not in DECODINGS:
            problems.append(f"--decoding is one of {', '.join(DECODINGS)}")
        if self.fit_buffer < 2 * self.batch_size:
            problems.append("--fit_buffer must hold at least two minibatches (2 * --batch_size)")
        for name in (
            "linm_learning_rate",
            "ffnn_learning_rate",
            "clip_norm",
            "vec2seq_learning_rate",
        ):
            if getattr(self, name) <= 0:
                problems.append(f"--{name} must be > 0")
        if self.linm_l2 < 0:
            problems.append("--linm_l2 must be >= 0")
        try:
            config = self.train_config()
        except ValueError:
            problems.append(
                "--ridge_alphas, --ffnn_hidden and --lambda_gen are comma-separated numbers, "
                "--vec2seq_sizes comma-separated state:hidden-1:hidden-2 triples"
            )
        else:
            if min(config.lambda_gen) < 0:
                problems.append("--lambda_gen needs values >= 0")
            if min(min(size.state, *size.hidden) for size in config.vec2seq_sizes) < 1:
                problems.append("--vec2seq_sizes needs positive sizes")
            if not config.ridge_alphas or min(config.ridge_alphas) <= 0:
                problems.append("--ridge_alphas needs positive values")
            if len(config.ffnn_hidden) != 2 or min(config.ffnn_hidden) < 1:
                problems.append("--ffnn_hidden needs two positive sizes, e.g. 256,128")
        if self.image_features.endswith(".npy") != bool(self.image_ids):
            problems.append("--image_ids is needed with a .npy --image_features, and only then")
        if problems:
            raise InputError("; ".join(problems))


def _ints(values: str) -> list[int]:
    return [int(value) for value in values.split(",")]


def _sizes(values: str) -> list[Vec2seqSize]:
    """ "256:256:64,64:64:16" -> Vec2seq+FFNN sizes; anything else is a ValueError."""
    sizes = []
    for value in values.split(","):
        state, first, second = (int(part) for part in value.split(":"))
        sizes.append(Vec2seqSize(state, (first, second)))
    return sizes


class StrictParser(argparse.ArgumentParser):
    """No abbreviations, and a bad flag value is an InputError (one line), not a usage dump."""

    def __init__(self, **kwargs):
        super().__init__(allow_abbrev=False, **kwargs)

    def error(self, message: str):
        raise InputError(message)


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps the description and epilog line by line: paragraphs fit the terminal, an
    indented example command line stays as written (argparse would run it into the text)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(
            line
            if line.startswith(" ")
            else textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent)
            for line in text.splitlines()
        )


BEAM_OPTIONS = (
    "Any other flag is passed to Apache Beam as a pipeline option, e.g. --runner "
    "DataflowRunner --project PROJECT --region REGION --temp_location gs://BUCKET/tmp "
    "--setup_file ./setup.py to run on Dataflow, or --direct_num_workers 2 "
    "--direct_running_mode multi_processing to use two cores locally. A flag that is "
    "neither one of the options above nor Beam's is refused with the closest known flag, "
    "e.g. unknown flag --sead (did you mean --seed?)."
)
NO_OTHER_OPTIONS = (
    "No other flag is taken: an unknown one is refused with the closest known flag, "
    "e.g. unknown flag --sead (did you mean --seed?)."
)


@dataclass(frozen=True)
class Command:
    """What ``--help`` says about an entry point besides its options.

    ``prog`` is the entry point's console script in setup.py: the help names the
    command users install and type, also when it runs as ``python -m pipelines.<module>``.
    """

    prog: str
    description: str  # one paragraph for users (the module docstring is for developers)
    example: str  # a short command line
    manual: str  # the docs/ page that documents it and its options
    beam: bool = True  # other flags are Beam pipeline options

    def parser(self, usage: str | None = None) -> StrictParser:
        return StrictParser(
            prog=self.prog,
            usage=usage,
            description=f"{self.description}\n\nexample:\n  {self.example}",
            epilog=f"{BEAM_OPTIONS if self.beam else NO_OTHER_OPTIONS} The manual documents "
            f"it all: {self.manual}.",
            formatter_class=_HelpFormatter,
        )


def shown_default(option: dataclasses.Field) -> str:
    """An option's default as --help and the manual say it: never an empty string."""
    if option.default is REQUIRED:
        return "required"
    if option.type is bool:
        return "on" if option.default else "off"
    if option.default == "":
        return option.metadata["empty_means"]
    return str(option.default)


def add_arguments(parser: argparse.ArgumentParser, options_type: type = GenerateOptions) -> None:
    """Each option under its group's heading, which options of several types may share."""
    groups = {group.title: group for group in parser._action_groups}
    for option in dataclasses.fields(options_type):
        title = option.metadata["group"]
        if title not in groups:
            groups[title] = parser.add_argument_group(title)
        required, choices = option.default is REQUIRED, option.metadata["choices"]
        help = option.metadata["help"] + (
            " (required)" if required else f" (default: {shown_default(option)})"
        )
        if option.type is bool:
            groups[title].add_argument(f"--{option.name}", action="store_true", help=help)
            continue
        groups[title].add_argument(
            f"--{option.name}",
            type=option.type,
            required=required,
            default=None if required else option.default,
            choices=choices,
            # an empty choice (the default) is not one to type: {all,split}, not {,all,split}
            metavar="{" + ",".join(filter(None, choices)) + "}" if choices else None,
            help=help,
        )


def beam_parser() -> argparse.ArgumentParser:
    """Every Beam pipeline option, as PipelineOptions itself collects them."""
    parser = _BeamArgumentParser(allow_abbrev=False)
    for options_class in {str(c): c for c in PipelineOptions.__subclasses__()}.values():
        options_class._add_argparse_args(parser)
    return parser


def refuse_unknown(unknown: list[str], known: Iterable[str]) -> None:
    """An unknown flag (or stray value) is an InputError with the closest known flag.

    >>> refuse_unknown(["--sead", "7"], ["--seed", "--label"])
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: unknown flag --sead (did you mean --seed?)
    """
    if not unknown:
        return
    word = unknown[0]
    if not word.startswith("-"):
        raise InputError(f"unexpected argument {word!r}: every value follows its --flag")
    flag = word.split("=", 1)[0]
    close = difflib.get_close_matches(flag, list(known), n=1)
    hint = f" (did you mean {close[0]}?)" if close else " (--help lists the flags)"
    raise InputError(f"unknown flag {flag}{hint}")


def flags_parser(command: Command | None, *options_types: type) -> StrictParser:
    """The parser of ``options_types``' flags; with ``command``, its --help for users.

    The usage line names the required flags only: listing all forty would hide them.
    """
    if command is None:
        parser = StrictParser()
    else:
        required = " ".join(
            f"--{option.name} {option.name.upper()}"
            for options_type in options_types
            for option in dataclasses.fields(options_type)
            if option.default is REQUIRED
        )
        beam = " [Beam pipeline option ...]" if command.beam else ""
        parser = command.parser(f"%(prog)s {required} [option ...]{beam}")
    for options_type in options_types:
        add_arguments(parser, options_type)
    return parser


def parse_flags(
    argv: list[str] | None, *options_types: type, command: Command | None = None
) -> tuple[list[Any], list[str]]:
    """Our flags -> one instance per type; the rest must be Beam pipeline options.

    A flag that is neither ours nor Beam's is refused (Beam alone would only log a warning
    and run with the default), and so is a Beam flag for a ``command`` that runs no pipeline.
    """
    parser = flags_parser(command, *options_types)
    known, beam_args = parser.parse_known_args(argv)
    beam = beam_parser()
    _, unknown = beam.parse_known_args(beam_args)
    refuse_unknown(unknown, [*parser._option_string_actions, *beam._option_string_actions])
    if beam_args and command is not None and not command.beam:
        raise InputError(
            f"unknown flag {beam_args[0]}: {command.prog} runs no Beam pipeline, so it takes "
            "no pipeline options"
        )
    values = vars(known)
    parsed = [
        options_type(**{f.name: values[f.name] for f in dataclasses.fields(options_type)})
        for options_type in options_types
    ]
    return parsed, beam_args


def parse_options(
    argv: list[str] | None, options_type: type = GenerateOptions
) -> tuple[Any, list[str]]:
    """Our flags -> ``options_type``; the rest, all Beam pipeline options, for PipelineOptions."""
    [options], beam_args = parse_flags(argv, options_type)
    return options, beam_args


def markdown_table(options_type: type = GenerateOptions) -> str:
    """The manual's option tables (docs/): one per group, under its name, as --help groups them.

    A type whose options are all in one group gets one table without a name.
    """
    groups: dict[str, list[str]] = {}
    for option in dataclasses.fields(options_type):
        default = shown_default(option)
        if option.default not in (REQUIRED, "") and option.type is not bool:
            default = f"`{default}`"
        groups.setdefault(option.metadata["group"], []).append(
            f"| `--{option.name}` | {default} | {option.metadata['help']} |"
        )
    tables = {
        title: "\n".join(["| option | default | meaning |", "| --- | --- | --- |", *rows])
        for title, rows in groups.items()
    }
    if len(tables) == 1:
        return next(iter(tables.values()))
    return "\n\n".join(
        f"**{title[0].upper()}{title[1:]}**\n\n{table}" for title, table in tables.items()
    )


@dataclass(frozen=True)
class RegenerateOptions:
    """pipelines.regenerate's own flags; the rest are generate's (and Beam's)."""

    train: bool = _option(
        False,
        "then train and evaluate (pipelines.train defaults: concept features) into "
        "OUTPUT/versions/<version>/evaluation, unless that version has been evaluated already",
        group=Group.REGENERATE,
    )


@dataclass(frozen=True)
class PreviewOptions:
    dataset: str = _dataset_option()
    output: str = _option(
        REQUIRED,
        "the folder to write: index.html and images/; open index.html in a browser, offline too",
        group=Group.IO,
    )
    images: str = _option(
        "",
        "a folder of the images' files, by image_file (e.g. COCO's val2014/): the shown ones are "
        "copied into OUTPUT/images/; an image not there shows its image_url, else a placeholder",
        group=Group.IO,
    )
    per_split: int = _option(20, "instances shown per split", group=Group.SAMPLE)
    seed: int = _option(
        0,
        "seed of the sample: a seed shows the same instances whatever the order of the files",
        group=Group.SAMPLE,
    )

    def validate(self) -> None:
        if self.per_split < 1:
            raise InputError(f"--per_split {self.per_split}: must be at least 1")


@dataclass(frozen=True)
class RateExportOptions:
    dataset: str = _dataset_option()
    output: str = _option(
        REQUIRED,
        "the job's folder: app/ (the rating app: open app/index.html, offline too), crowd.csv "
        "(bulk upload for a crowd platform) and job.json (the answer key: keep it, do not "
        "hand it out)",
        group=Group.IO,
    )
    images: str = _option(
        "",
        "a folder of the images' files, by image_file: those asked are copied into app/images/; "
        "an image not there shows its image_url, else a placeholder",
        group=Group.IO,
    )
    image_base_url: str = _option(
        "",
        "crowd.csv's image address is this prefix + image_file (where the platform can fetch the "
        "images); without it, the instance's image_url",
        group=Group.IO,
        empty_means="image_url",
    )
    split: str = _option(
        "dev", "the split the questions come from", ("dev", "test"), group=Group.RATING
    )
    instances: int = _option(
        1000,
        "instances asked (paper: 1,000 from dev); fewer if the split has fewer",
        group=Group.RATING,
    )
    raters: int = _option(
        3, "raters who answer each instance (paper: 3; Visual Madlibs: 5)", group=Group.RATING
    )
    training: int = _option(
        5, "training items from train, shown first with the target marked", group=Group.RATING
    )
    gold: int = _option(
        10,
        "gold items from train mixed among the questions, to check each rater's attention",
        group=Group.RATING,
    )
    seed: int = _option(
        0,
        "seed of the sample and of each rater's question and option order",
        group=Group.RATING,
    )

    def validate(self) -> None:
        problems = [
            f"--{name} {getattr(self, name)}: must be at least {least}"
            for name, least in (("instances", 1), ("raters", 1), ("training", 0), ("gold", 0))
            if getattr(self, name) < least
        ]
        if problems:
            raise InputError("; ".join(problems))


@dataclass(frozen=True)
class RateImportOptions:
    job: str = _option(REQUIRED, "the folder dmc-rate export wrote (its job.json)", group=Group.IO)
    answers: str = _option(
        REQUIRED,
        "comma-separated answers files or globs, in any mix: the app's JSON or CSV downloads, "
        "a crowd platform's results CSV (WorkerId, Input.example_id, Answer.option, "
        "WorkTimeInSeconds)",
        group=Group.IO,
    )
    output: str = _option(
        "",
        "where to write the report and the per-instance results",
        group=Group.IO,
        empty_means="DATASET_VERSION/ratings/<job>",
    )
    min_seconds: float = _option(
        2.0, "answers faster than this many seconds are flagged as too fast", group=Group.CHECKS
    )
    drop_too_fast: bool = _option(
        False, "leave the too-fast answers out of the table (they are counted)", group=Group.CHECKS
    )
    gold_pass: float = _option(
        0.8,
        "raters right on fewer than this share of the gold items are reported",
        group=Group.CHECKS,
    )
    drop_failed_raters: bool = _option(
        False,
        "leave out every answer of the raters the gold items report (they are counted)",
        group=Group.CHECKS,
    )

    def validate(self) -> None:
        if self.min_seconds < 0:
            raise InputError(f"--min_seconds {self.min_seconds}: must be at least 0")
        if not 0 <= self.gold_pass <= 1:
            raise InputError(f"--gold_pass {self.gold_pass}: must be in [0, 1]")


@dataclass(frozen=True)
class RateFilterOptions:
    ratings: str = _option(
        REQUIRED, "the folder dmc-rate import wrote (its report.json)", group=Group.IO
    )
    output: str = _option(
        REQUIRED,
        "output root of the subset, as generate's: OUTPUT/versions/<version>/, latest.txt",
        group=Group.IO,
    )
    min_right: int = _option(
        2,
        "keep the rated instances at least this many raters got right (2 of 3: the paper's "
        "3-human; Visual Madlibs: 3 of 5; 1 drops only those no rater got right)",
        group=Group.FILTER,
    )

    def validate(self) -> None:
        if self.min_right < 1:
            raise InputError(f"--min_right {self.min_right}: must be at least 1")


@dataclass(frozen=True)
class LogOptions:
    """Where log lines go, for every entry point; errors are one line on stderr regardless."""

    verbose: bool = _option(
        False,
        "every log line (Beam's own and tracebacks too) on stderr; without it, progress and "
        "warnings only when stderr is a terminal",
        group=Group.LOGGING,
    )
    log_file: str = _option("", "append log lines to this local file", group=Group.LOGGING)


TABLES = {
    "generate": GenerateOptions,
    "train": TrainOptions,
    "regenerate": RegenerateOptions,
    "preview": PreviewOptions,
    "rate-export": RateExportOptions,
    "rate-import": RateImportOptions,
    "rate-filter": RateFilterOptions,
    "log": LogOptions,
}

if (
    __name__ == "__main__"
):  # docs tables: python -m pipelines.options [train|regenerate|preview|rate-*|log|strategies]
    table = sys.argv[1] if len(sys.argv) > 1 else "generate"
    print(strategy_table() if table == "strategies" else markdown_table(TABLES[table]))
