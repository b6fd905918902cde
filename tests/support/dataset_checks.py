"""Invariants every generated dataset must satisfy, read back from its files.

Used by the tests that generate (synthetic corpus, COCO val2017) and the scale
benchmark. Those every strategy's output satisfies are here; a strategy's own
are callables beside it (``DecoyStrategy.invariants``), run by
:func:`check_dataset`. Near-copies are recomputed with nltk's BLEU, sharing
nothing with the pipeline's kernel.
"""

import glob
import json
import os

import numpy as np
import pyarrow.parquet as pq

from pipelines.options import GenerateOptions
from pipelines.store.versions import verify_version
from schemas.instance import MCIC_OPTIONS, parse_mcic_line
from schemas.layout import MCIC, PARQUET, TFRECORD, corpus_folder, dataset_path, shard_pattern
from tests.support.tfrecord_reader import parse_example, read_records
from transforms.strategies.invariants import (
    WrittenDataset,
    image_captions,
    no_decoy_describes_the_image,
    valid_decoy,
)
from transforms.strategies.registry import STRATEGIES
from transforms.strategies.validity import RULES

SPLITS = ("train", "dev", "test")


def read_parquet(output: str, split: str) -> list[dict]:
    files = sorted(glob.glob(shard_pattern(output, PARQUET, split)))
    assert files, f"no Parquet files for {split} in {output}"
    rows = []
    for path in files:
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def read_tfrecord(output: str, split: str) -> list[dict]:
    files = sorted(glob.glob(shard_pattern(output, TFRECORD, split)))
    assert files, f"no TFRecord files for {split} in {output}"
    return [parse_example(record) for path in files for record in read_records(path)]


def read_text(output: str, split: str) -> list[dict]:
    files = sorted(glob.glob(shard_pattern(output, MCIC, split)))
    assert files, f"no text files for {split} in {output}"
    rows = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            rows.extend(parse_mcic_line(line) for line in handle if line.strip())
    return rows


def check_instances(rows: list[dict], num_options: int) -> None:
    """What every strategy's instances satisfy, structurally.

    A decoy is named by (source caption id, edit): an edited decoy may come from the
    target's own caption; unedited decoys are captions of other images, best Score first.
    """
    for row in rows:
        assert len(row["options"]) == num_options
        assert len(set(row["options"])) == num_options, f"{row['example_id']}: repeated option"
        assert 0 <= row["label"] < num_options
        assert row["option_caption_ids"][row["label"]] == row["target_caption_id"]
        assert row["option_image_ids"][row["label"]] == row["image_id"]
        sources = list(zip(row["option_caption_ids"], row["option_edits"], strict=True))
        del sources[row["label"]]
        decoys = zip(row["decoy_caption_ids"], row["decoy_edits"], strict=True)
        assert sorted(sources) == sorted(decoys)
        unedited = [i for i, edit in enumerate(row["decoy_edits"]) if not edit]
        assert row["image_id"] not in [row["decoy_image_ids"][i] for i in unedited]
        scores = [row["decoy_score"][i] for i in unedited]
        assert scores == sorted(scores, reverse=True)
        for i, edit in enumerate(row["decoy_edits"]):
            if edit:
                assert np.isnan(row["decoy_score"][i]) and np.isnan(row["decoy_sim_pv"][i])


def check_validity(corpus: list[dict], rows: list[dict], surf_limit: float, sample: int) -> None:
    """Every decoy: no text of the target's image (all rows); near-copies by nltk (a sample)
    among the unedited decoys (an edit of the target's caption is near it by design)."""
    captions = image_captions(corpus)
    for row in rows:
        own = set(captions[row["image_id"]])
        decoys = [o for i, o in enumerate(row["options"]) if i != row["label"]]
        assert not own & set(decoys), f"{row['example_id']}: a decoy copies an image caption"
    rng = np.random.default_rng(1)
    for index in rng.choice(len(rows), size=min(sample, len(rows)), replace=False):
        row = rows[index]
        for i, option in enumerate(row["options"]):
            if i != row["label"] and not row["option_edits"][i]:
                assert valid_decoy(option, captions[row["image_id"]], surf_limit), row


