"""generate's (and optimize's and regenerate's) options: the flags of a dataset run.

Each command's options have a module of their own, so a new option lands beside the
others of its command; what they all share is in fields.py.
"""

from dataclasses import dataclass

from pipelines.options.fields import REQUIRED, Group, ints, option
from pipelines.options.train import TrainOptions
from pipelines.versions import LABEL
from transforms.corpus.index import IndexConfig
from transforms.corpus.paragraph_vectors import PVConfig
from transforms.corpus.split import SPLITS
from transforms.corpus.store import DECOY_POOLS
from transforms.errors import InputError
from transforms.strategies.base import StrategyConfig
from transforms.strategies.registry import DEFAULT_STRATEGY, STRATEGIES
from transforms.strategies.validity import ValidityRules
from transforms.trainer.dataset_audit import AuditConfig


@dataclass(frozen=True)
class GenerateOptions:
    input: str = option(
        REQUIRED,
        "comma-separated COCO captions_*.json or Flickr token files (paths or globs, "
        "read through Beam's filesystems)",
        group=Group.IO,
    )
    output: str = option(
        REQUIRED,
        "output root: each run writes OUTPUT/versions/<version>/ and makes it the latest "
        "(OUTPUT/latest.txt, the OUTPUT/latest symlink on a local disk, OUTPUT/README.md); "
        "through Beam's filesystems",
        group=Group.IO,
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
    n_dev: int = option(2000, "images in the dev split", group=Group.SPLITS)
    n_test: int = option(2000, "images in the test split", group=Group.SPLITS)
    seed: int = option(
        0, "seed of the split keys, PV training and option shuffling", group=Group.SPLITS
    )
    neighbours: int = option(
        500, "N: candidates per target, the top-N by simPV", group=Group.DECOYS
    )
    decoys: str = option(
        DEFAULT_STRATEGY,
        "the decoy strategy (docs/strategies/)",
        tuple(STRATEGIES),
        group=Group.DECOYS,
    )
    decoy_pool: str = option(
        "",
        "where candidates come from: all (the whole corpus, as in the paper) or split (the "
        "target's split only); each strategy has its own: "
        + ", ".join(f"{name} {strategy.pools[0]}" for name, strategy in STRATEGIES.items()),
        ("", *DECOY_POOLS),
        group=Group.DECOYS,
        empty_means="the strategy's own",
    )
    set_neighbours: int = option(
        50,
        "closed_sets: a caption's set is formed among its K nearest captions of its split",
        group=Group.DECOYS,
    )
    set_search_depth: int = option(
        4,
        "closed_sets: captions searched per caption, as a multiple of K; its K nearest that "
        "pass the validity rules both ways round are the ones its sets are formed among",
        group=Group.DECOYS,
    )
    set_memberships: int = option(
        3,
        "closed_sets: the most sets a caption may belong to (1: a partition; more: captions the "
        "partition leaves out get overlay sets among captions in fewer sets)",
        group=Group.DECOYS,
    )
    set_shard_size: int = option(
        50_000,
        "closed_sets: sets form in parts of a split of at most this many captions, cut along PV "
        "space, in parallel; the captions a part leaves out get sets across the parts' borders",
        group=Group.DECOYS,
    )
    objects: str = option(
        "",
        "madlibs_hard: COCO instances files (comma-separated paths or globs, e.g. "
        "annotations/instances_*2014.json) giving each image's objects",
        group=Group.DECOYS,
        empty_means="objects read from the captions through the COCO-category lexicon",
    )
    cooccurrence_images: int = option(
        1,
        "replace_person/replace_scene: two head words co-occur (and never replace each other) "
        "when the captions of at least this many train images use both; 1 is the paper's rule, "
        "which on large corpora relates frequent heads such as 'man' to nearly every other",
        group=Group.DECOYS,
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
        "use this trained Doc2Vec model instead of training one: a `pv/doc2vec.model` written "
        "by `generate` or the winner `optimize` kept, on exactly these captions in this order "
        "(the model carries their checksum); one saved by gensim itself, or of other captions, "
        "is refused",
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
        20.0,
        "with --ivf_nprobe 0: vectors each query scans, as a multiple of N (recall vs time)",
        group=Group.INDEX,
    )
    search_threads: int = option(
        0,
        "faiss threads per worker process (0: all cores; 1 when running several workers)",
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
            (dim, epochs) for dim in ints(self.pv_dim_grid) for epochs in ints(self.pv_epochs_grid)
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
