import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.util import assert_that, equal_to

from schemas.records import SKIPPED, RawCaption
from tests.support.local import local_pipeline
from transforms.corpus.normalize import MAX_TOKENS, TRUNCATED, NormalizeCaptions, normalize_caption


def test_lowercases_and_keeps_only_letters():
    assert normalize_caption("A Man's bike, 2nd-hand!") == ("a", "man", "s", "bike", "nd", "hand")


def test_non_ascii_letters_become_spaces():
    assert normalize_caption("Café\tcrème\nbrûlée") == ("caf", "cr", "me", "br", "l", "e")


def test_keeps_first_30_tokens():
    tokens = normalize_caption(" ".join(f"w{'a' * i}" for i in range(40)))
    assert len(tokens) == MAX_TOKENS
    assert tokens[-1] == "w" + "a" * (MAX_TOKENS - 1)


def test_empty_after_normalisation():
    assert normalize_caption(" 123 ... !!") == ()


def _raw(caption_id, image_id, caption):
    return RawCaption(caption_id, image_id, caption, f"{image_id}.jpg", "")


def test_composite_skips_empty_and_duplicate_captions():
    with local_pipeline() as pipeline:
        result = (
            pipeline
            | beam.Create(
                [
                    _raw("12", "1", "A dog."),
                    _raw("3", "1", "a DOG"),  # lower id: kept, 12 is the duplicate
                    _raw("4", "1", "A cat"),
                    _raw("5", "2", "a dog"),  # same text, other image: kept
                    _raw("6", "2", "42!"),
                ]
            )
            | NormalizeCaptions()
        )
        kept = result["captions"] | "Kept" >> beam.Map(
            lambda c: (c.caption_id, c.example_id, c.text)
        )
        assert_that(
            kept,
            equal_to([("3", "1_0", "a dog"), ("4", "1_1", "a cat"), ("5", "2_0", "a dog")]),
            label="captions",
        )
        skipped = result[SKIPPED] | "Skipped" >> beam.Map(lambda s: (s.reason, s.record))
        assert_that(
            skipped,
            equal_to([("normalize/duplicate_caption", "12"), ("normalize/empty_caption", "6")]),
            label="skipped",
        )


def test_long_captions_are_kept_cut_and_counted():
    long = " ".join(f"w{'a' * i}" for i in range(40))
    pipeline = local_pipeline()
    result = (
        pipeline
        | beam.Create([_raw("1", "1", long), _raw("2", "1", "a dog"), _raw("3", "2", long + " x")])
        | NormalizeCaptions()
    )
    lengths = result["captions"] | beam.Map(lambda c: (c.caption_id, len(c.text.split())))
    assert_that(lengths, equal_to([("1", MAX_TOKENS), ("2", 2), ("3", MAX_TOKENS)]))
    run = pipeline.run()
    run.wait_until_finish()
    namespace, name = TRUNCATED.split("/")
    counters = run.metrics().query(MetricsFilter().with_namespace(namespace).with_name(name))
    assert sum(counter.committed for counter in counters["counters"]) == 2
