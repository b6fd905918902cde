"""Closed sets end to end: the guarantee as a property of the written dataset, and its audit."""

import hashlib
import json
import os

import apache_beam as beam
import numpy as np
import pyarrow.parquet as pq
from apache_beam.testing.util import assert_that, equal_to

from schemas.layout import corpus_folder, dataset_path
from tests.support.dataset_checks import check_dataset, in_text_order, read_parquet
from tests.support.local import local_pipeline
from transforms.corpus.neighbours import load_searchable, search
from transforms.strategies.closed_sets import ClosedSets
from transforms.strategies.closed_sets.leftovers import (
    BORDER_CANDIDATES,
    LEFTOVER_DEPTHS,
    Waiting,
    border_candidates,
    graph_weights,
    leftover_graphs,
    searched_deeper,
)
from transforms.strategies.closed_sets.pairs import Edges, first_allowed
from transforms.strategies.closed_sets.selections import cosines_among
from transforms.strategies.validity import mutual_allowed, pairs_allowed

SPLITS = ("train", "dev", "test")


def by_set(rows: list[dict]) -> list[list[dict]]:
    sets: dict[tuple, list[dict]] = {}
    for row in rows:
        sets.setdefault(tuple(sorted(row["option_caption_ids"])), []).append(in_text_order(row))
    return list(sets.values())


def text_only_functions(dataset: str) -> dict:
    """Functions of the option texts alone, each answering an index into the (sorted) options."""
    corpus = pq.read_table(os.path.join(corpus_folder(dataset), "captions.parquet")).to_pylist()
    row_of = {caption["caption_id"]: row for row, caption in enumerate(corpus)}
    embeddings = np.load(os.path.join(corpus_folder(dataset), "embeddings.npy"))

    def hub_pv(row):
        vectors = embeddings[[row_of[cid] for cid in row["option_caption_ids"]]]
        return int(np.argmax((vectors @ vectors.T).sum(axis=1)))

    def longest(row):
        return int(np.argmax([len(option.split()) for option in row["options"]]))

    def hashed(row):
        digest = hashlib.sha256("|".join(row["options"]).encode()).digest()
        return digest[0] % 5

    def shortest_word(row):
        return int(np.argmin([min(map(len, option.split())) for option in row["options"]]))

    return {"hub_pv": hub_pv, "longest": longest, "hash": hashed, "shortest_word": shortest_word}


def test_closed_sets_dataset_invariants(closed_sets_dataset):
    rows = check_dataset(closed_sets_dataset[1], sample=20)
    assert sum(len(split_rows) for split_rows in rows.values()) > 3000


def test_every_text_only_function_is_right_on_exactly_one_instance_of_every_set(
    closed_sets_dataset,
):
    dataset, _ = closed_sets_dataset
    functions = text_only_functions(dataset)
    for split in SPLITS:
        sets = by_set(read_parquet(dataset, split))
        assert sets
        for members in sets:
            for name, answer in functions.items():
                right = sum(answer(row) == row["label"] for row in members)
                assert right == 1, (name, [row["example_id"] for row in members])


def read_statistics(dataset: str) -> dict:
    with open(dataset_path(dataset, "statistics.json")) as handle:
        return json.load(handle)


def test_the_learned_audit_and_every_rule_score_exactly_chance(closed_sets_dataset):
    audit = read_statistics(closed_sets_dataset[0])["text_only_audit"]
    assert {row["model"] for row in audit["models"]} >= {"Text-FFNN", "Bigram LM", "Hub by BLEU"}
    for row in audit["models"]:
        for split in ("dev", "test"):
            assert 5 * row[split]["correct"] == row[split]["total"] > 0, row["model"]
    assert audit["verdict"]["at_chance"]
    assert audit["verdict"]["line"].startswith("text-only furthest from chance: 20.0% on test (")


def test_the_audit_in_statistics_is_what_the_files_give(mcic_dataset):
    audit = read_statistics(mcic_dataset)["text_only_audit"]
    results = {row["model"]: row for row in audit["models"]}
    for split in ("dev", "test"):
        rows = [in_text_order(row) for row in read_parquet(mcic_dataset, split)]
        labels = np.array([row["label"] for row in rows])
        lengths = np.array([[len(o.split()) for o in row["options"]] for row in rows])
        correct = int(np.sum(np.argmax(lengths, axis=1) == labels))
        assert results["Longest option"][split] == {
            **results["Longest option"][split],
            "correct": correct,
            "total": len(rows),
        }
    furthest = max(results.values(), key=lambda row: abs(row["test"]["accuracy"] - 0.2))
    assert audit["verdict"]["model"] == furthest["model"]
    bound = 3 * np.sqrt(0.2 * 0.8 / furthest["test"]["total"])
    assert audit["verdict"]["at_chance"] == (abs(furthest["test"]["accuracy"] - 0.2) <= bound)


