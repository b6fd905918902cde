"""Records passed between pipeline stages (before instances are built).

Ids are strings throughout: COCO's are integers, Flickr's image ids are file
names. ``caption_order`` makes "lower caption id first" (SPEC tie-break) mean
numeric order for COCO and string order otherwise.
"""

from typing import NamedTuple

SKIPPED = "skipped"  # output tag of every stage that skips records


class RawCaption(NamedTuple):
    """One caption as read (errors about it are raised by the reader, naming the file)."""

    caption_id: str
    image_id: str
    caption: str
    file_name: str
    url: str
    source: str = ""  # the input file it was read from


class Caption(NamedTuple):
    """A normalised, de-duplicated caption: one future instance."""

    caption_id: str
    image_id: str
    example_id: str  # "<image_id>_<k>": k-th caption of its image, by caption id
    text: str  # normalised tokens joined by single spaces
    file_name: str
    url: str
    split: str = ""
    original: str = ""  # the caption as written (what a sentence encoder reads)


class Skip(NamedTuple):
    """A record left out on purpose, counted and reported under ``reason``."""

    reason: str  # "<stage>/<why>", e.g. "normalize/empty_caption"
    record: str  # the id of what was skipped
    split: str = ""


def caption_order(caption_id: str) -> tuple[int, int, str]:
    """Sort key: numeric ids numerically, before any non-numeric id; equal numbers by their
    text, so that no order depends on the order captions arrive in.

    >>> sorted(["b", "10", "7", "a", "07"], key=caption_order)
    ['07', '7', '10', 'a', 'b']
    """
    if caption_id.isdigit():
        return (0, int(caption_id), caption_id)
    return (1, 0, caption_id)


class Decoy(NamedTuple):
    """A chosen decoy with its provenance (SPEC "Decoy selection").

    ``caption_id`` names the corpus caption the text comes from; ``edit`` says how the
    text was built from it ("" when it is that caption as it is).
    """

    caption_id: str
    image_id: str
    text: str
    sim_pv: float
    sim_surf: float
    score: float
    edit: str = ""
    original: str = ""  # the caption as written; "" when the text was edited


class Selection(NamedTuple):
    """A target caption and its decoys (the strategy's k - 1), in its preference order.

    ``target_text``/``target_edit``: the target option when it is not the caption
    itself (forced choice's "just scene (+)" asks for the caption's scene chunk).
    """

    target: Caption
    decoys: tuple[Decoy, ...]
    target_text: str = ""
    target_edit: str = ""


class Reserved(NamedTuple):
    """A Selection and the further valid candidates adversarial filtering may swap in.

    Strategies emit these instead of bare Selections only with ``--adversarial_rounds``;
    the filter turns them back into Selections before instances are built.
    """

    selection: Selection
    reserve: tuple[Decoy, ...]  # in the strategy's preference order
