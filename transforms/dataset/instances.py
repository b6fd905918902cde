"""Instances: target + decoys, shuffled by a permutation seeded per example."""

import apache_beam as beam
import numpy as np

from schemas.records import Selection
from transforms.progress import TimedMap
from transforms.seeds import keyed_rng


def option_permutation(seed: int, example_id: str, num_options: int) -> np.ndarray:
    """Where each of (target, decoy 1..k-1) goes; depends only on (seed, example_id, k)."""
    return keyed_rng(seed, example_id).permutation(num_options)


def build_instance(selection: Selection, seed: int) -> dict:
    """Selection -> an instance row (schemas.instance.FIELDS)."""
    target, decoys = selection.target, selection.decoys
    ordered = [
        (
            selection.target_text or target.text,
            target.caption_id,
            target.image_id,
            selection.target_edit,
            "" if selection.target_edit else target.original,
        )
    ]
    ordered += [
        (decoy.text, decoy.caption_id, decoy.image_id, decoy.edit, decoy.original)
        for decoy in decoys
    ]
    positions = option_permutation(seed, target.example_id, len(ordered))
    options = [None] * len(ordered)
    for source, position in enumerate(positions):
        options[position] = ordered[source]
    return {
        "example_id": target.example_id,
        "split": target.split,
        "image_id": target.image_id,
        "image_file": target.file_name,
        "image_url": target.url,
        "options": [text for text, *_ in options],
        "option_originals": [original for *_, original in options],
        "label": int(positions[0]),
        "option_caption_ids": [caption_id for _, caption_id, *_ in options],
        "option_image_ids": [image_id for _, _, image_id, *_ in options],
        "option_edits": [edit for _, _, _, edit, _ in options],
        "target_caption_id": target.caption_id,
        "decoy_caption_ids": [decoy.caption_id for decoy in decoys],
        "decoy_image_ids": [decoy.image_id for decoy in decoys],
        "decoy_edits": [decoy.edit for decoy in decoys],
        "decoy_sim_pv": [decoy.sim_pv for decoy in decoys],
        "decoy_sim_surf": [decoy.sim_surf for decoy in decoys],
        "decoy_score": [decoy.score for decoy in decoys],
    }


class BuildInstances(beam.PTransform):
    """Selection -> instance dict."""

    def __init__(self, *, seed: int):
        super().__init__()
        self._seed = seed

    def expand(self, selections):
        return selections | "Shuffle options" >> beam.ParDo(
            TimedMap("instances", "build", build_instance, seed=self._seed)
        )
