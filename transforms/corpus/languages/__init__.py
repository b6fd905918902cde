"""The languages captions are tokenised in: one module per tokeniser, registered in
:mod:`transforms.corpus.languages.registry` (docs/languages.md)."""
