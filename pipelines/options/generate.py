"""generate's (and optimize's and regenerate's) options: the flags of a dataset run.

Each command's options have a module of their own, so a new option lands beside the
others of its command; what they all share is in schemas/options.py. The decoy
strategies' own options live beside each strategy (``DecoyStrategy.Options``);
``GenerateOptions`` is the run's options with every registered strategy's taken in, so
--help, the manual's table, the manifest and the version name see one flat set of flags.
"""

import dataclasses
import re
from dataclasses import dataclass

from pipelines.options.fields import ints
from pipelines.options.train import TrainOptions
from schemas.options import REQUIRED, Group, below, option
from schemas.records import RawCaption
from transforms.corpus.encoders.registry import (
    DEFAULT_FAMILY,
    DEFAULT_MODEL,
    ENCODERS,
    compared_threshold,
)
from transforms.corpus.index import IndexConfig
from transforms.corpus.languages.base import Language
from transforms.corpus.languages.detect import resolve_language
from transforms.corpus.languages.registry import AUTO, ENGLISH, LANGUAGES
from transforms.corpus.paragraph_vectors import PVConfig
from transforms.corpus.prepare import PrepareCaptions
from transforms.corpus.read import AUTO_FORMAT, INPUT_FORMATS, LINES
from transforms.corpus.sentences import DEFAULT_THRESHOLD, NO_MODEL, EncoderSpec
from transforms.corpus.split import SPLITS
from transforms.corpus.store import DECOY_POOLS
from transforms.errors import InputError
from transforms.progress import report
from transforms.strategies.base import DecoyStrategy
from transforms.strategies.config import StrategyConfig, StrategyOptions
from transforms.strategies.registry import DEFAULT_STRATEGY, STRATEGIES
from transforms.strategies.validity import ValidityRules
from transforms.trainer.dataset_audit import AUDIT_GATES, WARN, AuditConfig

LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # --label: a version name's suffix
READ_BY = "read_by"  # a strategy's option's metadata: the strategies (--decoys) that read it


