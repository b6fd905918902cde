"""Every decoy strategy, by its ``--decoys`` name: the one list options and README read."""

from transforms.strategies.base import DecoyStrategy
from transforms.strategies.closed_sets import ClosedSets
from transforms.strategies.forced_choice import TASK_STRATEGIES
from transforms.strategies.madlibs import MadlibsEasy, MadlibsHard
from transforms.strategies.mcic import Mcic
from transforms.strategies.random_decoys import RandomDecoys

STRATEGIES: dict[str, type[DecoyStrategy]] = {
    strategy.name: strategy
    for strategy in (
        ClosedSets,
        Mcic,
        RandomDecoys,
        MadlibsEasy,
        MadlibsHard,
        *TASK_STRATEGIES,
    )
}
DEFAULT_STRATEGY = "closed_sets"


def strategy_table() -> str:
    """The docs table of strategies (``python -m pipelines.cli.tables strategies``)."""
    rows = [
        "| `--decoys` | default pool | what it does | text-only guarantee |",
        "| --- | --- | --- | --- |",
    ]
    for name, strategy in STRATEGIES.items():
        guarantee = strategy.guarantee or "none"
        rows.append(f"| `{name}` | {strategy.pools[0]} | {strategy.summary} | {guarantee} |")
    return "\n".join(rows)
