"""Chinese: words by jieba with its default dictionary.

The caption is put in NFKC and case-folded, jieba cuts it (its default mode: the
dictionary's most probable segmentation, and the HMM's Viterbi path for words the
dictionary lacks; deterministic, no sampling), and the pieces that hold a letter or a
digit are the tokens (punctuation and spaces are dropped).
两个男人在花园里看着什么东西。 -> 两个 男人 在 花园里 看着 什么 东西.
"""

import functools
import logging
import unicodedata
from dataclasses import dataclass
from typing import ClassVar

import regex

from transforms.corpus.languages.base import Language, module

_HAS_WORD = regex.compile(r"[\p{L}\p{N}]")


@dataclass(frozen=True)
class Chinese(Language):
    tokeniser: ClassVar[str] = "jieba"
    extra: ClassVar[str | None] = "zh"
    packages: ClassVar[tuple[str, ...]] = ("jieba",)
    spaced: ClassVar[bool] = False
    rule = "NFKC, case-folded, jieba's words without punctuation"

    def tokens(self, caption: str) -> list[str]:
        text = unicodedata.normalize("NFKC", caption).casefold()
        pieces = _segmenter(self).lcut(text)
        return [token for piece in pieces for token in piece.split() if _HAS_WORD.search(token)]


@functools.cache
def _segmenter(language: Chinese):
    """jieba's tokeniser with its dictionary loaded, once per process, never pickled.

    jieba announces the loading on stderr through its own logger; that is quietened and
    the loading said once through ours."""
    jieba = module("jieba", language)
    jieba.setLogLevel(logging.WARNING)
    segmenter = jieba.Tokenizer()
    segmenter.initialize()
    logging.info("--language %s: jieba's default dictionary loaded", language.code)
    return segmenter
