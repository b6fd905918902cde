"""Every dmc-* command: what its --help says, the options it reads and the module that runs it.

setup.py's console scripts point here. A command's --help is answered from its options alone
(pipelines/options/), before the module that runs it is imported, so a first look at a
command waits for nothing the command itself needs (benchmarks/help.py times it).
"""

import importlib
import sys
from collections.abc import Callable

from pipelines.cli.parser import Command, flags_parser, wrapped
from pipelines.options import (
    EvaluateOptions,
    FeaturesOptions,
    GenerateOptions,
    LogOptions,
    MakeCorpusOptions,
    PreviewOptions,
    PublishOptions,
    RateExportOptions,
    RateFilterOptions,
    RateImportOptions,
    RegenerateOptions,
    TrainOptions,
)

EVALUATE = Command(
    prog="dmc-evaluate",
    module="pipelines.evaluate",
    options=(EvaluateOptions, LogOptions),
    description=(
        "Scores a generated dataset zero-shot with a contrastive vision-language model "
        "(open_clip or transformers: CLIP, SigLIP, ...): each option's cosine with its image, "
        "the argmax is the answer. Prints the accuracy on dev and test beside the version's "
        "text-only audit rows, the image margin and, for closed sets, the set score; "
        "scores.parquet, metrics.json, table.txt and accuracy.png go to --output."
    ),
    example="dmc-evaluate --dataset out --images val2014 --model ViT-B-32 --pretrained openai "
    "--output eval",
    manual="docs/evaluate.md",
)

FEATURES = Command(
    prog="dmc-features",
    module="pipelines.features",
    options=(FeaturesOptions, LogOptions),
    description=(
        "Encodes image files (local or gs://) with a torchvision backbone, an open_clip image "
        "tower or a Hugging Face vision model (weights by name or from a checkpoint) and "
        "writes a folder of Parquet shards of (image, features) that dmc-train "
        "--image_features reads. "
        "Unreadable images are skipped, counted and listed."
    ),
    example="dmc-features --images coco/train2014 --pretrained IMAGENET1K_V2 --output f.parquet",
    manual="docs/features.md",
)

GENERATE = Command(
    prog="dmc-generate",
    module="pipelines.generate",
    options=(GenerateOptions, LogOptions),
    description=(
        "Generates a multiple-choice image-caption dataset from captioned images (COCO "
        "captions_*.json, Flickr token files): for every caption, an instance of its image, "
        "that caption and four decoys, captions of other images close to it in meaning but "
        "not in wording. With the default decoy strategy (closed sets) every text-only model "
        "scores exactly chance, and every run audits itself with text-only models. Each run "
        "writes a new version under --output and points OUTPUT/latest at it; a run with the "
        "inputs and options of a completed version does nothing."
    ),
    example="dmc-generate --input 'annotations/captions_*2014.json' --output out/mcic-coco",
    manual="docs/generate.md and docs/strategies/",
)

MAKE_CORPUS = Command(
    prog="dmc-make-corpus",
    module="pipelines.make_corpus",
    options=(MakeCorpusOptions,),
    description=(
        "Writes the project's synthetic corpus in COCO format: one latent scene per image "
        "(a subject, an activity, a place, a time of day) and five captions describing it "
        "with different templates, synonyms and omitted details (--captions_per_image keeps "
        "the first few). Image i depends only on (seed, i), so smaller corpora are prefixes "
        "of larger ones. With --instances, also "
        "the COCO instances file of the scenes' objects (one unit box per object); with "
        "--images_dir, a drawn picture of each scene under its file_name."
    ),
    example="dmc-make-corpus --num_images 4000 --output out/corpus/captions_synthetic.json",
    manual="docs/synthetic.md",
    beam=False,
)

