"""dmc-make-corpus' options: how large a synthetic corpus, and what to write beside it.

Each command's options have a module of their own; what they all share is in schemas/options.py.
"""

from dataclasses import dataclass

from schemas.options import REQUIRED, Group, option
from transforms.corpus.synthetic import CAPTIONS_PER_IMAGE
from transforms.errors import InputError
from transforms.files import check_file_path
from transforms.vision.drawing import SIZE

MAX_IMAGES = 660_000  # 3.3M captions at five per image: Conceptual Captions' size
IMAGE_SIZES = (16, 512)  # pixels: a thumbnail to what a vision model's preprocessing crops


@dataclass(frozen=True)
class MakeCorpusOptions:
    output: str = option(REQUIRED, "the COCO captions JSON to write", group=Group.IO)
    instances: str = option(
        "",
        "also write the images' objects here as a COCO instances JSON",
        group=Group.IO,
    )
    images_dir: str = option(
        "",
        "also draw each image's scene into this folder (local or gs://), named by its "
        "file_name: what dmc-features reads",
        group=Group.IO,
    )
    num_images: int = option(4000, f"images, 1 to {MAX_IMAGES:,}", group=Group.CORPUS)
    captions_per_image: int = option(
        CAPTIONS_PER_IMAGE,
        f"each image's first C of its {CAPTIONS_PER_IMAGE} captions, 1 to "
        f"{CAPTIONS_PER_IMAGE} (1: Conceptual Captions' shape)",
        group=Group.CORPUS,
    )
    seed: int = option(0, "the corpus' seed: image i depends only on (seed, i)", group=Group.CORPUS)
    image_size: int = option(
        SIZE,
        f"side of the drawn pictures in pixels, {IMAGE_SIZES[0]} to {IMAGE_SIZES[1]}",
        group=Group.CORPUS,
    )

    def validate(self) -> None:
        if not 1 <= self.num_images <= MAX_IMAGES:
            raise InputError(f"--num_images must be between 1 and {MAX_IMAGES:,}")
        if not 1 <= self.captions_per_image <= CAPTIONS_PER_IMAGE:
            raise InputError(f"--captions_per_image must be between 1 and {CAPTIONS_PER_IMAGE}")
        check_file_path(self.output, "--output")
        if self.instances:
            check_file_path(self.instances, "--instances")
        if not IMAGE_SIZES[0] <= self.image_size <= IMAGE_SIZES[1]:
            raise InputError(f"--image_size must be between {IMAGE_SIZES[0]} and {IMAGE_SIZES[1]}")
