"""The vision extra's packages, imported only when a vision command needs them.

The vision extra (:func:`transforms.errors.install_command`) brings torchvision,
open_clip_torch and transformers; the generate path never imports them
(tests/test_features_job.py checks), so a missing one is a one-line error of the command
that needs it, not an import error of the package.
"""

import importlib
from types import ModuleType

from transforms.errors import InputError, first_line, install_command

# module -> the distribution that installs it, and the extras a vision command needs for it
DISTRIBUTIONS = {
    "torch": ("torch", "train,vision"),
    "torchvision": ("torchvision", "vision"),
    "open_clip": ("open_clip_torch", "vision"),
    "transformers": ("transformers", "vision"),
}


def vision_module(name: str, needed_by: str) -> ModuleType:
    """``importlib.import_module(name)``, or an InputError naming the extra.

    >>> vision_module("nope", "--library x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    transforms.errors.InputError: --library x needs nope: pip install -e '.[vision]' (in ...
    """
    package, extras = DISTRIBUTIONS.get(name.split(".")[0], (name, "vision"))
    try:
        return importlib.import_module(name)
    except ImportError as error:
        message = f"{needed_by} needs {package}: {install_command(extras)}"
        raise InputError(message) from error
    except (RuntimeError, OSError) as error:  # e.g. a CUDA torchvision beside a CPU torch
        raise InputError(
            f"{needed_by} needs {package}, which is installed but does not load "
            f"({first_line(error)}): "
            "install the build of it that matches your torch"
        ) from error
