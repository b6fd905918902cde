"""The image encoder families, by the name ``--library`` takes: their one registration."""

from transforms.errors import InputError
from transforms.vision.encoders.base import EncoderSpec, ImageEncoder
from transforms.vision.encoders.hf_vision import HfVision
from transforms.vision.encoders.open_clip_image import OpenClipImage
from transforms.vision.encoders.torchvision_backbone import TorchvisionBackbone

ENCODERS: dict[str, type[ImageEncoder]] = {
    family.name: family for family in (TorchvisionBackbone, OpenClipImage, HfVision)
}


def encoder_family(spec: EncoderSpec) -> type[ImageEncoder]:
    try:
        return ENCODERS[spec.library]
    except KeyError:
        raise InputError(f"--library {spec.library}: one of {', '.join(ENCODERS)}") from None


def load_encoder(spec: EncoderSpec) -> ImageEncoder:
    return encoder_family(spec).load(spec)
