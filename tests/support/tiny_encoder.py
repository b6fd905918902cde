"""A tiny random sentence-transformers model, built from configuration: what the validity
rule's tests encode with, in a second and without the network or the real weights."""

import tempfile
from collections.abc import Sequence
from pathlib import Path

import torch
import transformers
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

from transforms.progress import quiet_model_libraries

SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
HIDDEN = 32
MAX_TOKENS = 64


def tiny_encoder(
    folder: Path, words: Sequence[str], seed: int = 0, language: str | Sequence[str] = "en"
) -> Path:
    """``folder`` holding a two-layer BERT (random weights from ``seed``) with mean pooling
    and unit vectors, its word-piece vocabulary the special tokens and ``words`` lowercased
    (any other word is [UNK]), and a model card declaring ``language``: the same bytes for
    the same arguments."""
    quiet_model_libraries()
    vocabulary = [*SPECIAL, *dict.fromkeys(word.lower() for word in words)]
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
        tokenizer = transformers.BertTokenizerFast(
            str(Path(scratch) / "vocab.txt"), do_lower_case=True, model_max_length=MAX_TOKENS
        )
        config = transformers.BertConfig(
            vocab_size=len(vocabulary),
            hidden_size=HIDDEN,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=MAX_TOKENS,
        )
        torch.manual_seed(seed)
        transformers.BertModel(config).save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        modules = [Transformer(scratch), Pooling(HIDDEN, "mean"), Normalize()]
        SentenceTransformer(modules=modules, device="cpu").save(
            str(folder), create_model_card=False
        )
    (folder / "README.md").write_text(model_card(language), encoding="utf-8")
    return folder


def model_card(language: str | Sequence[str]) -> str:
    """A card whose YAML front matter declares the language(s); none for ""."""
    codes = [language] if isinstance(language, str) else list(language)
    declared = "".join(f"- {code}\n" for code in codes if code)
    front = f"language:\n{declared}" if declared else "library_name: sentence-transformers\n"
    return f"---\n{front}---\n\n# A tiny random sentence-transformers model, for tests\n"
