"""The trainer's options (dmc-train; regenerate --train uses their defaults).

Each command's options have a module of their own; what they all share is in schemas/options.py.
"""

from dataclasses import dataclass

from pipelines.options.fields import dataset_option, ints
from schemas.options import REQUIRED, Group, option
from transforms.errors import InputError
from transforms.trainer.features import FeatureConfig
from transforms.trainer.models import DECODINGS, TrainConfig, Vec2seqSize


@dataclass(frozen=True)
class TrainOptions:
    dataset: str = dataset_option()
    output: str = option(
        REQUIRED,
        "where metrics.json, table.txt, accuracy.png, models/ and captions/ are written",
        group=Group.IO,
    )
    image_features: str = option(
        "",
        "Parquet (columns image, features) or .npy (with --image_ids) of image vectors; "
        "without it, concept features read off the image's other captions (an oracle, not "
        "vision)",
        group=Group.FEATURES,
        empty_means="concept features",
    )
    image_ids: str = option(
        "",
        "with a .npy --image_features: its rows' image ids or file names, one a line",
        group=Group.FEATURES,
    )
    dim: int = option(
        256,
        "longer image and caption vectors are randomly projected to this size",
        group=Group.FEATURES,
    )
    seed: int = option(
        0, "seed of the projections, initial weights and minibatch order", group=Group.TRAINING
    )
    concept_vocabulary: int = option(
        1000, "concept features: the most frequent visual words", group=Group.FEATURES
    )
    concept_min_count: int = option(
        5, "concept features: ignore words in fewer train captions", group=Group.FEATURES
    )
    ridge_alphas: str = option(
        "0.1,1,10,100,1000",
        "Baseline-I2C/C2I: ridge penalties tried; the best on dev wins",
        group=Group.MODELS,
    )
    epochs: int = option(
        20, "LinM, FFNNs: passes over train; the best epoch on dev is kept", group=Group.TRAINING
    )
    batch_size: int = option(
        20,
        "LinM, FFNNs, Vec2seq+FFNN: instances per step (paper: 20)",
        group=Group.TRAINING,
    )
    linm_learning_rate: float = option(
        0.001, "Baseline-LinM: subgradient step size", group=Group.MODELS
    )
    linm_l2: float = option(1e-4, "Baseline-LinM: L2 penalty on Theta", group=Group.MODELS)
    ffnn_hidden: str = option(
        "256,128", "FFNNs: sizes of the two ReLU hidden layers", group=Group.MODELS
    )
    ffnn_learning_rate: float = option(
        0.05,
        "FFNNs: Adagrad learning rate (paper: 0.01 over 3M steps)",
        group=Group.MODELS,
    )
    clip_norm: float = option(
        4.0,
        "FFNNs and Vec2seq+FFNN: gradients are clipped to this norm (paper: 4)",
        group=Group.MODELS,
    )
    vec2seq_sizes: str = option(
        "256:256:64",
        "Vec2seq+FFNN: GRU state:FFNN hidden-1:hidden-2, one model per comma-separated size "
        "(Table 4's, e.g. 64:64:16,256:256:64,512:512:128)",
        group=Group.MODELS,
    )
    lambda_gen: str = option(
        "1",
        "Vec2seq+FFNN: weight of Eq. 4's generation loss, one model per comma-separated value "
        "(Table 5's sweep, e.g. 0,0.1,1,10)",
        group=Group.MODELS,
    )
    vec2seq_epochs: int = option(
        5,
        "Vec2seq+FFNN: passes over train; the best epoch on dev is kept",
        group=Group.TRAINING,
    )
    vec2seq_learning_rate: float = option(
        0.01, "Vec2seq+FFNN: Adagrad learning rate (paper: 0.01)", group=Group.MODELS
    )
    vocabulary_min_count: int = option(
        5,
        "Vec2seq+FFNN: words seen fewer times among the train targets are <unk> (paper: 5)",
        group=Group.MODELS,
    )
    decoding: str = option(
        "greedy",
        "Vec2seq+FFNN: how captions are generated for CIDEr and ROUGE-L",
        DECODINGS,
        group=Group.MODELS,
    )
    beam_size: int = option(
        3, "Vec2seq+FFNN: captions kept per step with --decoding beam", group=Group.MODELS
    )
    fit_buffer: int = option(
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
            ffnn_hidden=tuple(ints(self.ffnn_hidden)),
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


def _sizes(values: str) -> list[Vec2seqSize]:
    """ "256:256:64,64:64:16" -> Vec2seq+FFNN sizes; anything else is a ValueError."""
    sizes = []
    for value in values.split(","):
        state, first, second = (int(part) for part in value.split(":"))
        sizes.append(Vec2seqSize(state, (first, second)))
    return sizes
