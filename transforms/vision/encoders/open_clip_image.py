"""open_clip image towers (CLIP, SigLIP, EVA, ... as open_clip names them): the vector is
the model's image embedding (``encode_image``), the one it compares with texts."""

import os
from typing import ClassVar

from transforms.errors import InputError
from transforms.vision.encoders.base import (
    EncoderSpec,
    TransformEncoder,
    first_line,
    local_checkpoint,
    seeded,
)
from transforms.vision.extra import vision_module


class OpenClipImage(TransformEncoder):
    name: ClassVar[str] = "open_clip"
    default_model: ClassVar[str] = "ViT-B-32"
    summary: ClassVar[str] = (
        "an open_clip model's image tower; --pretrained is its pretrained tag "
        "(laion2b_s34b_b79k), --checkpoint a weights file of --model or a folder with "
        "open_clip_config.json"
    )

    @classmethod
    def load(cls, spec: EncoderSpec) -> "OpenClipImage":
        needed_by = f"--library {cls.name}"
        seeded(needed_by)
        open_clip = vision_module("open_clip", needed_by)
        model_name, pretrained = spec.model or cls.default_model, spec.pretrained or None
        if spec.checkpoint:
            path = local_checkpoint(spec.checkpoint)
            model_name, pretrained = (
                (f"local-dir:{path}", None) if os.path.isdir(path) else (model_name, path)
            )
        try:
            model, _, transform = open_clip.create_model_and_transforms(
                model_name, pretrained=pretrained
            )
        except Exception as error:  # open_clip raises RuntimeError, ValueError, OSError, ...
            where = spec.checkpoint and f"--checkpoint {spec.checkpoint}"
            raise InputError(
                f"{where or f'--model {model_name}'}: open_clip cannot load it "
                f"({first_line(error)})"
            ) from error
        return cls(model, transform)

    def features(self, pixels):
        return self.model.encode_image(pixels)