def test_leftover_graphs_travel_as_bits_and_give_back_the_same_weights(closed_sets_dataset):
    """The border pass's input: which pairs may share a set, packed; the cosines recomputed
    from the index equal those the pairs were checked with."""
    directory, options = closed_sets_dataset
    config = ClosedSets.resolve(options.strategy_config())
    searchable = load_searchable(corpus_folder(directory), config.decoy_pool, config.index)
    corpus, pool = searchable.corpus, searchable.pools["train"]
    rows = pool.rows[::7][:60]
    candidates, sim_pv = search(corpus, pool, rows, ClosedSets.searched(config))
    scratch = corpus.ngrams.scratch()
    allowed, _ = pairs_allowed(corpus, rows, candidates, sim_pv, config.rules, scratch)
    edges = Edges(rows, candidates, sim_pv, allowed)
    chosen, _ = border_candidates(
        corpus, edges, config.rules, scratch, np.zeros(0, bool), BORDER_CANDIDATES
    )
    graphs = leftover_graphs(corpus, pool, chosen, config.rules, scratch)
    kept = np.minimum(edges.allowed.sum(axis=1), BORDER_CANDIDATES)  # not only up to a group
    np.testing.assert_array_equal((graphs.candidates >= 0).sum(axis=1), kept)
    assert (kept > 5).any()
    weights = graph_weights(pool, graphs)
    nodes = graphs.nodes
    assert graphs.allowed.nbytes * 20 < weights.nbytes
    for b, row in enumerate(nodes):
        row = row[row >= 0]
        cosines = cosines_among(pool, row)
        mutual = mutual_allowed(corpus, row[None], config.rules, scratch, cosines[None])[0]
        expected = np.where(mutual, cosines, np.nan).astype(np.float32)
        np.testing.assert_array_equal(weights[b, : len(row), : len(row)], expected)
        assert np.isnan(weights[b, len(row) :]).all() and np.isnan(weights[b, :, len(row) :]).all()
    assert (~np.isnan(weights)).sum() > len(rows)  # real graphs, not all NaN


def test_searching_deeper_allows_by_the_rules_and_puts_a_group_first(closed_sets_dataset):
    """Leftovers short of candidates, or of four that may share a set: searched deeper,
    every candidate kept is allowed with the target (as ``pairs_allowed`` says), and more
    rows lead with four candidates that form a set with the target than nearest-first
    order gives."""
    directory, options = closed_sets_dataset
    config = ClosedSets.resolve(options.strategy_config())
    searchable = load_searchable(corpus_folder(directory), config.decoy_pool, config.index)
    corpus, pool, rules = searchable.corpus, searchable.pools["train"], config.rules
    scratch = corpus.ngrams.scratch()
    rows, searched = pool.rows[::5][:200], 40  # shallower than a run's: rows fall short
    candidates, sim_pv = search(corpus, pool, rows, searched)  # as _AllowedPairs has them
    allowed, _ = pairs_allowed(corpus, rows, candidates, sim_pv, rules, scratch, need=50)
    edges = Edges(rows, *first_allowed(candidates, sim_pv, allowed, 50))
    waiting = np.zeros(len(corpus), bool)
    waiting[rows] = True  # the sampled rows are the leftovers
    deeper, short = searched_deeper(corpus, pool, edges, rules, scratch, searched, waiting)
    gained = (deeper.allowed.sum(axis=1) > edges.allowed.sum(axis=1)).sum()
    assert gained > 10  # it searched
    # the counts per depth: only rows short at a depth are searched, and none gets shorter
    assert len(short) == len(LEFTOVER_DEPTHS) + 1 and list(short) == sorted(short, reverse=True)
    assert short[0] >= gained and short[-1] >= (deeper.allowed.sum(axis=1) < 32).sum()
    kept = np.where(deeper.allowed, deeper.candidates, -1)
    again, _ = pairs_allowed(corpus, rows, kept, deeper.sim_pv, rules, scratch)
    np.testing.assert_array_equal(again, deeper.allowed)
    assert len(np.unique(kept[0][kept[0] >= 0])) == (kept[0] >= 0).sum()

    def sets_first(found: Edges) -> int:
        nodes = np.concatenate([rows[:, None], found.candidates[:, :4]], axis=1)
        return int((mutual_allowed(corpus, nodes, rules, scratch).sum(axis=(1, 2)) == 20).sum())

    candidates, sim_pv = search(corpus, pool, rows, LEFTOVER_DEPTHS[-1] * searched)
    every, _ = pairs_allowed(corpus, rows, candidates, sim_pv, rules, scratch)
    nearest = Edges(rows, *first_allowed(candidates, sim_pv, every, 50))
    assert sets_first(deeper) > sets_first(nearest) > 0


def test_waiting_marks_every_leftover_of_every_batch_whatever_the_order():
    """The border pass's side input: one bool per caption up to the largest leftover."""
    batches = [np.array([7, 2]), np.array([], dtype=np.int64), np.array([4]), np.array([2, 9])]
    with local_pipeline() as pipeline:
        waiting = (
            pipeline
            | beam.Create(batches, reshuffle=False)
            | beam.CombineGlobally(Waiting())
            | beam.Map(lambda rows: np.flatnonzero(rows).tolist())
        )
        assert_that(waiting, equal_to([[2, 4, 7, 9]]))
