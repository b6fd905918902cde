"""benchmarks/leftovers.py on leftover batches spilled as the border pass's are, from a
small closed-sets version: it reports what ``searched_deeper`` counts."""

import os

import numpy as np
import pytest

from benchmarks import leftovers
from pipelines.options import GenerateOptions
from schemas.layout import LEFTOVERS_DIRECTORY, corpus_folder
from transforms.corpus.neighbours import load_searchable
from transforms.memory import packed
from transforms.strategies.closed_sets.leftovers import searched_deeper


def stopped_run(directory: str, options: GenerateOptions, root: str) -> tuple[str, list]:
    """A version as a run stopped in its leftover graphs leaves it: the corpus's files, and
    two batches of shallow-searched leftovers (40 deep: rows fall short) in its folder."""
    config = options.strategy_config()
    source = corpus_folder(directory)
    version = os.path.join(root, "versions", "stopped")
    folder = os.path.join(corpus_folder(version), LEFTOVERS_DIRECTORY)
    os.makedirs(folder)
    for name in os.listdir(source):
        os.symlink(os.path.join(source, name), os.path.join(corpus_folder(version), name))
    searchable = load_searchable(source, config.decoy_pool, config.index)
    corpus, pool = searchable.corpus, searchable.pools["train"]
    scratch = corpus.ngrams.scratch()
    batches = []
    for rows in (pool.rows[::5][:100], pool.rows[1::5][:80]):
        edges = leftovers.searched_edges(searchable, "train", rows, config, scratch, searched=40)
        batches.append((("train", 0, source), edges))
    with open(os.path.join(folder, "batches.pickles"), "wb") as handle:
        handle.write(b"".join(packed(batch) for batch in batches))
    return version, batches


@pytest.mark.slow
def test_the_leftovers_benchmark_counts_the_deeper_searches(closed_sets_dataset, tmp_path, capsys):
    directory, options = closed_sets_dataset
    version, batches = stopped_run(directory, options, str(tmp_path))
    flags = [f"--{name}={getattr(options, name)}" for name in leftovers.RUN_FLAGS]
    assert leftovers.main(["--version", version, "--batches", "5", *flags]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("180 leftovers; 2 batches sampled")
    last = [cell.strip() for cell in lines[-1].strip("|").split("|")]
    assert last[:2] == ["all", "180"]

    config = options.strategy_config()
    searchable = load_searchable(corpus_folder(directory), config.decoy_pool, config.index)
    waiting = np.zeros(len(searchable.corpus), bool)
    waiting[np.concatenate([edges.targets for _, edges in batches])] = True
    short = np.zeros(3, np.int64)
    for _, edges in batches:  # the same leftovers, 200 deep first as the harness has them
        short += searched_deeper(
            searchable.corpus, searchable.pools["train"], edges, config.rules,
            searchable.corpus.ngrams.scratch(), 200, waiting,
        ).short  # fmt: skip
    assert short[0] > 0  # shallow rows were searched deeper
    assert last[3:6] == [f"{rows / 180:.1%}" for rows in short]


@pytest.mark.slow
def test_the_leftovers_benchmark_samples_any_version_s_captions(closed_sets_dataset, capsys):
    directory, options = closed_sets_dataset
    flags = [f"--{name}={getattr(options, name)}" for name in leftovers.RUN_FLAGS]
    assert leftovers.main(["--version", directory, "--sampled", "--batches", "1", *flags]) == 0
    lines = capsys.readouterr().out.splitlines()
    config = options.strategy_config()
    train = load_searchable(corpus_folder(directory), config.decoy_pool, config.index).pools[
        "train"
    ]
    assert lines[0].startswith(f"{len(train.rows):,} captions of the split; 1 batches sampled")
    last = [cell.strip() for cell in lines[-1].strip("|").split("|")]
    assert last[:2] == ["all", f"{min(len(train.rows), config.batch_size):,}"]
    shares = [float(cell.rstrip("%")) for cell in last[3:6]]
    assert shares == sorted(shares, reverse=True) and 0 <= shares[-1] <= shares[0] <= 100


def test_the_leftovers_benchmark_says_what_it_cannot_read(closed_sets_dataset, tmp_path):
    with pytest.raises(SystemExit, match="no leftover batches"):  # finished: folder removed
        leftovers.main(["--version", closed_sets_dataset[0]])
    with pytest.raises(SystemExit, match="not a version"):
        leftovers.main(["--version", str(tmp_path)])
