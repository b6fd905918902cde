"""No stage gathers a split into one element: what holds the whole corpus runs in one process.

The default pipeline runs on a corpus and on one with twice the images, in process, with
Beam's own per-PCollection metrics: exact element counts and sampled element sizes (every
element of a PCollection of at most ten is sampled). A PCollection whose element count
stays the same while the corpus doubles gathers something; its elements must not double.
What is sized by captions at scale (caption parts, output shards) is sized for this scale.
"""

import pytest
from apache_beam.metrics import monitoring_infos

from pipelines.generate import build_pipeline
from pipelines.options import GenerateOptions
from tests.support.local import local_pipeline
from tests.support.versions import TRAINING
from transforms.corpus import pv_training
from transforms.dataset import write

# PCollections that grow with the corpus by design, and why.
BY_DESIGN = {"ReadCaptions/Read.": "one element per input file: a JSON document is parsed whole"}
# Elements below this size are not checked: lists of paths and the part trees grow with the
# number of files and parts, not of captions. The train split alone is ~600 KB of captions.
SMALLEST_CHECKED = 64 * 1024


def element_sizes(corpus: str, output: str) -> dict[str, tuple[int, int]]:
    """PCollection -> (elements, largest sampled element in bytes) of a generate run."""
    options = GenerateOptions(input=corpus, output=output, set_shard_size=300, **TRAINING)
    pipeline = local_pipeline()
    build_pipeline(pipeline, options, [corpus])
    result = pipeline.run()
    result.wait_until_finish()
    names = {
        key: value.unique_name
        for key, value in pipeline.to_runner_api().components.pcollections.items()
    }
    counts, largest = {}, {}
    for info in result.monitoring_infos():
        name = names.get(info.labels.get("PCOLLECTION"))
        if name is None:  # a runner's own PCollection: fusion's, not the pipeline's
            continue
        if info.urn == monitoring_infos.ELEMENT_COUNT_URN:
            counts[name] = counts.get(name, 0) + monitoring_infos.extract_counter_value(info)
        elif info.urn == monitoring_infos.SAMPLED_BYTE_SIZE_URN:
            _, _, _, biggest = monitoring_infos.extract_distribution(info)
            largest[name] = max(largest.get(name, 0), biggest)
    return {name: (counts.get(name, 0), size) for name, size in largest.items()}


@pytest.fixture(scope="module")
def twice_the_images(shared) -> str:
    return shared.corpus(seed=1, num_images=2000)


@pytest.mark.slow
def test_no_element_grows_with_the_corpus(training_corpus, twice_the_images, tmp_path, monkeypatch):
    monkeypatch.setattr(pv_training, "PART_SIZE", 1000)
    monkeypatch.setattr(write, "SHARD_CAPTIONS", 1000)
    small = element_sizes(training_corpus, str(tmp_path / "small"))
    large = element_sizes(twice_the_images, str(tmp_path / "large"))
    assert any("TrainParagraphVectors/Parts" in name for name in small)  # the metrics are read
    gathered = {
        name: (small[name][1], large[name][1])
        for name in small.keys() & large.keys()
        if small[name][0] == large[name][0]  # as many elements for twice the images
        and large[name][1] > max(1.5 * small[name][1], SMALLEST_CHECKED)
        and not any(label in name for label in BY_DESIGN)
    }
    assert not gathered, f"elements that grow with the corpus (bytes, small -> large): {gathered}"
