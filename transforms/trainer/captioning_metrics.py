"""CIDEr-D and ROUGE-L of generated captions, as the COCO caption evaluation computes them.

The scorers are the COCO caption evaluation toolkit's own (``pycocoevalcap``,
the pip release of github.com/tylin/coco-caption; pure Python, its Java
tokenizer is not used). Its "CIDEr" is CIDEr-D (tf-idf n-grams 1-4, the
document frequencies taken from the references of the images evaluated, a
Gaussian length penalty with sigma 6, clipped counts, times 10), a corpus-level
number; ROUGE-L is the LCS F-measure (beta 1.2) against the best-matching
reference, averaged over images. Hypotheses and references are preprocessed
as the paper's section 5.1 says: letters only, lowercase, whitespace tokens
(the project's caption normalisation), words outside the model's vocabulary
``<unk>``, the first 30 tokens.
"""

import numpy as np
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge

from transforms.corpus.normalize import normalize_caption
from transforms.errors import InputError

UNKNOWN = "<unk>"


def caption_tokens(text: str, vocabulary: frozenset[str] | None = None) -> list[str]:
    """The paper's preprocessing of a hypothesis or reference.

    >>> caption_tokens("A dog's 2 BALLS!", frozenset({"a", "dog", "balls"}))
    ['a', 'dog', '<unk>', 'balls']
    """
    return [
        token if vocabulary is None or token in vocabulary else UNKNOWN
        for token in normalize_caption(text)
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
