"""Languages written with spaces between words: Unicode words, one rule for all of them.

A caption is put in Unicode NFKC (full-width and compatibility forms become the plain
ones), case-folded (``str.casefold``: "Straße" -> "strasse", so case never splits a
word), and its tokens are the runs of Unicode letters, marks and digits. Inside a
word, between two letters or digits:

- a hyphen stays: "Fußball-Spieler" -> "fussball-spieler" (one token); other dashes
  (en and em dashes) separate words;
- an apostrophe (the typographic ones, U+2019, U+02BC and U+2018, are read as ')
  stays: "geht's" is one token, except in the languages with elision (French,
  Italian), where it ends the elided word and stays on it: "l'homme" -> "l'" "homme",
  "dell'acqua" -> "dell'" "acqua"; a few words are written with an apostrophe that
  is not an elision and stay whole ("aujourd'hui").

Everything else (punctuation, symbols, quote marks, apostrophes at a word's edge) is a
space; with elision, an apostrophe that ends a word stays on it (so a quotation in
single quotes keeps its closing one: French captions quote with « » or " "). The rule
is idempotent: a caption's tokens joined by spaces tokenise to themselves.
"""

import unicodedata
from dataclasses import dataclass
from typing import ClassVar

import regex

from transforms.corpus.languages.base import Language

# typographic apostrophes (right and left single quotes, modifier letter) and the hyphen
APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2018": "'", "\u2010": "-"})
_WORD = r"[\p{L}\p{M}\p{N}]+"
# A word, with hyphens and apostrophes between its letters; with elision, an apostrophe
# may end it ("l'" of "l' homme", as the tokens of "l'homme" are written back).
_WORDS = regex.compile(rf"{_WORD}(?:['-]{_WORD})*")
_ELIDED_WORDS = regex.compile(rf"{_WORD}(?:['-]{_WORD})*'?")

# Words written with an apostrophe that is not an elision: not split (lower case, NFKC).
FRENCH_WHOLE = frozenset(
    {
        "aujourd'hui",
        "prud'homme",
        "prud'hommes",
        "presqu'île",
        "presqu'îles",
        "quelqu'un",
        "quelqu'une",
    }
)


@dataclass(frozen=True)
class Spaced(Language):
    """``elision``: the language elides (fr, it); ``whole``: its words never split."""

    elision: bool = False
    whole: frozenset[str] = frozenset()

    tokeniser: ClassVar[str] = "unicode-words"

    @property
    def rule(self) -> str:
        apostrophe = (
            "an elision splits after its apostrophe (l' homme)"
            if self.elision
            else "an apostrophe inside a word stays (geht's)"
        )
        return f"NFKC, case-folded, Unicode words; a hyphen inside a word stays; {apostrophe}"

    def tokens(self, caption: str) -> list[str]:
        r"""
        >>> Spaced("de", "German").tokens("Zwei Männer, ein Fußball-Spieler: geht\u2019s?")
        ['zwei', 'männer', 'ein', 'fussball-spieler', "geht's"]
        >>> Spaced("fr", "French", elision=True, whole=FRENCH_WHOLE).tokens(
        ...     "L\u2019homme d'aujourd'hui")
        ["l'", 'homme', "d'", "aujourd'hui"]
        """
        text = unicodedata.normalize("NFKC", caption).casefold().translate(APOSTROPHES)
        if not self.elision:
            return _WORDS.findall(text)
        return [part for word in _ELIDED_WORDS.findall(text) for part in self._elided(word)]

    def _elided(self, word: str) -> list[str]:
        """``word`` split after each elision: "d'aujourd'hui" -> ["d'", "aujourd'hui"]."""
        parts = []
        while word not in self.whole and "'" in word[:-1]:
            cut = word.index("'") + 1
            parts.append(word[:cut])
            word = word[cut:]
        return [*parts, word]
