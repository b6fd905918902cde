"""The dataset card's YAML header is huggingface_hub's card metadata, as the Hub reads it back."""

import yaml
from huggingface_hub import DatasetCard, DatasetCardData

from schemas.instance import FIELDS
from transforms.report.card import Corpus, front_matter

STATISTICS = {
    "splits": {"train": {"instances": 800}, "dev": {"instances": 100}, "test": {"instances": 100}},
    "total": {"instances": 1000},
}
SIZES = {"train": 8000, "dev": 1000, "test": 1000}
COCO = Corpus(license="cc-by-4.0", tag="coco", licence="COCO's terms", citations=())


def parsed(header: str) -> dict:
    """The YAML between the header's two ``---`` lines."""
    return yaml.safe_load(header.removeprefix("---\n").removesuffix("---\n"))


def test_the_header_is_what_dataset_card_data_writes_of_what_the_hub_reads():
    """Parsed by huggingface_hub's DatasetCard and written again, the header is unchanged: it
    came through DatasetCardData (the old hand-written, JSON-quoted one did not)."""
    header = front_matter("versions/v1/dataset/", STATISTICS, COCO, "closed_sets", SIZES, "en")
    read = DatasetCard(f"{header}\nThe card.\n").data
    assert isinstance(read, DatasetCardData)
    assert header == f"---\n{read.to_yaml()}\n---\n"


def test_the_header_holds_the_cards_values():
    header = front_matter("", STATISTICS, COCO, "closed_sets", SIZES, "en")
    assert parsed(header) == {
        "pretty_name": "Multiple-choice image captions: closed_sets decoys",
        "license": "cc-by-4.0",
        "language": ["en"],
        "task_categories": ["multiple-choice"],
        "size_categories": ["1K<n<10K"],
        "tags": ["image-captioning", "coco", "closed_sets"],
        "configs": [
            {
                "config_name": "default",
                "data_files": [
                    {"split": split, "path": f"parquet/{split}/{split}-*.parquet"}
                    for split in ("train", "dev", "test")
                ],
            }
        ],
        "dataset_info": {
            "features": [
                {"name": field.name, "list" if field.repeated else "dtype": field.kind}
                for field in FIELDS
            ],
            "splits": [
                {"name": split, "num_examples": STATISTICS["splits"][split]["instances"]}
                | {"num_bytes": SIZES[split]}
                for split in ("train", "dev", "test")
            ],
        },
    }


def test_a_language_yaml_would_misread_is_quoted():
    """Norwegian's code is YAML 1.1's false: the old header wrote it bare."""
    header = front_matter("", STATISTICS, COCO, "closed_sets", SIZES, "no")
    assert parsed(header)["language"] == ["no"]
