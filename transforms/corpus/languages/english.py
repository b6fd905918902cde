"""English: the paper's rule (Ding et al. 2016, section 5.1; SPEC "Normalisation"),
byte for byte what every English version was generated with."""

import re
from dataclasses import dataclass

from transforms.corpus.languages.base import Language

_NON_LETTERS = re.compile(r"[^a-z]+")


@dataclass(frozen=True)
class English(Language):
    tokeniser = "ascii-letters"
    rule = "the paper's: lowercase; every character outside a-z is a space"

    def tokens(self, caption: str) -> list[str]:
        """Lowercase, map every character outside a-z to a space, split.

        >>> English("en", "English").tokens("A man's 2 dogs, on the BEACH!")
        ['a', 'man', 's', 'dogs', 'on', 'the', 'beach']
        """
        return _NON_LETTERS.sub(" ", caption.lower()).split()
