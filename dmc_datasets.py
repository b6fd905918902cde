"""``import dmc_datasets``: the Python API (pipelines/api.py) under the distribution's name.

A module beside pipelines/, transforms/ and schemas/ rather than a package holding them:
that layout is what Dataflow's ``--setup_file`` ships (docs/api.md).
"""

from pipelines.api import GeneratedVersion, evaluate, generate, load
from transforms.errors import InputError, NotPublished

__all__ = ["GeneratedVersion", "InputError", "NotPublished", "evaluate", "generate", "load"]
