"""Writes the project's synthetic COCO-format corpus (see transforms/corpus/synthetic.py).

python -m pipelines.make_corpus --num_images 4000 --output out/corpus/captions_synthetic.json \
    --instances out/corpus/instances_synthetic.json --images_dir out/corpus/images
"""

import json
import logging
import sys
import time

from pipelines.cli import Command, known_flags, refuse_unknown
from transforms.corpus.synthetic import CAPTIONS_PER_IMAGE, scene_objects, write_coco
from transforms.english.objects import CATEGORY_IDS, instances_document
from transforms.errors import InputError
from transforms.files import check_file_path, write_file
from transforms.vision.drawing import SIZE, write_images

MAX_IMAGES = 660_000  # 3.3M captions at five per image: Conceptual Captions' size

COMMAND = Command(
    prog="dmc-make-corpus",
    description=(
        "Writes the project's synthetic corpus in COCO format: one latent scene per image "
        "(a subject, an activity, a place, a time of day) and five captions describing it "
        "with different templates, synonyms and omitted details (--captions_per_image keeps "
        "the first few). Image i depends only on (seed, i), so smaller corpora are prefixes "
        "of larger ones. With --instances, also "
        "the COCO instances file of the scenes' objects (one unit box per object); with "
        "--images_dir, a drawn picture of each scene under its file_name."
    ),
    example="dmc-make-corpus --num_images 4000 --output out/corpus/captions_synthetic.json",
    manual="docs/synthetic.md",
    beam=False,
)


def main(argv: list[str] | None = None) -> int:
    parser = COMMAND.parser()
    parser.add_argument("--output", required=True, help="COCO captions JSON to write (required)")
    parser.add_argument(
        "--num_images", type=int, default=4000, help=f"images, 1 to {MAX_IMAGES:,} (default: 4000)"
    )
    parser.add_argument(
        "--captions_per_image",
        type=int,
        metavar="C",
        default=CAPTIONS_PER_IMAGE,
        help=f"each image's first C of its {CAPTIONS_PER_IMAGE} captions, 1 to "
        f"{CAPTIONS_PER_IMAGE} (1: Conceptual Captions' shape; default: {CAPTIONS_PER_IMAGE})",
    )
    parser.add_argument("--seed", type=int, default=0, help="corpus seed (default: 0)")
    parser.add_argument(
        "--instances",
        default="",
        help="also write the images' objects here as a COCO instances JSON (default: none)",
    )
    parser.add_argument(
        "--images_dir",
        default="",
        help="also draw each image's scene into this folder (local or gs://), named by its "
        "file_name: what dmc-features reads (default: none)",
    )
    parser.add_argument(
        "--image_size",
        type=int,
        default=SIZE,
        help=f"side of the drawn pictures in pixels, 16 to 512 (default: {SIZE})",
    )
    try:
        args, unknown = parser.parse_known_args(argv)
        refuse_unknown(unknown, known_flags(parser))
        if not 1 <= args.num_images <= MAX_IMAGES:
            raise InputError(f"--num_images must be between 1 and {MAX_IMAGES:,}")
        if not 1 <= args.captions_per_image <= CAPTIONS_PER_IMAGE:
            raise InputError(f"--captions_per_image must be between 1 and {CAPTIONS_PER_IMAGE}")
        check_file_path(args.output, "--output")
        if args.instances:
            check_file_path(args.instances, "--instances")
        if not 16 <= args.image_size <= 512:
            raise InputError("--image_size must be between 16 and 512")
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    logging.getLogger().setLevel(logging.INFO)
    started = time.monotonic()
    images = write_coco(args.output, args.seed, args.num_images, args.captions_per_image)["images"]
    logging.info(
        "wrote %d images, %d captions to %s in %.1fs",
        args.num_images,
        args.num_images * args.captions_per_image,
        args.output,
        time.monotonic() - started,
    )
    if args.instances:
        write_instances(args.instances, images, args.seed)
    if args.images_dir:
        started = time.monotonic()
        drawn = write_images(args.images_dir, args.seed, images, args.image_size)
        logging.info(
            "drew %d images into %s in %.1fs", drawn, args.images_dir, time.monotonic() - started
        )
    return 0


def write_instances(path: str, images: list[dict], seed: int) -> None:
    """The COCO instances file of ``images``: each scene object a unit box of its category."""
    objects = {
        image_id: [CATEGORY_IDS[name] for name in names]
        for image_id, names in scene_objects(seed, len(images))
    }
    write_file(path, json.dumps(instances_document(images, objects)).encode("utf-8"))
    logging.info("wrote the objects of %d images to %s", len(images), path)


if __name__ == "__main__":
    sys.exit(main())