OPTIMIZE = Command(
    prog="dmc-optimize",
    module="pipelines.optimize",
    options=(GenerateOptions, LogOptions),
    description=(
        "Searches the paragraph-vector settings (OPTIMIZE-PV: dimensions x epochs, by "
        "mgs-rank) and then lambda of the decoy score (OPTIMIZE-SCORE, by wmgs-rank) on one "
        "split of the corpus, prints the report and writes it, with the winning model, to "
        "OUTPUT/search/. It takes dmc-generate's options; the search group sets the grids. "
        "dmc-generate --optimize runs the same search and then generates with the winners."
    ),
    example="dmc-optimize --input annotations/captions_val2017.json --output out/search",
    manual="docs/optimize.md and docs/generate.md",
)

PREVIEW = Command(
    prog="dmc-preview",
    module="pipelines.preview",
    options=(PreviewOptions, LogOptions),
    description=(
        "Writes an HTML preview of a dataset dmc-generate wrote: a seeded sample of instances "
        "per split, each with its image, its five options with the target marked, and where "
        "each decoy comes from (its image, caption, simPV, simSURF and Score). The folder "
        "--output is self-contained: open its index.html in a browser, offline too."
    ),
    example="dmc-preview --dataset out/synthetic --output out/preview --images val2017/",
    manual="docs/preview.md",
    beam=False,
)

PUBLISH = Command(
    prog="dmc-publish",
    module="pipelines.publish",
    options=(PublishOptions, LogOptions),
    description=(
        "Uploads a completed, verified version's dataset folder (instances, card, plots, "
        "statistics; never what built it) to a Hugging Face Hub dataset repo, in one commit; "
        "the folder's README.md becomes the repo's dataset card, and the repo's files of an "
        "earlier version are deleted in the same commit. The token is huggingface_hub's "
        "(HF_TOKEN or hf auth login). Exit code 2: the version is not complete, fails "
        "verification or was held back by its audit gate, bad options, or the hub could not "
        "be reached, did not answer within --timeout, refused or failed."
    ),
    example="dmc-publish --dataset out/mcic-coco --repo_id USER/mcic-coco --dry_run",
    manual="docs/publish.md",
    beam=False,
)

REGENERATE = Command(
    prog="dmc-regenerate",
    module="pipelines.regenerate",
    options=(RegenerateOptions, GenerateOptions, LogOptions),
    description=(
        "For schedulers: generates a dataset only when its inputs or options differ from "
        "those of the version OUTPUT/latest names, with --train also evaluates a new version, "
        "and prints exactly one line for the log. It takes dmc-generate's options. Exit code "
        "0: generated or up to date; 2: bad input or options; 3: the version was written but "
        "not published, its text-only audit off chance (--audit_gate fail); 1: the run failed "
        "(traceback on stderr)."
    ),
    example=(
        "dmc-regenerate --input 'gs://BUCKET/coco/captions_*.json' --output gs://BUCKET/mcic-coco"
    ),
    manual="docs/regeneration.md",
)

TRAIN = Command(
    prog="dmc-train",
    module="pipelines.train",
    options=(TrainOptions, LogOptions),
    description=(
        "Trains and evaluates the paper's models (Baseline-I2C, -C2I, -LinM, the FFNN, a "
        "text-only FFNN, a bigram language model and Vec2seq+FFNN) on a generated dataset, "
        "and prints their accuracy on dev and test against chance 1/k (k options) in "
        "the shape of the paper's Table 3, with Vec2seq+FFNN's captioning scores (CIDEr-D, "
        "ROUGE-L) as in Table 5; metrics.json, table.txt, captions and the fitted models go to "
        "--output. Without --image_features an image is represented by concept features "
        "read off its other captions: an oracle, not vision."
    ),
    example="dmc-train --dataset out/mcic-coco --output out/train-coco",
    manual="docs/trainer.md",
)

