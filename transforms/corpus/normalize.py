"""Caption normalisation (Ding et al. 2016, section 5.1; SPEC "Normalisation").

Every similarity in the project (PV training, BLEU, de-duplication) is computed
on the same normalised token sequence, so this is the one place it is defined.
"""

from collections.abc import Iterable

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.records import SKIPPED, Caption, RawCaption, Skip, caption_order
from transforms.corpus.languages.base import Language
from transforms.corpus.languages.registry import ENGLISH
from transforms.memory import packed, unpacked

MAX_TOKENS = 30
TRUNCATED = "normalize/truncated"  # the counter of captions cut to MAX_TOKENS tokens


def caption_tokens(caption: str, language: Language = ENGLISH) -> list[str]:
    """Every token of the caption, by its language's rule (English: the paper's).

    >>> caption_tokens("A man's 2 dogs, on the BEACH!")
    ['a', 'man', 's', 'dogs', 'on', 'the', 'beach']
    """
    return language.tokens(caption)


def normalize_caption(caption: str, language: Language = ENGLISH) -> tuple[str, ...]:
    """The caption's first 30 tokens (SPEC cuts longer captions; the run counts them)."""
    return tuple(caption_tokens(caption, language)[:MAX_TOKENS])


class NormalizeCaptions(beam.PTransform):
    """RawCaption -> Caption, with Skip records on the ``skipped`` output.

    Captions longer than MAX_TOKENS tokens are cut and counted (``normalize/truncated``);
    empty captions (after normalisation) are skipped as
    ``normalize/empty_caption``; identical normalised captions of one image
    count once (the lowest caption id is kept), the others are skipped as
    ``normalize/duplicate_caption``.
    """

    def __init__(self, language: Language = ENGLISH):
        super().__init__()
        self._language = language

    def expand(self, raw_captions):
        normalize = _Normalize(self._language)
        normalized = raw_captions | "Normalize" >> beam.ParDo(normalize).with_outputs(
            SKIPPED, main="captions"
        )
        deduplicated = (
            normalized.captions
            | "ByImage"
            >> beam.Map(lambda caption: (caption.image_id, packed(caption))).with_output_types(
                tuple[str, bytes]
            )
            | "Group" >> beam.GroupByKey()  # packed: what the runner holds (memory.py)
            | "Deduplicate"
            >> beam.ParDo(_DeduplicateImage()).with_outputs(SKIPPED, main="captions")
        )
        skipped = (normalized[SKIPPED], deduplicated[SKIPPED]) | "Skips" >> beam.Flatten()
        return {"captions": deduplicated.captions, SKIPPED: skipped}


class _Normalize(beam.DoFn):
    """Tokenises by ``language``, whose tokeniser (a dictionary, for some) is loaded on a
    worker's first caption and kept by its module for the process."""

    def __init__(self, language: Language):
        self._language = language
        self._empty = Metrics.counter("normalize", "empty_caption")
        self._truncated = Metrics.counter(*TRUNCATED.split("/"))

    def process(self, raw: RawCaption):
        tokens = caption_tokens(raw.caption, self._language)
        if len(tokens) > MAX_TOKENS:
            self._truncated.inc()  # kept, cut to its first MAX_TOKENS tokens
            tokens = tokens[:MAX_TOKENS]
        if not tokens:
            self._empty.inc()
            yield beam.pvalue.TaggedOutput(SKIPPED, Skip("normalize/empty_caption", raw.caption_id))
            return
        yield Caption(
            caption_id=raw.caption_id,
            image_id=raw.image_id,
            example_id="",
            text=" ".join(tokens),
            file_name=raw.file_name,
            url=raw.url,
            original=raw.caption,
        )


class _DeduplicateImage(beam.DoFn):
    def __init__(self):
        self._duplicates = Metrics.counter("normalize", "duplicate_caption")

    def process(self, image: tuple[str, Iterable[bytes]]):
        image_id, captions = image
        seen: set[str] = set()
        captions = map(unpacked, captions)
        for caption in sorted(captions, key=lambda c: caption_order(c.caption_id)):
            if caption.text in seen:
                self._duplicates.inc()
                yield beam.pvalue.TaggedOutput(
                    SKIPPED, Skip("normalize/duplicate_caption", caption.caption_id)
                )
                continue
            yield caption._replace(example_id=f"{image_id}_{len(seen)}")
            seen.add(caption.text)
