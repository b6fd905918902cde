"""Writes the project's synthetic COCO-format corpus (see transforms/corpus/synthetic.py).

python -m pipelines.make_corpus --num_images 4000 --output out/corpus/captions_synthetic.json \
    --instances out/corpus/instances_synthetic.json --images_dir out/corpus/images
"""

import json
import logging
import sys
import time

from pipelines.cli import parse_flags
from pipelines.cli.commands import MAKE_CORPUS
from transforms.corpus.synthetic import scene_objects, write_coco
from transforms.english.objects import CATEGORY_IDS, instances_document
from transforms.errors import InputError
from transforms.files import write_file
from transforms.vision.drawing import write_images


def main(argv: list[str] | None = None) -> int:
    try:
        [args], _ = parse_flags(argv, command=MAKE_CORPUS)
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
