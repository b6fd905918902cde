"""``--library open_clip``: open_clip's CLIP, SigLIP, CoCa, ... with its own transforms and
tokenizer.

``--model ViT-B-32 --pretrained laion2b_s34b_b79k``: open_clip's own loader fetches the
weights. ``--checkpoint`` is either a folder as open_clip saves one (``open_clip_config.json``
and ``open_clip_model.safetensors`` or ``open_clip_pytorch_model.bin``: the config comes
from the folder) or a weights file with ``--model`` naming its architecture.
"""

import os

import numpy as np
from PIL import Image

from transforms.errors import InputError
from transforms.vision.contrastive.base import (
    ContrastiveModel,
    ModelSpec,
    in_batches,
)
from transforms.vision.extra import vision_module

LOCAL_DIR = "local-dir:"  # open_clip's prefix for a model read from a folder


def model_source(spec: ModelSpec) -> tuple[str, str | None]:
    """(open_clip model name, pretrained tag or weights file) for the spec.

    >>> model_source(ModelSpec("open_clip", model="ViT-B-32", pretrained="openai"))
    ('ViT-B-32', 'openai')
    >>> model_source(ModelSpec("open_clip", model="ViT-B-32", checkpoint="w.pt"))
    ('ViT-B-32', 'w.pt')
    """
    if spec.checkpoint and os.path.isdir(spec.checkpoint):
        return LOCAL_DIR + spec.checkpoint, None
    if not spec.model:
        raise InputError(
            "--library open_clip needs --model (an architecture, e.g. ViT-B-32) with "
            "--pretrained or a --checkpoint weights file, or a --checkpoint folder"
        )
    return spec.model, spec.checkpoint or spec.pretrained or None


class OpenClip(ContrastiveModel):
    library = "open_clip"

    def __init__(self, model, preprocess, tokenizer, batch_size: int):
        self._model, self._preprocess, self._tokenizer = model, preprocess, tokenizer
        self._batch_size = batch_size
        self._torch = vision_module("torch", "--library open_clip")

    @classmethod
    def load(cls, spec: ModelSpec) -> "OpenClip":
        open_clip = vision_module("open_clip", "--library open_clip")
        name, pretrained = model_source(spec)
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(
                name, pretrained=pretrained
            )
            tokenizer = open_clip.get_tokenizer(name)
        except (OSError, RuntimeError, ValueError) as error:
            first = str(error).strip().splitlines()[0]
            raise InputError(f"{name} ({pretrained}): open_clip cannot load it: {first}") from None
        return cls(model.eval(), preprocess, tokenizer, spec.batch_size)

    def encode_images(self, images: list[Image.Image]) -> np.ndarray:
        vectors = []
        for batch in in_batches(images, self._batch_size):
            pixels = self._torch.stack([self._preprocess(image.convert("RGB")) for image in batch])
            with self._torch.no_grad():
                vectors.append(self._model.encode_image(pixels, normalize=True).float().numpy())
        return np.concatenate(vectors)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        vectors = []
        for batch in in_batches(texts, self._batch_size):
            with self._torch.no_grad():
                encoded = self._model.encode_text(self._tokenizer(batch), normalize=True)
            vectors.append(encoded.float().numpy())
        return np.concatenate(vectors)
