"""Which language a corpus's captions are in, from a sample of them (--language auto),
and the check that keeps the English default from erasing another language's letters.

The sample is bounded and read in the driver: the first :data:`SAMPLE_PER_FILE` captions
of each input file (``transforms.corpus.read.caption_sample``).

Each sampled caption reads as one language, or none, by a small heuristic:

- any Hiragana or Katakana: Japanese (ja); Han characters without kana: Chinese (zh);
- mostly Latin letters: the language among en, de, fr, cs with the most evidence, one
  point per stop word (:data:`STOP_WORDS`) and per letter only it uses
  (:data:`LETTERS`); no evidence, or a tie, reads as none;
- any other script reads as none (name the language with --language).

The corpus's language is the one most sampled captions read as. A second language read
in :data:`MIXED_SHARE` or more of the captions that read as one is a mixed corpus:
refused, unless --language names the language to tokenise them all with.
"""

from collections import Counter
from collections.abc import Iterable

import regex

from schemas.records import RawCaption
from transforms.corpus.languages.base import Language
from transforms.corpus.languages.registry import AUTO, ENGLISH, LANGUAGES
from transforms.errors import InputError

SAMPLE_PER_FILE = 1000
# A second language in this share of the sample's captions makes the corpus mixed.
MIXED_SHARE = 0.10
# Under --language en, more than this share of sampled captions with letters outside a-z
# is not English: COCO val2017 has 0.1% (its "café"s), German captions about half.
ENGLISH_LOSS_SHARE = 0.05


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP_WORDS = {
    "en": _words("the an of with on in and is are two at to his her near next sitting standing"),
    "de": _words(
        "der die das den dem ein eine einen einem einer und mit auf im ist sind zwei von "
        "vor neben steht sitzt"
    ),
    "fr": _words("le la les un une des du et avec sur dans est sont deux au aux devant l d"),
    "cs": _words("na se v ve s je jsou dva dvě muž žena u do z ze před při který"),
}
LETTERS = {"de": frozenset("äöüß"), "fr": frozenset("àâçèêëîïôùûœæÿ"), "cs": frozenset("ěščřžůťďň")}

_KANA = regex.compile(r"[\p{Hiragana}\p{Katakana}]")
_HAN = regex.compile(r"\p{Han}")
_LATIN = regex.compile(r"\p{Latin}")
_LETTER = regex.compile(r"\p{L}")
_WORDS = regex.compile(r"\p{L}+")
_NOT_ENGLISH = regex.compile(r"[^\P{L}a-z]")  # a letter the English rule drops


def caption_language(caption: str) -> str | None:
    """The code of the language ``caption`` reads as, or None.

    >>> caption_language("Zwei Männer betrachten etwas im Garten")
    'de'
    """
    if _KANA.search(caption):
        return "ja"
    if _HAN.search(caption):
        return "zh"
    letters = len(_LETTER.findall(caption))
    if not letters or len(_LATIN.findall(caption)) * 2 < letters:
        return None
    text = caption.casefold()
    words = _WORDS.findall(text)
    scores = {
        code: sum(word in stop_words for word in words)
        + sum(letter in LETTERS.get(code, ()) for letter in text)
        for code, stop_words in STOP_WORDS.items()
    }
    ranked = sorted(scores.values(), reverse=True)
    if ranked[0] == 0 or ranked[0] == ranked[1]:
        return None
    return max(scores, key=scores.__getitem__)


def detect_language(sample: list[RawCaption]) -> tuple[Language, str]:
    """The sample's language and why (one line for the log); a mixed sample, or one in no
    language this can tell, is an InputError naming what it found."""
    read = {caption.caption_id: caption_language(caption.caption) for caption in sample}
    counts = Counter(code for code in read.values() if code)
    if not counts:
        example = sample[0].caption_id if sample else "none"
        raise InputError(
            f"--language auto: cannot tell the language of the {len(sample)} sampled captions "
            f"(e.g. caption {example}); name it with --language ({', '.join(LANGUAGES)})"
        )
    decided = sum(counts.values())
    found = [code for code, count in counts.most_common() if count >= MIXED_SHARE * decided]
    if len(found) > 1:
        examples = ", ".join(
            f"{LANGUAGES[code].name} ({counts[code]}, e.g. caption "
            f"{next(id for id, read_as in read.items() if read_as == code)})"
            for code in found
        )
        raise InputError(
            f"the captions are in several languages: {examples} of {len(sample)} sampled; "
            "generate one language per dataset, or name the tokeniser for all of them with "
            "--language"
        )
    code = found[0]
    return LANGUAGES[code], (
        f"--language auto chose {code} ({LANGUAGES[code].name}, tokeniser "
        f"{LANGUAGES[code].tokeniser}): {counts[code]} of the first {len(sample)} captions "
        f"read as {LANGUAGES[code].name}, {decided - counts[code]} as another language, "
        f"{len(sample) - decided} as none (docs/languages.md)"
    )


def check_english(sample: list[RawCaption]) -> None:
    """Refuses, in one line, captions the English rule would maim: more than
    :data:`ENGLISH_LOSS_SHARE` of the sample with letters outside a-z ("Männer" ->
    "m nner"; a Japanese caption -> nothing)."""
    losing = [caption for caption in sample if _NOT_ENGLISH.search(caption.caption.lower())]
    if len(losing) <= ENGLISH_LOSS_SHARE * len(sample):
        return
    counts = Counter(code for code in map(caption_language, (c.caption for c in sample)) if code)
    code = counts.most_common(1)[0][0] if counts else None
    looks = (
        f"they look {LANGUAGES[code].name}: pass --language {code} or --language {AUTO}"
        if code and code != ENGLISH.code
        else f"pass --language <code> ({', '.join(LANGUAGES)}) or --language {AUTO}"
    )
    raise InputError(
        f"{len(losing)} of the first {len(sample)} captions have letters outside a-z, which "
        f"--language en (the default) drops (e.g. caption {losing[0].caption_id}: "
        f"{losing[0].caption[:60]!r}); {looks}"
    )


def resolve_language(code: str, sample: Iterable[RawCaption]) -> tuple[Language, str | None]:
    """--language ``code`` as a Language, its package checked, and what to log about it:
    ``auto`` is detected from ``sample``, ``en`` checked against it."""
    sample = list(sample)
    reason = None
    if code == AUTO:
        language, reason = detect_language(sample)
    else:
        language = LANGUAGES[code]
    if language is ENGLISH:
        check_english(sample)
    language.check_installed()
    return language, reason
