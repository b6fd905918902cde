"""Japanese: words by MeCab (fugashi) with the UniDic dictionary unidic-lite ships.

The caption is put in NFKC (full-width letters and digits become the plain ones) and
case-folded, MeCab splits it into words, and each word's surface form is a token;
punctuation, symbols and spaces (UniDic's 補助記号, 記号 and 空白) are dropped.
「二人の男性が庭で何かを見ている」 -> 二人 の 男性 が 庭 で 何 か を 見 て いる.
"""

import functools
import logging
import unicodedata
from dataclasses import dataclass
from typing import ClassVar

from transforms.corpus.languages.base import Language, module

# UniDic's first part-of-speech level of what is not a word
NOT_WORDS = frozenset({"補助記号", "記号", "空白"})


@dataclass(frozen=True)
class Japanese(Language):
    tokeniser: ClassVar[str] = "fugashi-unidic-lite"
    extra: ClassVar[str | None] = "ja"
    packages: ClassVar[tuple[str, ...]] = ("fugashi", "unidic-lite")
    spaced: ClassVar[bool] = False
    rule = "NFKC, case-folded, MeCab's words (UniDic surface forms) without punctuation"

    def tokens(self, caption: str) -> list[str]:
        text = unicodedata.normalize("NFKC", caption).casefold()
        words = _tagger(self)(text)
        return [
            token
            for word in words
            if word.feature.pos1 not in NOT_WORDS
            for token in word.surface.split()
        ]


@functools.cache
def _tagger(language: Japanese):
    """MeCab with unidic-lite's dictionary, loaded once per process (a worker's first
    caption), never pickled."""
    fugashi = module("fugashi", language)
    module("unidic-lite", language)
    logging.info("--language %s: MeCab loaded with unidic-lite's dictionary", language.code)
    return fugashi.Tagger()
