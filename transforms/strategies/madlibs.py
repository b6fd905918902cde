"""Visual Madlibs' multiple choice (Yu et al. 2015, section 4): one target and three decoys.

``--decoys madlibs_easy``: three captions drawn at random from other images
(the ``random`` strategy with four options). ``--decoys madlibs_hard``: three
captions of other images that contain the same objects as the target's image
(:mod:`transforms.language.objects` defines "same objects" and where objects
come from: ``--objects`` instance files, else the captions through a lexicon).
Both keep the validity rules: a decoy never copies, or nearly copies, a caption
of the target's image.
"""

from transforms.strategies.random_decoys import RandomDecoys


class MadlibsEasy(RandomDecoys):
    name = "madlibs_easy"
    num_options = 4
    summary = (
        "Visual Madlibs' easy multiple choice: 3 captions of other images drawn at random; "
        "text-only at chance, easy for image models"
    )
    filterable = False
