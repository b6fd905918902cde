"""Writes the project's synthetic COCO-format corpus (see transforms/corpus/synthetic.py).

python -m pipelines.make_corpus --num_images 4000 --output out/corpus/captions_synthetic.json \
    --instances out/corpus/instances_synthetic.json --images_dir out/corpus/images
"""

import json
import logging
import sys
import time

from pipelines.cli import Command, parse_flags
from pipelines.options import MakeCorpusOptions
from transforms.corpus.synthetic import scene_objects, write_coco
from transforms.english.objects import CATEGORY_IDS, instances_document
from transforms.errors import InputError
from transforms.files import write_file
from transforms.vision.drawing import write_images

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
    try:
        [args], _ = parse_flags(argv, MakeCorpusOptions, command=COMMAND)
        args.validate()
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
