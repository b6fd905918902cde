"""dmc-preview's options.

Each command's options have a module of their own; what they all share is in schemas/options.py.
"""

from dataclasses import dataclass

from pipelines.options.fields import dataset_option
from schemas.options import REQUIRED, Group, option
from transforms.errors import InputError


@dataclass(frozen=True)
class PreviewOptions:
    dataset: str = dataset_option()
    output: str = option(
        REQUIRED,
        "the folder to write: index.html and images/; open index.html in a browser, offline too",
        group=Group.IO,
    )
    images: str = option(
        "",
        "a folder of the images' files, by image_file (e.g. COCO's val2014/): the shown ones are "
        "copied into OUTPUT/images/; an image not there shows its image_url, else a placeholder",
        group=Group.IO,
    )
    per_split: int = option(20, "instances shown per split", group=Group.SAMPLE)
    seed: int = option(
        0,
        "seed of the sample: a seed shows the same instances whatever the order of the files",
        group=Group.SAMPLE,
    )

    def validate(self) -> None:
        if self.per_split < 1:
            raise InputError(f"--per_split {self.per_split}: must be at least 1")
