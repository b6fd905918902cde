"""What a caption language is to the pipeline: a rule from a caption to its tokens.

The pipeline stores a caption as its tokens joined by single spaces, and everything
downstream (PV training, simSURF/BLEU, de-duplication, the bigram LM, Text-FFNN, the
trainer) splits on spaces; so a language's one duty is tokens without whitespace.
"""

import abc
import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import ClassVar

from transforms.errors import InputError, install_command


@dataclass(frozen=True)
class Language(abc.ABC):
    """A caption language. Instances are small and picklable: a tokeniser that loads a
    dictionary keeps it in a per-process cache of its module, never on the instance."""

    code: str  # the --language value and the dataset card's `language:` (ISO 639-1)
    name: str  # for people: "German"

    tokeniser: ClassVar[str]  # recorded in the manifest, the card and the version name
    extra: ClassVar[str | None] = None  # the pip extra of dmc-datasets its packages come from
    packages: ClassVar[tuple[str, ...]] = ()  # the modules it imports, as pip names them
    spaced: ClassVar[bool] = True  # words are separated by spaces in the written language

    @property
    @abc.abstractmethod
    def rule(self) -> str:
        """The rule in a few words, for the manual's table (docs/languages.md)."""

    @abc.abstractmethod
    def tokens(self, caption: str) -> list[str]:
        """The caption's tokens: non-empty, without whitespace."""

    def check_installed(self) -> None:
        """One line naming the extra when a package this language needs is missing."""
        for package in self.packages:
            module(package, self)


def module(package: str, language: Language) -> ModuleType:
    """``package`` imported (its pip name: "unidic-lite" is ``unidic_lite``), or one
    InputError naming the extra that installs it."""
    try:
        return importlib.import_module(package.replace("-", "_"))
    except ImportError as error:
        raise InputError(
            f"--language {language.code} needs {' and '.join(language.packages)}: "
            f"{install_command(language.extra)}"
        ) from error