EXPORT = Command(
    prog="dmc-rate export",
    module="pipelines.rate",
    options=(RateExportOptions, LogOptions),
    description=(
        "Writes a human rating job for a dataset dmc-generate wrote: a seeded sample of "
        "instances of a split (the paper: 1,000 from dev, three raters each), training items "
        "from train with the target marked and gold items, as a rating app (open "
        "OUTPUT/app/index.html in a browser, offline too, one folder per rater or shared) and "
        "as a crowd platform's bulk-upload CSV (OUTPUT/crowd.csv), with the answer key "
        "OUTPUT/job.json."
    ),
    example="dmc-rate export --dataset out/coco --output out/rate-job --images val2017/",
    manual="docs/rating.md",
    beam=False,
)
IMPORT = Command(
    prog="dmc-rate import",
    module="pipelines.rate",
    options=(RateImportOptions, LogOptions),
    description=(
        "Reads the answers of a rating job (the app's JSON or CSV downloads, a crowd "
        "platform's results CSV, in any mix), checks them (unknown instances, duplicates, "
        "too-fast answers, gold items) and prints the paper's Table 2: 1-human and n-human "
        "accuracy and how many raters got each instance right, with binomial standard "
        "deviations. The report and per-instance results go next to the dataset version."
    ),
    example="dmc-rate import --job out/rate-job --answers 'answers/*.json'",
    manual="docs/rating.md",
    beam=False,
)
FILTER = Command(
    prog="dmc-rate filter",
    module="pipelines.rate",
    options=(RateFilterOptions, LogOptions),
    description=(
        "Writes a human-filtered subset as a new completed version: the rated instances at "
        "least --min_right raters got right, the other splits as they were; its manifest "
        "names the ratings, and dmc-train reads it as any version."
    ),
    example="dmc-rate filter --ratings out/coco/latest/ratings/JOB --output out/coco-human",
    manual="docs/rating.md",
    beam=False,
)

RATE = {"export": EXPORT, "import": IMPORT, "filter": FILTER}
RATE_USAGE = "usage: dmc-rate {export,import,filter} [option ...]"
COMMANDS = (
    EVALUATE,
    FEATURES,
    GENERATE,
    MAKE_CORPUS,
    OPTIMIZE,
    PREVIEW,
    PUBLISH,
    REGENERATE,
    TRAIN,
    *RATE.values(),
)


def rate_overview() -> str:
    """``dmc-rate --help``: the subcommands, each with what it does."""
    commands = "\n\n".join(
        f"{name}: {command.description}\n  {command.example}" for name, command in RATE.items()
    )
    return wrapped(
        f"{RATE_USAGE}\n\n{commands}\n\ndmc-rate COMMAND --help lists a command's options."
    )


def asks_for_help(argv: list[str]) -> bool:
    return "-h" in argv or "--help" in argv


def show_help(command: Command) -> None:
    """Prints ``command``'s --help and exits with 0, as argparse's --help does."""
    flags_parser(command, *command.options).parse_args(["--help"])


def console_script(command: Command) -> Callable[[list[str] | None], int]:
    """``command``'s entry point: its help from the options, anything else to its module."""

    def main(argv: list[str] | None = None) -> int:
        argv = sys.argv[1:] if argv is None else argv
        if asks_for_help(argv):
            show_help(command)
        return importlib.import_module(command.module).main(argv)

    return main


def rate(argv: list[str] | None = None) -> int:
    """dmc-rate's entry point: its subcommands' help from their options, the rest to
    pipelines.rate."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"]):
        print(rate_overview())
        sys.exit(0)
    if argv[:1] and argv[0] in RATE and asks_for_help(argv[1:]):
        show_help(RATE[argv[0]])
    return importlib.import_module(EXPORT.module).main(argv)


evaluate = console_script(EVALUATE)
features = console_script(FEATURES)
generate = console_script(GENERATE)
make_corpus = console_script(MAKE_CORPUS)
optimize = console_script(OPTIMIZE)
preview = console_script(PREVIEW)
publish = console_script(PUBLISH)
regenerate = console_script(REGENERATE)
train = console_script(TRAIN)
