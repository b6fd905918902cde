"""Image-disjoint train/dev/test splits (SPEC "Splits").

Each image gets a stable 64-bit key from (seed, image_id); dev is the ``n_dev``
smallest keys and test the next ``n_test``. Only the ``n_dev + n_test``
smallest keys are ever gathered in one place, so the split scales to any
corpus, and adding images moves an existing image between dev and test only
when a new key sorts in front of it.
"""

import apache_beam as beam

from schemas.records import Caption
from transforms.errors import InputError
from transforms.seeds import keyed_int

SPLITS = ("train", "dev", "test")


def image_key(seed: int, image_id: str) -> int:
    """The image's split key: a stable 64-bit number of (seed, image_id)."""
    return keyed_int(seed, image_id)


def held_out_splits(smallest: list[tuple[int, str]], n_dev: int, n_test: int) -> dict[str, str]:
    """Maps the held-out image ids to "dev" or "test"; every other image is train.

    ``smallest`` is the (key, image_id) list of the ``n_dev + n_test`` smallest keys.

    >>> held_out_splits([(9, "b"), (3, "a"), (12, "c")], n_dev=1, n_test=2)
    {'a': 'dev', 'b': 'test', 'c': 'test'}
    """
    ordered = sorted(smallest)
    if len(ordered) < n_dev + n_test:
        raise InputError(
            f"the corpus has {len(ordered)} images, fewer than n_dev + n_test = "
            f"{n_dev} + {n_test}: lower --n_dev/--n_test or add images"
        )
    return {
        image_id: "dev" if rank < n_dev else "test" for rank, (_, image_id) in enumerate(ordered)
    }


class AssignSplits(beam.PTransform):
    """Caption -> Caption with ``split`` set, image-disjoint."""

    def __init__(self, *, seed: int, n_dev: int, n_test: int):
        super().__init__()
        self._seed, self._n_dev, self._n_test = seed, n_dev, n_test

    def expand(self, captions):
        seed = self._seed
        held_out = (
            captions
            | "ImageIds" >> beam.Map(lambda caption: caption.image_id)
            | "DistinctImages" >> beam.Distinct()
            | "Keys" >> beam.Map(lambda image_id: (image_key(seed, image_id), image_id))
            | "SmallestKeys" >> beam.combiners.Top.Smallest(self._n_dev + self._n_test)
            | "HeldOut" >> beam.Map(held_out_splits, n_dev=self._n_dev, n_test=self._n_test)
        )
        return captions | "SetSplit" >> beam.Map(
            _with_split, held_out=beam.pvalue.AsSingleton(held_out)
        )


def _with_split(caption: Caption, held_out: dict[str, str]) -> Caption:
    return caption._replace(split=held_out.get(caption.image_id, "train"))
