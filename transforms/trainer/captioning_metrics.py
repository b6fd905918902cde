"""CIDEr-D and ROUGE-L of generated captions, as the COCO caption evaluation computes them.

The scorers are the COCO caption evaluation toolkit's own (``pycocoevalcap``,
the pip release of github.com/tylin/coco-caption; pure Python, its Java
tokenizer is not used). Its "CIDEr" is CIDEr-D (tf-idf n-grams 1-4, the
document frequencies taken from the references of the images evaluated, a
Gaussian length penalty with sigma 6, clipped counts, times 10), a corpus-level
number; ROUGE-L is the LCS F-measure (beta 1.2) against the best-matching
reference, averaged over images. Hypotheses and references are the dataset's
tokens, as the paper's section 5.1 preprocesses them: the captions were normalised
when the dataset was generated (English: letters only, lowercase; another
--language: its words, docs/languages.md), so their tokens are split on spaces, words
outside the model's vocabulary are ``<unk>``, and the first 30 tokens count.
"""

import numpy as np
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge

from transforms.corpus.normalize import MAX_TOKENS
from transforms.errors import InputError

UNKNOWN = "<unk>"


def caption_tokens(text: str, vocabulary: frozenset[str] | None = None) -> list[str]:
    """The tokens of a normalised hypothesis or reference, in any language (re-normalising
    by the English rule would erase a Japanese caption).

    >>> caption_tokens("a dog s balls", frozenset({"a", "dog", "balls"}))
    ['a', 'dog', '<unk>', 'balls']
    """
    return [
        token if vocabulary is None or token in vocabulary else UNKNOWN
        for token in text.split()[:MAX_TOKENS]
    ]


def caption_scores(
    hypotheses: dict[str, str],
    references: dict[str, list[str]],
    vocabulary: frozenset[str] | None = None,
) -> dict[str, float]:
    """CIDEr-D and ROUGE-L of one hypothesis per image against that image's references.

    An empty hypothesis scores 0 on both (the toolkit's ROUGE-L would divide by its length).
    """
    missing = [image for image in hypotheses if not references.get(image)]
    if missing:
        raise InputError(
            f"{len(missing)} captioned images have no reference captions, e.g. {missing[:3]}"
        )
    res = {
        image: [" ".join(caption_tokens(text, vocabulary))] for image, text in hypotheses.items()
    }
    gts = {
        image: [" ".join(caption_tokens(text, vocabulary)) for text in references[image]]
        for image in hypotheses
    }
    cider, _ = Cider().compute_score(gts, res)
    rouge = [Rouge().calc_score(res[image], gts[image]) if res[image][0] else 0.0 for image in res]
    return {"CIDEr": float(cider), "ROUGE-L": float(np.mean(rouge)), "images": len(res)}
