"""A tiny CLIP for dmc-evaluate's tests (tests/test_evaluate.py, tests/test_api.py): two
layers per tower, random weights, a word-level tokenizer made here (no download), and the
instances' images drawn under their file names (transforms/vision/drawing.py)."""

import pyarrow.parquet as pq
import tokenizers
import torch
import transformers

from schemas.layout import PARQUET, shard_pattern
from transforms.corpus.split import SPLITS
from transforms.files import list_files
from transforms.vision.drawing import write_images

SPECIAL = ("<pad>", "<unk>", "<bos>", "<eos>")
IMAGE_SIZE = 32


def instances(version: str, splits=SPLITS) -> list[dict]:
    return [
        row
        for split in splits
        for path in list_files(shard_pattern(version, PARQUET, split))
        for row in pq.read_table(path).to_pylist()
    ]


def words(texts) -> list[str]:
    split = tokenizers.pre_tokenizers.Whitespace().pre_tokenize_str
    return sorted({word for text in texts for word, _ in split(text)})


def tiny_clip(folder: str, vocabulary: list[str], seed: int = 0) -> str:
    """A CLIP of two layers per tower, random weights, saved with its tokenizer and image
    processor as ``save_pretrained`` does for a real one."""
    vocab = {token: k for k, token in enumerate([*SPECIAL, *vocabulary])}
    word_level = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    word_level.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    word_level.post_processor = tokenizers.processors.TemplateProcessing(
        single="<bos> $A <eos>", special_tokens=[("<bos>", 2), ("<eos>", 3)]
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=word_level,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<bos>",
        eos_token="<eos>",
        model_max_length=32,
    )
    tower = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2}
    config = transformers.CLIPConfig(
        text_config={
            **tower,
            "num_attention_heads": 2,
            "vocab_size": len(vocab),
            "max_position_embeddings": 32,
            "pad_token_id": 0,
            "bos_token_id": 2,
            "eos_token_id": 3,
        },
        vision_config={
            **tower,
            "num_attention_heads": 2,
            "image_size": IMAGE_SIZE,
            "patch_size": 8,
        },
        projection_dim=16,
    )
    torch.manual_seed(seed)
    model = transformers.CLIPModel(config)
    processor = transformers.CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
    )
    for part in (model, tokenizer, processor):
        part.save_pretrained(folder)
    return folder


def draw_images(version: str, folder: str) -> str:
    """Each instance's image drawn under its file name (the synthetic corpus's scene for its
    id; a COCO id draws some scene: a picture all the same)."""
    images = {(row["image_id"], row["image_file"]) for row in instances(version)}
    records = [{"id": int(image_id), "file_name": name} for image_id, name in sorted(images)]
    write_images(folder, 0, records, size=IMAGE_SIZE)
    return folder
