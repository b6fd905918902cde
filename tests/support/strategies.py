"""A ten-caption corpus written as a run writes one, and strategies built from options: what
the strategies' composite tests run on."""

from pipelines.options import GenerateOptions
from schemas.records import Caption
from transforms.corpus.paragraph_vectors import PVConfig
from transforms.corpus.pv_training import train_and_write
from transforms.strategies.registry import STRATEGIES

TEXTS = [
    "a man rides a red bike down a steep hill",
    "a woman holds an umbrella in the rain",
    "two dogs play with a ball on the grass",
    "a plate of pasta on a wooden table",
    "a bus parked by the curb of a city street",
    "a cat sleeps on a sofa near a window",
    "a boy flies a kite on the beach",
    "a train crosses a bridge over a river",
    "a bowl of fruit on a kitchen counter",
    "people walk along a busy sidewalk at night",
]


def corpus_ref(directory: str, split: str = "train"):
    captions = [
        Caption(str(i), str(i), f"{i}_0", text, f"{i}.jpg", "", split)
        for i, text in enumerate(TEXTS)
    ]
    pv = PVConfig(dim=16, epochs=20, min_count=1, hs=1, negative=0, seed=0, workers=1)
    return train_and_write(
        captions, pv=pv, pretrained="", neighbours=9, decoy_pool="split", output=directory
    )


def strategy(name: str, **changes):
    options = GenerateOptions(
        input="", output="", decoys=name, neighbours=9, set_neighbours=9, **changes
    )
    return STRATEGIES[name](options.strategy_config())
