"""dmc-features' options: which images, which encoder (by the library that loads it),
where the vectors go."""

from dataclasses import dataclass

from schemas.options import REQUIRED, Group, below, option
from transforms.errors import InputError
from transforms.vision.encoders.base import EncoderSpec
from transforms.vision.encoders.registry import ENCODERS, encoder_family


def _encoders_help() -> str:
    return "; ".join(f"{name}: {family.summary}" for name, family in ENCODERS.items())


def _defaults_help() -> str:
    return ", ".join(f"{family.default_model} ({name})" for name, family in ENCODERS.items())


@dataclass(frozen=True)
class FeaturesOptions:
    images: str = option(
        REQUIRED,
        "the image files: a glob (gs://BUCKET/train2014/*.jpg) or a folder (all its files), "
        "local or gs://",
        group=Group.IO,
    )
    output: str = option(
        REQUIRED,
        "the folder of Parquet shards to write (columns image, features: dmc-train's "
        "--image_features); an earlier run's shards in it are replaced, and the unreadable "
        "images are listed beside it (feats.skipped.json for feats.parquet)",
        group=Group.IO,
    )
    library: str = option(
        "torchvision",
        _encoders_help(),
        tuple(ENCODERS),
        group=Group.MODELS,
        renamed_from=("encoder",),
        renamed_values={"hf": "transformers"},
    )
    model: str = option(
        "",
        "the encoder's model: a torchvision model name, an open_clip model name, a Hub id",
        group=Group.MODELS,
        empty_means=_defaults_help(),
    )
    pretrained: str = option(
        "",
        "weights by name, fetched by the library's own loader (its cache, or a download)",
        group=Group.MODELS,
    )
    checkpoint: str = option(
        "",
        "weights from a checkpoint file or folder instead, local or gs://",
        group=Group.MODELS,
    )
    batch_size: int = option(32, "images encoded at once", group=Group.PERFORMANCE)

    def encoder_spec(self) -> EncoderSpec:
        return EncoderSpec(self.library, self.model, self.pretrained, self.checkpoint)

    def validate(self) -> None:
        problems = below(self, 1, ("batch_size",))
        if self.library not in ENCODERS:
            problems.append(f"--library is one of {', '.join(ENCODERS)}")
        elif self.pretrained and self.checkpoint:
            problems.append("--pretrained and --checkpoint are alternatives: give one")
        else:
            problems += encoder_family(self.encoder_spec()).problems(self.encoder_spec())
        if problems:
            raise InputError("; ".join(problems))
