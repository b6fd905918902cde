import pytest

from tests.support.probes import run_probe


def exit_output(step: str) -> str:
    return run_probe("exit_probe", step, check=False).stdout


def test_a_plain_process_collects_its_cycles_at_exit():
    # the probe's own control: without the commands' or the workers' way out, Python's last
    # collection frees the cycle (else the tests below could not fail)
    assert "collected at exit" in exit_output("nothing")


@pytest.mark.parametrize("step", ["cli", "load"])
def test_commands_and_workers_that_loaded_a_model_exit_without_the_last_collection(step):
    # a command's driver (pipelines.runner.cli) and a worker's first load (timed_load)
    assert "collected at exit" not in exit_output(step)
