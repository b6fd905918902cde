"""The decoy strategies as composites, on a few inline captions, in the style of Beam's examples."""

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from pipelines.options import GenerateOptions
from schemas.records import SKIPPED
from tests.support.local import local_pipeline
from tests.support.strategies import corpus_ref, strategy
from transforms.errors import InputError
from transforms.strategies.registry import STRATEGIES


def test_closed_sets_make_every_member_the_target_of_its_own_set(tmp_path):
    ref = corpus_ref(str(tmp_path))
    with local_pipeline() as pipeline:
        chosen = pipeline | beam.Create([ref]) | strategy("closed_sets", set_memberships=1)
        option_sets = chosen["selections"] | beam.Map(
            lambda s: ",".join(sorted([s.target.caption_id, *(d.caption_id for d in s.decoys)]))
        )
        counted = option_sets | beam.combiners.Count.PerElement() | beam.Values()
        assert_that(counted, equal_to([5, 5]), label="two sets, five instances each")
        targets = chosen["selections"] | beam.Map(lambda s: s.target.caption_id)
        assert_that(targets, equal_to([str(i) for i in range(10)]), label="every caption once")
        assert_that(chosen[SKIPPED], equal_to([]), label="nothing skipped")


def test_mcic_and_random_choose_four_distinct_decoys_of_other_images(tmp_path):
    ref = corpus_ref(str(tmp_path))
    for name in ("mcic", "random"):
        with local_pipeline() as pipeline:
            chosen = pipeline | beam.Create([ref]) | f"{name}" >> strategy(name, decoy_pool="all")
            checked = chosen["selections"] | beam.Map(
                lambda s: (
                    len({d.text for d in s.decoys} - {s.target.text}) == 4
                    and s.target.image_id not in {d.image_id for d in s.decoys}
                )
            )
            assert_that(checked, equal_to([True] * 10), label=f"{name} decoys")


def test_each_strategy_defaults_to_its_own_pool_and_refuses_others():
    assert {name: strategy(name).config.decoy_pool for name in STRATEGIES} == {
        name: kind.pools[0] for name, kind in STRATEGIES.items()
    }
    with pytest.raises(InputError, match="closed_sets takes --decoy_pool split, not all"):
        GenerateOptions(input="x", output="y", decoys="closed_sets", decoy_pool="all").validate()
