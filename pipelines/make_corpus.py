"""Writes the project's synthetic COCO-format corpus (see transforms/synthetic.py).

python -m pipelines.make_corpus --num_images 4000 --output out/corpus/captions_synthetic.json
"""

import argparse
import logging
import sys
import time

from transforms.corpus.synthetic import CAPTIONS_PER_IMAGE, write_coco

MAX_IMAGES = 150_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", required=True, help="COCO captions JSON to write")
    parser.add_argument("--num_images", type=int, default=4000, help="images (default: 4000)")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed (default: 0)")
    args = parser.parse_args(argv)
    if not 1 <= args.num_images <= MAX_IMAGES:
        parser.error(f"--num_images must be between 1 and {MAX_IMAGES:,}")
    logging.getLogger().setLevel(logging.INFO)
    started = time.monotonic()
    write_coco(args.output, args.seed, args.num_images)
    logging.info(
        "wrote %d images, %d captions to %s in %.1fs",
        args.num_images,
        args.num_images * CAPTIONS_PER_IMAGE,
        args.output,
        time.monotonic() - started,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
