"""Imports the generate path's commands, then prints which of the modules named on the
command line are loaded (tests/test_features_job.py)::

    python -m tests.support.vision_imports_probe MODULE...
"""

import sys

import pipelines.features
import pipelines.generate
import pipelines.make_corpus  # noqa: F401  (the three are what is probed)

if __name__ == "__main__":
    print([module for module in sys.argv[1:] if module in sys.modules])
