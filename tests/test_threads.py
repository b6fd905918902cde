"""Each process's share of the cores: chosen once, handed to worker processes, one in tests."""

import dataclasses
import os
import subprocess

import pytest

from tests.support.probes import run_probe
from transforms.threads import (
    THREAD_VARIABLES,
    child_processes_use,
    chosen_threads,
    cores,
    share_of_cores,
)


def test_a_share_is_at_least_one_thread_and_never_more_in_all_than_the_cores():
    assert share_of_cores(1) == cores()
    assert share_of_cores(cores()) == 1
    assert share_of_cores(10 * cores()) == 1
    assert share_of_cores(0) == cores()


def test_a_users_omp_num_threads_wins_over_the_share(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert chosen_threads(processes=8) == 3
    for unusable in ("", "0", "two"):
        monkeypatch.setenv("OMP_NUM_THREADS", unusable)
        assert chosen_threads(processes=1) == cores()


def test_worker_processes_get_the_share_and_this_process_keeps_its_own(monkeypatch):
    for variable in THREAD_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "7")  # the user's: kept
    with child_processes_use(2):
        printed = subprocess.run(
            ["printenv", "OMP_NUM_THREADS", "MKL_NUM_THREADS"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    assert printed.split() == ["2", "7"]
    assert "OMP_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "7"


def test_the_suite_runs_one_thread_per_library():
    """tests/conftest.py sets it before any library starts its pool."""
    torch = pytest.importorskip("torch")
    assert {os.environ[variable] for variable in THREAD_VARIABLES} == {"1"}
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize(
    ("beam_args", "threads"),
    [
        ([], lambda: cores()),  # the in-process runner: the driver's machine
        (["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"], None),
        (["--runner", "DataflowRunner"], lambda: 1),  # an SDK process per vCPU
        (["--runner", "PortableRunner"], lambda: 1),
    ],
    ids=["in-process", "two-local-processes", "dataflow", "portable"],
)
def test_worker_processes_get_their_share_and_remote_ones_one_thread(
    beam_args, threads, monkeypatch
):
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.runner import worker_threads

    monkeypatch.delenv("OMP_NUM_THREADS")  # what the suite sets; a user may not
    expected = threads() if threads else share_of_cores(2)
    assert worker_threads(PipelineOptions(beam_args)) == expected
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # a user's own wins on this machine
    assert worker_threads(PipelineOptions(beam_args)) == (3 if beam_args[:1] != ["--runner"] else 1)


def test_the_torch_limit_holds_when_set_before_pytorch_is_imported():
    """As in a Dataflow worker, whose DoFn sets it before its encoder imports PyTorch: a
    fresh process, no variable set, asking for more threads than PyTorch would start."""
    pytest.importorskip("torch")
    environment = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    asked = cores() + 1
    assert int(run_probe("torch_threads_probe", str(asked), env=environment).stdout) == asked


def test_faiss_gets_the_workers_share_unless_search_threads_is_given():
    """On Dataflow the share is one (an SDK process per vCPU): faiss's pool per process
    would spin on the cores the others need, as PyTorch's did."""
    from pipelines.options import GenerateOptions

    options = GenerateOptions(input="", output="")
    assert options.strategy_config(worker_threads=1).index.threads == 1
    given = dataclasses.replace(options, search_threads=3)
    assert given.strategy_config(worker_threads=1).index.threads == 3
