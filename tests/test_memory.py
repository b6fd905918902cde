"""A process that keeps its freed heap does not fault its batches' blocks in again."""

import resource
import sys

import pytest

from tests.support.heap_faults_probe import BLOCK_BYTES, BLOCKS
from tests.support.probes import run_probe

ONE_TURN_PAGES = BLOCKS * BLOCK_BYTES // resource.getpagesize()


def faults(mode: str) -> tuple[bool, int]:
    held, count = run_probe("heap_faults_probe", mode).stdout.split()
    return held == "True", int(count)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_held_heap_faults_the_batches_blocks_in_once_where_glibcs_defaults_do_again():
    held, held_faults = faults("held")
    default, default_faults = faults("default")
    assert held and not default
    assert held_faults < ONE_TURN_PAGES  # the loop's turns reuse one turn's pages
    assert default_faults > 2 * ONE_TURN_PAGES  # ... which glibc handed back, turn after turn
