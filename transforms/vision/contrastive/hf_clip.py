"""``--library transformers``: CLIP-like models of HF transformers (CLIPModel, SiglipModel,
... through AutoModel), with the tokenizer and image processor saved beside them.

``--model`` is a Hub id (``openai/clip-vit-base-patch32``, ``google/siglip-base-patch16-224``)
fetched by transformers' own loader; ``--checkpoint`` a local ``save_pretrained`` folder
holding the model, its tokenizer and its image processor.
"""

import os

import numpy as np
from PIL import Image

from transforms.errors import InputError, first_line
from transforms.progress import quiet_model_libraries
from transforms.vision.contrastive.base import (
    ContrastiveModel,
    ModelSpec,
    in_batches,
    unit_rows,
)
from transforms.vision.extra import vision_module

TEXT_INPUTS = ("input_ids", "attention_mask")  # SigLIP's tokenizer gives no attention mask


def _vectors(output) -> np.ndarray:
    """transformers 5 returns the projected features as ``pooler_output``; 4, a tensor."""
    return getattr(output, "pooler_output", output).detach().float().numpy()


class HfClip(ContrastiveModel):
    library = "transformers"

    def __init__(self, model, tokenizer, processor, batch_size: int):
        self._model, self._tokenizer, self._processor = model, tokenizer, processor
        self._batch_size = batch_size
        positions = model.config.text_config.max_position_embeddings
        self._max_length = min(tokenizer.model_max_length, positions)
        self._torch = vision_module("torch", "--library transformers")

    @classmethod
    def load(cls, spec: ModelSpec) -> "HfClip":
        transformers = vision_module("transformers", "--library transformers")
        source = spec.checkpoint or spec.model
        if not source:
            raise InputError(
                "--library transformers needs --model (a Hub id) or --checkpoint (a "
                "save_pretrained folder with its tokenizer and image processor)"
            )
        if spec.checkpoint and not os.path.isdir(spec.checkpoint):
            raise InputError(f"--checkpoint {spec.checkpoint}: not a save_pretrained folder")
        quiet_model_libraries()
        try:
            model = transformers.AutoModel.from_pretrained(source)
            tokenizer = transformers.AutoTokenizer.from_pretrained(source)
            processor = transformers.AutoImageProcessor.from_pretrained(source)
        except (OSError, ValueError) as error:
            raise InputError(
                f"{source}: transformers cannot load it: {first_line(error)}"
            ) from None
        return cls(model.eval(), tokenizer, processor, spec.batch_size)

    def encode_images(self, images: list[Image.Image]) -> np.ndarray:
        vectors = []
        for batch in in_batches([image.convert("RGB") for image in images], self._batch_size):
            pixels = self._processor(images=batch, return_tensors="pt")["pixel_values"]
            with self._torch.no_grad():
                vectors.append(_vectors(self._model.get_image_features(pixel_values=pixels)))
        return unit_rows(np.concatenate(vectors))

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Padded to the model's length, as SigLIP was trained (CLIP masks the padding)."""
        vectors = []
        for batch in in_batches(texts, self._batch_size):
            tokens = self._tokenizer(
                batch,
                padding="max_length",
                truncation=True,
                max_length=self._max_length,
                return_tensors="pt",
            )
            inputs = {name: tokens[name] for name in TEXT_INPUTS if name in tokens}
            with self._torch.no_grad():
                vectors.append(_vectors(self._model.get_text_features(**inputs)))
        return unit_rows(np.concatenate(vectors))
