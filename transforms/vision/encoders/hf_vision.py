"""Hugging Face transformers vision models: any ``AutoModel`` with its ``AutoImageProcessor``
(CLIP, SigLIP, DINOv2, ViT, ResNet, ...). The vector is the model's image embedding when it
has one (``get_image_features``: CLIP-like models, the vector they compare with texts),
else its pooled output."""

from typing import ClassVar

import numpy as np

from transforms.errors import InputError
from transforms.vision.encoders.base import (
    EncoderSpec,
    ImageEncoder,
    first_line,
    local_checkpoint,
    seeded,
)
from transforms.vision.extra import vision_module


class HfVision(ImageEncoder):
    name: ClassVar[str] = "transformers"
    default_model: ClassVar[str] = "openai/clip-vit-base-patch32"
    summary: ClassVar[str] = (
        "a Hugging Face transformers model; --model is its Hub id, --pretrained a Hub "
        "revision, --checkpoint a save_pretrained folder (model and image processor)"
    )

    def __init__(self, model, processor):
        super().__init__(model)
        self._processor = processor

    @classmethod
    def load(cls, spec: EncoderSpec) -> "HfVision":
        needed_by = f"--library {cls.name}"
        seeded(needed_by)
        transformers = vision_module("transformers", needed_by)
        source = local_checkpoint(spec.checkpoint) if spec.checkpoint else spec.model
        source = source or cls.default_model
        revision = {"revision": spec.pretrained} if spec.pretrained else {}
        try:
            processor = transformers.AutoImageProcessor.from_pretrained(source, **revision)
            model = transformers.AutoModel.from_pretrained(source, **revision)
        except Exception as error:  # OSError (no such model), ValueError (unknown type), ...
            where = f"--checkpoint {spec.checkpoint}" if spec.checkpoint else f"--model {source}"
            raise InputError(
                f"{where}: transformers cannot load a model and image processor from it "
                f"({first_line(error)})"
            ) from error
        return cls(model, processor)

    def preprocess(self, picture) -> np.ndarray:
        # "pt": the torchvision-backed processors transformers picks where torchvision loads
        # return PyTorch tensors only
        return self._processor(images=picture, return_tensors="pt")["pixel_values"][0].numpy()

    def features(self, pixels):
        if hasattr(self.model, "get_image_features"):
            output = self.model.get_image_features(pixel_values=pixels)
        else:
            output = self.model(pixel_values=pixels)
        return getattr(output, "pooler_output", output)
