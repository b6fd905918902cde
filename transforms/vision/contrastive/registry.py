"""Every contrastive model library, by its ``--library`` name: the one place they are listed."""

from transforms.vision.contrastive.base import ContrastiveModel, ModelSpec
from transforms.vision.contrastive.hf_clip import HfClip
from transforms.vision.contrastive.open_clip_model import OpenClip

LIBRARIES: dict[str, type[ContrastiveModel]] = {
    library.library: library for library in (OpenClip, HfClip)
}
DEFAULT_LIBRARY = OpenClip.library


def load_model(spec: ModelSpec) -> ContrastiveModel:
    return LIBRARIES[spec.library].load(spec)
