"""The files reports are made of: the rating app's page, script and style, the preview's
page and style, the card templates.

They ship as package data (``setup.py``), so an installed wheel or a Dataflow worker has them.
"""

from importlib import resources


def read(name: str) -> str:
    """One file of this folder as text, wherever the package is installed."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
