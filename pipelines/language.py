"""--language resolved before a run: what generate and optimize tokenise captions with."""

import dataclasses
import logging

from pipelines.options import GenerateOptions
from transforms.corpus.languages.detect import SAMPLE_PER_FILE, resolve_language
from transforms.corpus.read import caption_sample


def with_language(options: GenerateOptions, inputs: list[str]) -> GenerateOptions:
    """``options`` with --language resolved (``auto`` detected, logged) and checked against
    the first captions of each input: the version is named after the language it used."""
    sample = caption_sample(inputs, SAMPLE_PER_FILE, options.images)
    language, reason = resolve_language(options.language, sample)
    if reason:
        logging.info(reason)
    resolved = dataclasses.replace(options, language=language.code)
    resolved.validate()  # what auto chose may not suit the options (an English-only strategy)
    return resolved
