"""Every option of every command, with its default and help: their one home.

One module per command's options (generate, train, features, evaluate, regenerate, preview,
rate, publish, make_corpus, log), so a new option lands beside the others of its command and
no module grows into a hotspot; schemas/options.py holds what every option is made of, and
each decoy strategy declares its own options beside it, which GenerateOptions takes in from the
registry. The argparse flags and their --help groups (pipelines/cli/parser.py), the
manual's option tables (pipelines/cli/tables.py) and the run manifest are all derived from
these dataclasses; nothing here imports the CLI.
"""

from pipelines.options.evaluate import EvaluateOptions
from pipelines.options.features import FeaturesOptions
from pipelines.options.generate import GenerateOptions
from pipelines.options.log import LogOptions
from pipelines.options.make_corpus import MakeCorpusOptions
from pipelines.options.preview import PreviewOptions
from pipelines.options.publish import PublishOptions
from pipelines.options.rate import RateExportOptions, RateFilterOptions, RateImportOptions
from pipelines.options.regenerate import RegenerateOptions
from pipelines.options.train import TrainOptions

__all__ = [
    "EvaluateOptions",
    "FeaturesOptions",
    "GenerateOptions",
    "LogOptions",
    "MakeCorpusOptions",
    "PreviewOptions",
    "PublishOptions",
    "RateExportOptions",
    "RateFilterOptions",
    "RateImportOptions",
    "RegenerateOptions",
    "TrainOptions",
]
