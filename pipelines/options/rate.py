"""dmc-rate's options: one dataclass per subcommand (export, import, filter).

Each command's options have a module of their own; what they all share is in schemas/options.py.
"""

from dataclasses import dataclass

from pipelines.options.fields import dataset_option
from schemas.options import REQUIRED, Group, option
from transforms.errors import InputError


@dataclass(frozen=True)
class RateExportOptions:
    dataset: str = dataset_option()
    output: str = option(
        REQUIRED,
        "the job's folder: app/ (the rating app: open app/index.html, offline too), crowd.csv "
        "(bulk upload for a crowd platform) and job.json (the answer key: keep it, do not "
        "hand it out)",
        group=Group.IO,
    )
    images: str = option(
        "",
        "a folder of the images' files, by image_file: those asked are copied into app/images/; "
        "an image not there shows its image_url, else a placeholder",
        group=Group.IO,
    )
    image_base_url: str = option(
        "",
        "crowd.csv's image address is this prefix + image_file (where the platform can fetch the "
        "images); without it, the instance's image_url",
        group=Group.IO,
        empty_means="image_url",
    )
    split: str = option(
        "dev", "the split the questions come from", ("dev", "test"), group=Group.RATING
    )
    instances: int = option(
        1000,
        "instances asked (paper: 1,000 from dev); fewer if the split has fewer",
        group=Group.RATING,
    )
    raters: int = option(
        3, "raters who answer each instance (paper: 3; Visual Madlibs: 5)", group=Group.RATING
    )
    training: int = option(
        5, "training items from train, shown first with the target marked", group=Group.RATING
    )
    gold: int = option(
        10,
        "gold items from train mixed among the questions, to check each rater's attention",
        group=Group.RATING,
    )
    seed: int = option(
        0,
        "seed of the sample and of each rater's question and option order",
        group=Group.RATING,
    )

    def validate(self) -> None:
        problems = [
            f"--{name} {getattr(self, name)}: must be at least {least}"
            for name, least in (("instances", 1), ("raters", 1), ("training", 0), ("gold", 0))
            if getattr(self, name) < least
        ]
        if problems:
            raise InputError("; ".join(problems))


@dataclass(frozen=True)
class RateImportOptions:
    job: str = option(REQUIRED, "the folder dmc-rate export wrote (its job.json)", group=Group.IO)
    answers: str = option(
        REQUIRED,
        "comma-separated answers files or globs, in any mix: the app's JSON or CSV downloads, "
        "a crowd platform's results CSV (WorkerId, Input.example_id, Answer.option, "
        "WorkTimeInSeconds)",
        group=Group.IO,
    )
    output: str = option(
        "",
        "where to write the report and the per-instance results",
        group=Group.IO,
        empty_means="DATASET_VERSION/ratings/<job>",
    )
    min_seconds: float = option(
        2.0, "answers faster than this many seconds are flagged as too fast", group=Group.CHECKS
    )
    drop_too_fast: bool = option(
        False, "leave the too-fast answers out of the table (they are counted)", group=Group.CHECKS
    )
    gold_pass: float = option(
        0.8,
        "raters right on fewer than this share of the gold items are reported",
        group=Group.CHECKS,
    )
    drop_failed_raters: bool = option(
        False,
        "leave out every answer of the raters the gold items report (they are counted)",
        group=Group.CHECKS,
    )

    def validate(self) -> None:
        if self.min_seconds < 0:
            raise InputError(f"--min_seconds {self.min_seconds}: must be at least 0")
        if not 0 <= self.gold_pass <= 1:
            raise InputError(f"--gold_pass {self.gold_pass}: must be in [0, 1]")


@dataclass(frozen=True)
class RateFilterOptions:
    ratings: str = option(
        REQUIRED, "the folder dmc-rate import wrote (its report.json)", group=Group.IO
    )
    output: str = option(
        REQUIRED,
        "output root of the subset, as generate's: OUTPUT/versions/<version>/, latest.txt",
        group=Group.IO,
    )
    min_right: int = option(
        2,
        "keep the rated instances at least this many raters got right (2 of 3: the paper's "
        "3-human; Visual Madlibs: 3 of 5; 1 drops only those no rater got right)",
        group=Group.FILTER,
    )

    def validate(self) -> None:
        if self.min_right < 1:
            raise InputError(f"--min_right {self.min_right}: must be at least 1")