def check_formats_agree(output: str, split: str, rows: list[dict], num_options: int) -> None:
    """TFRecord (and, for five options, the MCIC text files) hold the Parquet rows."""
    by_id = {row["example_id"]: row for row in rows}
    assert len(by_id) == len(rows), "duplicate example ids"
    tfrecords = read_tfrecord(output, split)
    if num_options == MCIC_OPTIONS:
        texts = read_text(output, split)
    else:
        texts = []
        assert not glob.glob(shard_pattern(output, MCIC, split)), "MCIC files of k != 5"
    assert len(tfrecords) == len(rows) and len(texts) in (0, len(rows))
    for features in tfrecords:
        row = by_id[features["example_id"][0].decode()]
        assert [o.decode() for o in features["options"]] == row["options"]
        assert features["label"] == [row["label"]]
        assert [c.decode() for c in features["decoy_caption_ids"]] == row["decoy_caption_ids"]
        np.testing.assert_allclose(features["decoy_score"], row["decoy_score"], rtol=1e-6)
    for text in texts:
        row = by_id[text["example_id"]]
        assert text["options"] == row["options"]
        assert text["label"] == row["label"]
        assert text["image_file"] == row["image_file"]


def read_corpus(output: str) -> list[dict]:
    return pq.read_table(os.path.join(corpus_folder(output), "captions.parquet")).to_pylist()


def written_dataset(
    options: GenerateOptions, corpus: list[dict], rows: dict[str, list[dict]], sample: int
) -> WrittenDataset:
    """The version ``options.output``, as its strategy's invariants read it."""
    return WrittenDataset(
        directory=options.output,
        strategy=STRATEGIES[options.decoys],
        config=options.strategy_config(),
        corpus=corpus,
        rows=rows,
        sample=sample,
        exact_search=len(corpus) <= options.index_exact_limit,
    )


def check_dataset(options: GenerateOptions, *, sample: int = 30) -> dict[str, list[dict]]:
    """All invariants of the dataset ``options`` generated; returns its Parquet rows.

    The validity rules hold for every strategy; the strategy's own ``invariants`` are run
    on the version read back.
    """
    output, n_dev, n_test = options.output, options.n_dev, options.n_test
    verify_version(output)  # the files checked below are exactly those the manifest lists
    surf_limit, strategy = options.surf_limit, STRATEGIES[options.decoys]
    decoy_pool = options.strategy_config().decoy_pool
    rows = {split: read_parquet(output, split) for split in SPLITS}
    corpus = read_corpus(output)
    split_images = {
        split: {c["image_id"] for c in corpus if c["split"] == split} for split in SPLITS
    }
    assert len(split_images["dev"]) == n_dev
    assert len(split_images["test"]) == n_test
    assert not split_images["dev"] & split_images["test"]
    assert not split_images["train"] & (split_images["dev"] | split_images["test"])
    for split in SPLITS:
        assert {row["image_id"] for row in rows[split]} <= split_images[split]
        assert all(row["split"] == split for row in rows[split])
        check_instances(rows[split], strategy.num_options)
        check_formats_agree(output, split, rows[split], strategy.num_options)
    if decoy_pool == "split":
        image_split = {c["image_id"]: c["split"] for c in corpus}
        for split in SPLITS:
            for row in rows[split]:
                assert {image_split[i] for i in row["decoy_image_ids"]} == {split}
    every = [row for split in SPLITS for row in rows[split]]
    check_validity(corpus, every, surf_limit, sample=10 * sample)
    written = written_dataset(options, corpus, rows, sample)
    no_decoy_describes_the_image(written)  # every strategy's, with a validity model
    for invariant in strategy.invariants:
        invariant(written)
    with open(dataset_path(output, "statistics.json")) as handle:
        statistics = json.load(handle)
    for split in SPLITS:
        assert statistics["splits"][split]["instances"] == len(rows[split])
        assert statistics["splits"][split]["images"] == len({r["image_id"] for r in rows[split]})
    assert set(statistics["validity"]) == {f"validity/{rule}" for rule in RULES}
    skipped = sum(statistics["skipped"].values())
    drops = sum(v for k, v in statistics["skipped"].items() if k.startswith("decoys/"))
    assert len({row["target_caption_id"] for row in every}) + drops == len(corpus)
    assert skipped >= drops
    temporary = glob.glob(os.path.join(output, "**", "beam-temp-*"), recursive=True)
    assert not temporary, f"temporary files left: {temporary[:3]}"
    with open(os.path.join(output, "manifest.json")) as handle:
        manifest = json.load(handle)
    assert manifest["options"]["neighbours"] == options.neighbours
    assert all(len(entry["sha256"]) == 64 for entry in manifest["inputs"])
    return rows


def in_text_order(row: dict) -> dict:
    """The options sorted by text, as the trainer sees them: ties go to the first text."""
    order = sorted(range(len(row["options"])), key=row["options"].__getitem__)
    return {
        **row,
        "options": [row["options"][k] for k in order],
        "option_caption_ids": [row["option_caption_ids"][k] for k in order],
        "label": order.index(row["label"]),
    }
