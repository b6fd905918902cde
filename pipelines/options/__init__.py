"""Every option of every command, with its default and help: their one home.

One module per command's options (generate, train, regenerate, preview, rate, log), so a
new option lands beside the others of its command and no module grows into a hotspot;
fields.py holds what they share. The argparse flags and their --help groups
(pipelines/cli/parser.py), the manual's option tables (pipelines/cli/tables.py) and the run
manifest are all derived from these dataclasses; nothing here imports the CLI.
"""

from pipelines.options.fields import REQUIRED, Group, dataset_option, option, shown_default
from pipelines.options.generate import GenerateOptions
from pipelines.options.log import LogOptions
from pipelines.options.preview import PreviewOptions
from pipelines.options.rate import RateExportOptions, RateFilterOptions, RateImportOptions
from pipelines.options.regenerate import RegenerateOptions
from pipelines.options.train import TrainOptions

__all__ = [
    "REQUIRED",
    "GenerateOptions",
    "Group",
    "LogOptions",
    "PreviewOptions",
    "RateExportOptions",
    "RateFilterOptions",
    "RateImportOptions",
    "RegenerateOptions",
    "TrainOptions",
    "dataset_option",
    "option",
    "shown_default",
]
