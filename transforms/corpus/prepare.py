"""Reading, normalising and splitting: the stages every pipeline starts with."""

import apache_beam as beam

from schemas.records import SKIPPED
from transforms.corpus.languages.base import Language
from transforms.corpus.languages.registry import ENGLISH
from transforms.corpus.normalize import NormalizeCaptions
from transforms.corpus.read import ReadCaptions
from transforms.corpus.split import AssignSplits


class PrepareCaptions(beam.PTransform):
    """Pipeline -> {"captions": Caption with split, "skipped": Skip}.

    ``images``: the image list of parallel caption files (``--input_format lines``), or "".
    """

    def __init__(
        self,
        *,
        inputs: list[str],
        seed: int,
        n_dev: int,
        n_test: int,
        merge: bool = False,
        images: str = "",
        language: Language = ENGLISH,
    ):
        super().__init__()
        self._inputs, self._seed, self._n_dev, self._n_test = inputs, seed, n_dev, n_test
        self._merge, self._images, self._language = merge, images, language

    def expand(self, pipeline):
        raw = pipeline | "ReadCaptions" >> ReadCaptions(
            self._inputs, merge=self._merge, images=self._images
        )
        normalized = raw | "NormalizeCaptions" >> NormalizeCaptions(self._language)
        captions = normalized["captions"] | "AssignSplits" >> AssignSplits(
            seed=self._seed, n_dev=self._n_dev, n_test=self._n_test
        )
        return {"captions": captions, SKIPPED: normalized[SKIPPED]}
