"""Every caption language, by its --language code: the one place they are registered.

A language spaced like English needs a line here, not a module (docs/languages.md has
the rule of each).
"""

from transforms.corpus.languages.base import Language
from transforms.corpus.languages.chinese import Chinese
from transforms.corpus.languages.english import English
from transforms.corpus.languages.japanese import Japanese
from transforms.corpus.languages.spaced import FRENCH_WHOLE, Spaced

ENGLISH = English("en", "English")
AUTO = "auto"  # --language auto: detected from a sample of the captions (detect.py)

LANGUAGES: dict[str, Language] = {
    language.code: language
    for language in (
        ENGLISH,
        Spaced("de", "German"),
        Spaced("fr", "French", elision=True, whole=FRENCH_WHOLE),
        Spaced("cs", "Czech"),
        Spaced("es", "Spanish"),
        Spaced("it", "Italian", elision=True),
        Spaced("nl", "Dutch"),
        Spaced("pt", "Portuguese"),
        Spaced("pl", "Polish"),
        Spaced("sv", "Swedish"),
        Japanese("ja", "Japanese"),
        Chinese("zh", "Chinese"),
    )
}


def language_table() -> str:
    """The manual's table of languages (``python -m pipelines.cli.tables languages``)."""
    rows = [
        "| `--language` | language | tokeniser | extra | rule |",
        "| --- | --- | --- | --- | --- |",
    ]
    for code, language in LANGUAGES.items():
        extra = f"`{language.extra}`" if language.extra else "none"
        rows.append(
            f"| `{code}` | {language.name} | `{language.tokeniser}` | {extra} | {language.rule} |"
        )
    return "\n".join(rows)
