"""As if ``pip install dmc-datasets`` had left out the train extra (its caption metrics,
pycocoevalcap, cannot be imported): prints the trainer's registered fitters, then runs
``pipelines.train`` (tests/test_packaging.py)::

    python -m tests.support.no_train_extra_probe
"""

import importlib.abc
import sys


class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "pycocoevalcap":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


if __name__ == "__main__":
    sys.meta_path.insert(0, Absent())
    import pipelines.generate  # noqa: F401  (the generate path imports without the extra)
    from pipelines.train import main
    from transforms.trainer import registry

    print(sorted(registry.fitters()))
    sys.exit(main(["--dataset", "d", "--output", "o"]))
