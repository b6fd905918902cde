"""dmc-evaluate's options.

Each command's options have a module of their own; what they all share is in schemas/options.py.
"""

from dataclasses import dataclass

from pipelines.options.fields import dataset_option
from schemas.options import REQUIRED, Group, option
from transforms.errors import InputError
from transforms.vision.contrastive.base import ModelSpec
from transforms.vision.contrastive.registry import DEFAULT_LIBRARY, LIBRARIES


@dataclass(frozen=True)
class EvaluateOptions:
    dataset: str = dataset_option()
    images: str = option(
        REQUIRED,
        "the folder (local or gs://) of the images' files, by each instance's image_file "
        "(e.g. COCO's val2014/); an instance whose image is not there is counted, not scored",
        group=Group.IO,
    )
    output: str = option(
        REQUIRED,
        "where scores.parquet, metrics.json, table.txt and accuracy.png are written",
        group=Group.IO,
    )
    allow_missing: bool = option(
        False,
        "score the instances whose image is there even when more than half are missing "
        "(without it, that is an error naming one)",
        group=Group.IO,
    )
    library: str = option(
        DEFAULT_LIBRARY,
        "which library loads the contrastive model",
        tuple(LIBRARIES),
        group=Group.MODELS,
    )
    model: str = option(
        "",
        "open_clip: an architecture (ViT-B-32); transformers: a Hub id "
        "(openai/clip-vit-base-patch32), fetched by the library's own loader",
        group=Group.MODELS,
    )
    pretrained: str = option(
        "", "open_clip: the weights' tag (laion2b_s34b_b79k, openai)", group=Group.MODELS
    )
    checkpoint: str = option(
        "",
        "local weights instead: transformers, a save_pretrained folder with its tokenizer and "
        "image processor; open_clip, a folder as open_clip saves one, or a weights file with "
        "--model",
        group=Group.MODELS,
    )
    batch_size: int = option(
        64,
        "instances scored per batch (and images or texts per forward pass)",
        group=Group.PERFORMANCE,
    )

    def model_spec(self) -> ModelSpec:
        return ModelSpec(
            library=self.library,
            model=self.model,
            pretrained=self.pretrained,
            checkpoint=self.checkpoint,
            batch_size=self.batch_size,
        )

    def model_name(self) -> str:
        """The model's row name in the table: what was loaded, as the user named it."""
        named = f"{self.model} {self.pretrained}".strip()
        return f"{self.library} {named or self.checkpoint.rstrip('/').split('/')[-1]}"

    def validate(self) -> None:
        problems = []
        if self.library not in LIBRARIES:
            problems.append(f"--library is one of {', '.join(LIBRARIES)}")
        if not (self.model or self.checkpoint):
            problems.append("--model or --checkpoint names the weights")
        if self.batch_size < 1:
            problems.append("--batch_size must be >= 1")
        if problems:
            raise InputError("; ".join(problems))
