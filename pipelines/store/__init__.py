"""The version store: where a run's output lives, and how it is claimed, written whole,
described and published as the latest.

- ``claims``: a version's claim (its lock and lease), so two runs never write one;
- ``versions``: version names, the output root's layout, ``latest``, verification;
- ``lifecycle``: a version written from claim to ``_COMPLETE``, audited and published;
- ``manifest``: what a version records of its inputs, options and code;
- ``metadata``: the dataset card's, Croissant's and TFDS's files of a finished version.

The commands in ``pipelines/`` use it; nothing in ``transforms/`` does.
"""