@dataclass(frozen=True)
class RunOptions:
    """The flags of every dataset run, whatever its strategy."""

    input: str = option(
        REQUIRED,
        "comma-separated COCO captions_*.json or Flickr token files, or with --input_format "
        "lines caption files (paths or globs, read through Beam's filesystems)",
        group=Group.IO,
    )
    output: str = option(
        REQUIRED,
        "output root: each run writes OUTPUT/versions/<version>/ and makes it the latest "
        "(OUTPUT/latest.txt, the OUTPUT/latest symlink to its dataset/ on a local disk, "
        "OUTPUT/README.md); "
        "through Beam's filesystems",
        group=Group.IO,
    )
    input_format: str = option(
        AUTO_FORMAT,
        "auto: each --input file is COCO json or a Flickr token file, told by its first "
        "character; lines: Multi30k's layout, one caption per line, line i of every file "
        "describing the image on line i of --image_list",
        INPUT_FORMATS,
        group=Group.IO,
    )
    image_list: str = option(
        "",
        "with --input_format lines: the image list, one image file name per line (through "
        "Beam's filesystems; its checksum, not its path, enters the version name)",
        group=Group.IO,
        renamed_from=("images",),
    )
    label: str = option(
        "", "prefix of the version name, e.g. coco2014 -> coco2014-<digest>", group=Group.IO
    )
    captions_license: str = option(
        "cc-by-4.0",
        "licence of the input captions, for the dataset card (a HuggingFace licence id: COCO's "
        "captions are cc-by-4.0; 'other' where the corpus has its own terms)",
        group=Group.IO,
    )
    force: bool = option(
        False,
        "run even when a completed version for these inputs and options exists",
        group=Group.IO,
    )
    merge_inputs: bool = option(
        False,
        "let an image id occur in several input files and merge its captions (without it, "
        "that is an error naming both files)",
        group=Group.IO,
    )
    language: str = option(
        ENGLISH.code,
        "the captions' language, whose rule tokenises them (docs/languages.md): en is the "
        "paper's (letters a-z); auto detects it from the first captions of each input file",
        (*LANGUAGES, AUTO),
        group=Group.IO,
    )
    n_dev: int = option(
        2000,
        "images in the dev split (a count, for COCO 2014's 124k images: a run warns when "
        "dev and test leave train under half of a smaller corpus)",
        group=Group.SPLITS,
    )
    n_test: int = option(2000, "images in the test split", group=Group.SPLITS)
    seed: int = option(
        0, "seed of the split keys, PV training and option shuffling", group=Group.SPLITS
    )
    neighbours: int = option(
        500, "N: candidates per target, the top-N by simPV", group=Group.DECOYS
    )
    decoys: str = option(  # its choices: the registry's strategies (with_strategy_options)
        DEFAULT_STRATEGY, "the decoy strategy (docs/strategies/)", group=Group.DECOYS
    )
    decoy_pool: str = option(  # its help ends with each strategy's own (with_strategy_options)
        "",
        "where candidates come from: all (the whole corpus, as in the paper) or split (the "
        "target's split only); each strategy has its own",
        ("", *DECOY_POOLS),
        group=Group.DECOYS,
        empty_means="the strategy's own",
    )
    score_lambda: float = option(
        0.3, "lambda of Score = lambda*simPV + (1-lambda)*simSURF", group=Group.DECOYS
    )
    surf_limit: float = option(
        0.5,
        "L: candidates with simSURF >= L score 0; no decoy reaches it against any caption of "
        "the target's image",
        group=Group.DECOYS,
    )
    own_caption_rule: bool = option(
        False,
        "also reject decoys whose simPV to the target reaches the target's mean simPV to its "
        "image's other captions",
        group=Group.DECOYS,
    )
    validity_model: str = option(
        DEFAULT_MODEL,
        "the sentence encoder of the rule that no decoy describes the target's image: "
        f"{DEFAULT_MODEL} (installed with the package), a sentence-transformers folder, a hub "
        f"id in the local cache, or {NO_MODEL} (the paper's rules only)",
        group=Group.DECOYS,
    )
    validity_threshold: float = option(
        DEFAULT_THRESHOLD,
        "a candidate whose encoder cosine to any caption of the target's image reaches it "
        "describes the image, and is no decoy (calibrated on expert judgments: docs/validity.md)",
        group=Group.DECOYS,
    )
    validity_encoder: str = option(
        DEFAULT_FAMILY,
        "the family of --validity_model (docs/validity.md)",
        tuple(ENCODERS),
        group=Group.DECOYS,
    )
    adversarial_rounds: int = option(
        0,
        "rounds of adversarial filtering (AFLite-like): decoys of instances a cross-fitted "
        "text-only model gets right are swapped for reserve candidates; 0 = off; not for "
        "strategies with a guarantee",
        group=Group.DECOYS,
    )
    adversarial_reserve: int = option(
        8,
        "adversarial filtering: further valid candidates kept per target, which it may swap in",
        group=Group.DECOYS,
    )
    pv_dim: int = option(256, "PV-DBOW vector size (paper: 1024)", group=Group.PV)
    pv_epochs: int = option(
        20, "PV-DBOW training epochs (paper: 5, too few below ~500k captions)", group=Group.PV
    )
    pv_min_count: int = option(1, "PV-DBOW: ignore words rarer than this", group=Group.PV)
    pv_hs: int = option(
        1, "PV-DBOW: 1 = hierarchical softmax (paper's softmax loss)", group=Group.PV
    )
    pv_negative: int = option(0, "PV-DBOW: negative samples (0 = none)", group=Group.PV)
    pv_workers: int = option(
        1,
        "PV-DBOW training threads; 1 is reproducible for a seed, more is faster but not",
        group=Group.PV,
    )
    pv_train_sample: int = option(
        1_000_000,
        "corpora with more captions than this train PV on a seeded sample of this many (by "
        "--seed and caption id) and infer the others' vectors in parallel; 0 = train on all",
        group=Group.PV,
    )
    pv_model: str = option(
        "",
        "use this trained Doc2Vec model instead of training one: a `build/pv/doc2vec.model` "
        "written by `generate` or the winner `optimize` kept, on exactly these captions in this "
        "order (the model carries their checksum); one saved by gensim itself, or of other "
        "captions, is refused",
        group=Group.PV,
    )
    optimize: bool = option(
        False,
        "generate: run OPTIMIZE-PV and OPTIMIZE-SCORE first and use their winners",
        group=Group.SEARCH,
    )
    pv_dim_grid: str = option(
        "64,256,512,1024", "OPTIMIZE-PV: PV dimensions to try", group=Group.SEARCH
    )
    pv_epochs_grid: str = option("5,10,20,50", "OPTIMIZE-PV: PV epochs to try", group=Group.SEARCH)
    lambda_grid: str = option(
        "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
        "OPTIMIZE-SCORE: lambdas to try",
        group=Group.SEARCH,
    )
    search_split: str = option(
        "dev", "the split whose captions the searches evaluate on", SPLITS, group=Group.SEARCH
    )
    search_sample_images: int = option(
        0,
        "search on only this many images (smallest split keys: dev first); 0 = all",
        group=Group.SEARCH,
    )
    index_exact_limit: int = option(
        100_000,
        "pools of up to this many captions are searched exactly; larger ones by IVF",
        group=Group.INDEX,
    )
    ivf_nlist: int = option(0, "IVF clusters (0: 4 * sqrt(pool size))", group=Group.INDEX)
    ivf_nprobe: int = option(
        0,
        "IVF clusters scanned per query (0: enough to scan --ivf_scan x N vectors)",
        group=Group.INDEX,
    )
    ivf_scan: float = option(
        24.0,
        "with --ivf_nprobe 0: vectors each query scans, as a multiple of N (recall vs time)",
        group=Group.INDEX,
    )
    search_threads: int = option(
        0,
        "faiss threads per worker process (0: its share of the machine's cores: all of them in "
        "one process, 1 in each of several, 1 on Dataflow, which runs one per vCPU)",
        group=Group.PERFORMANCE,
    )
    shard_size: int = option(
        5000, "targets per shard of neighbour search and scoring", group=Group.PERFORMANCE
    )
    batch_size: int = option(
        500, "targets per faiss query and scoring batch", group=Group.PERFORMANCE
    )
    output_shards: int = option(
        0,
        "files per split and format (0: one per 20,000 captions of the split)",
        group=Group.PERFORMANCE,
    )
    audit_sample: int = option(
        20_000,
        "the learned text-only audits (Text-FFNN, trainer defaults, and the bigram LM) are "
        "fitted on this many train instances; 0 = all",
        group=Group.AUDIT,
    )
    audit_gate: str = option(
        WARN,
        "a version whose text-only audit is off chance: warn (publish it as the latest, "
        "the verdict printed) or fail (write it complete, leave latest where it was, print "
        "the audit's row furthest from chance and exit with code 3), for scheduled runs "
        "that must not publish a leak",
        choices=AUDIT_GATES,
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

    def with_language(self, sample: list[RawCaption]) -> "GenerateOptions":
        """These options with --language resolved (``auto`` detected, logged) and checked
        against ``sample``, the first captions of each input (manifest.read_inputs):
        the version is named after the language it used. generate and optimize resolve it
        before a run."""
        language, reason = resolve_language(self.language, sample)
        if reason:  # a progress line: a scheduler's log keeps it too
            report("language", "%s", reason)
        resolved = dataclasses.replace(self, language=language.code)
        resolved.validate()  # what auto chose may not suit the options (an English-only strategy)
        return resolved

    def caption_language(self) -> Language:
        """The language the captions are tokenised in, once ``auto`` was resolved
        (:meth:`with_language`)."""
        if self.language == AUTO:
            raise ValueError("--language auto is resolved from the inputs before a run")
        return LANGUAGES[self.language]

    def prepare_captions(self, inputs: list[str]) -> PrepareCaptions:
        """The captions of ``inputs`` read, normalised and split as these options say."""
        return PrepareCaptions(
            inputs=inputs,
            seed=self.seed,
            n_dev=self.n_dev,
            n_test=self.n_test,
            merge=self.merge_inputs,
            images=self.image_list,
            language=self.caption_language(),
        )

    def strategy_options(self) -> StrategyOptions:
        """The chosen strategy's own options, as its ``Options`` declares them."""
        own = STRATEGIES[self.decoys].Options
        return own(**{flag.name: getattr(self, flag.name) for flag in dataclasses.fields(own)})

    def encoder_spec(self) -> EncoderSpec | None:
        """The validity rule's sentence encoder; None with ``--validity_model none``."""
        if self.validity_model == NO_MODEL:
            return None
        return EncoderSpec(self.validity_encoder, self.validity_model)

    def compared_threshold(self) -> float | None:
        """The cosine the rule compares with, the family's margin below the threshold."""
        spec = self.encoder_spec()
        return None if spec is None else compared_threshold(self.validity_threshold, spec.family)

    def strategy_config(self, worker_threads: int = 0) -> StrategyConfig:
        """``worker_threads``: each worker's share of its machine's cores
        (``pipelines.runner.worker_threads``), faiss's where ``--search_threads`` is 0."""
        config = StrategyConfig(
            neighbours=self.neighbours,
            score_lambda=self.score_lambda,
            seed=self.seed,
            decoy_pool=self.decoy_pool,
            rules=ValidityRules(
                limit=self.surf_limit,
                own_caption_rule=self.own_caption_rule,
                encoder_threshold=self.compared_threshold(),
            ),
            index=self.index_config(worker_threads),
            shard_size=self.shard_size,
            batch_size=self.batch_size,
            options=self.strategy_options(),
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
            (dim, epochs) for dim in ints(self.pv_dim_grid) for epochs in ints(self.pv_epochs_grid)
        ]

    def lambdas(self) -> list[float]:
        return [float(value) for value in self.lambda_grid.split(",")]

    def index_config(self, worker_threads: int = 0) -> IndexConfig:
        return IndexConfig(
            exact_limit=self.index_exact_limit,
            nlist=self.ivf_nlist,
            nprobe=self.ivf_nprobe,
            scan=self.ivf_scan,
            neighbours=self.neighbours,
            seed=self.seed,
            threads=self.search_threads or worker_threads,
        )

    def validate(self) -> None:
        problems = []
        if self.n_dev < 0 or self.n_test < 0:
            problems.append("--n_dev and --n_test must be >= 0")
        if self.neighbours < 4:
            problems.append("--neighbours must be at least 4 (four decoys per instance)")
        if not 0.0 <= self.score_lambda <= 1.0:
            problems.append("--score_lambda must be in [0, 1]")
        if not 0.0 < self.surf_limit <= 1.0:
            problems.append("--surf_limit must be in (0, 1]")
        if not 0.0 < self.validity_threshold <= 1.0:
            problems.append("--validity_threshold must be in (0, 1]")
        if self.pv_hs not in (0, 1) or (self.pv_hs == 0 and self.pv_negative == 0):
            problems.append("--pv_hs must be 0 or 1, and with 0, --pv_negative must be > 0")
        problems += below(
            self,
            1,
            ("pv_dim", "pv_epochs", "pv_min_count", "pv_workers", "shard_size", "batch_size"),
        )
        try:
            grid, lambdas = self.search_grid(), self.lambdas()
        except ValueError:
            problems.append("grids are comma-separated numbers, e.g. --pv_epochs_grid 5,10,20")
        else:
            if not grid or min(min(point) for point in grid) < 1:
                problems.append("--pv_dim_grid and --pv_epochs_grid need positive integers")
            if not lambdas or not all(0.0 <= lam <= 1.0 for lam in lambdas):
                problems.append("--lambda_grid needs values in [0, 1]")
        problems += below(
            self,
            0,
            (
                "ivf_nlist",
                "ivf_nprobe",
                "search_threads",
                "search_sample_images",
                "output_shards",
                "audit_sample",
                "adversarial_rounds",
                "adversarial_reserve",
                "pv_train_sample",
            ),
        )
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
        for flag in dataclasses.fields(self):
            readers = flag.metadata.get(READ_BY, ())
            if readers and self.decoys not in readers and getattr(self, flag.name) != flag.default:
                problems.append(
                    f"--{flag.name} is read by --decoys {' or '.join(readers)}, not {self.decoys}"
                )
        problems += self.strategy_options().problems()
        if self.input_format == LINES and not self.image_list:
            problems.append("--input_format lines needs --image_list, the image list")
        if self.image_list and self.input_format != LINES:
            problems.append("--image_list is read with --input_format lines only")
        needs_english = STRATEGIES[self.decoys].needs_english(self.strategy_options())
        if needs_english and self.language not in (ENGLISH.code, AUTO):  # auto: once resolved
            problems.append(
                f"--decoys {self.decoys} {needs_english}; not --language {self.language}"
            )
        if self.label and not LABEL.fullmatch(self.label):
            problems.append("--label takes letters, digits, '_' and '-', starting alphanumeric")
        if problems:
            raise InputError("; ".join(problems))


def with_metadata(flag: dataclasses.Field, **metadata) -> tuple[str, type, dataclasses.Field]:
    """``flag`` as a field of another dataclass, its metadata updated by ``metadata``."""
    field = dataclasses.field(default=flag.default, metadata={**flag.metadata, **metadata})
    return flag.name, flag.type, field


def with_strategy_options(
    run: type, strategies: dict[str, type[DecoyStrategy]], name: str = "GenerateOptions"
) -> type:
    """``run``'s options and every strategy's own, as one frozen dataclass.

    --decoys offers the strategies and --decoy_pool names their pools; each strategy's
    option says in its help (and READ_BY records) which strategies read it. An option
    declared twice, or by a strategy and the run, is a TypeError at import.
    """
    flags = {flag.name: flag for flag in dataclasses.fields(run)}
    pools = ", ".join(f"{name} {strategy.pools[0]}" for name, strategy in strategies.items())
    fields = [
        with_metadata(flags["decoys"], choices=tuple(strategies)),
        with_metadata(flags["decoy_pool"], help=f"{flags['decoy_pool'].metadata['help']}: {pools}"),
    ]
    readers: dict[type[StrategyOptions], list[str]] = {}
    for strategy_name, strategy in strategies.items():
        readers.setdefault(strategy.Options, []).append(strategy_name)
    for options, names in readers.items():
        for flag in dataclasses.fields(options):
            if flag.name in flags:
                raise TypeError(f"--{flag.name} of {options.__name__} is declared twice")
            flags[flag.name] = flag
            help = f"{'/'.join(names)}: {flag.metadata['help']}"
            fields.append(with_metadata(flag, help=help, **{READ_BY: tuple(names)}))
    composed = dataclasses.make_dataclass(name, fields, bases=(run,), frozen=True)
    composed.__module__, composed.__qualname__ = __name__, name  # found by pickle by name
    return composed


GenerateOptions = with_strategy_options(RunOptions, STRATEGIES)
