"""OPTIMIZE-PV and OPTIMIZE-SCORE (Algorithm 1, first two lines): the search only.

Trains one PV-DBOW model per (dim, epochs) grid point on the corpus, scores
each by mgs-rank on the evaluation split, then scores every lambda by
wmgs-rank with the winning model, and writes ``<output>/search/report.json``
(and the winning model, which ``generate --pv_model`` can reuse)::

    python -m pipelines.optimize --input annotations/captions_val2017.json \\
        --output out/search --direct_num_workers 2 --direct_running_mode multi_processing

``python -m pipelines.generate --optimize`` runs the same search first and
generates with its winners.
"""

import sys

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.cli.commands import OPTIMIZE
from pipelines.options import GenerateOptions
from pipelines.runner import cli, local_or_given_runner, run_to_completion
from pipelines.store.manifest import read_inputs
from schemas.layout import SEARCH_DIRECTORY, SEARCH_REPORT_FILE
from transforms.corpus.read import expand_inputs
from transforms.files import read_json, write_json
from transforms.search.optimize import SearchHyperParameters, report_table


def build_search(pipeline: beam.Pipeline, options: GenerateOptions, inputs: list[str]) -> None:
    directory = FileSystems.join(options.output, SEARCH_DIRECTORY)
    prepared = pipeline | "PrepareCaptions" >> options.prepare_captions(inputs)
    report = prepared["captions"] | "SearchHyperParameters" >> SearchHyperParameters(
        grid=options.search_grid(),
        lambdas=options.lambdas(),
        pv=options.pv_config(),
        split=options.search_split,
        sample_images=options.search_sample_images,
        neighbours=options.neighbours,
        limit=options.surf_limit,
        models=directory,
    )
    _ = report | "WriteReport" >> beam.Map(
        lambda value, path: write_json(path, value), FileSystems.join(directory, SEARCH_REPORT_FILE)
    )


def run_search(options: GenerateOptions, beam_args: list[str]) -> dict:
    """Runs the search pipeline; returns its report (also written)."""
    options.validate()
    inputs = expand_inputs(options.input)
    options = options.with_language(read_inputs(inputs, options.image_list)[1])
    pipeline = local_or_given_runner(beam_args)
    build_search(pipeline, options, inputs)
    run_to_completion(pipeline)
    path = FileSystems.join(options.output, SEARCH_DIRECTORY, SEARCH_REPORT_FILE)
    return read_json(path)


def main(argv: list[str] | None = None) -> int:
    def search(options: GenerateOptions, beam_args: list[str]) -> str:
        table = report_table(run_search(options, beam_args))
        return f"{table}\nreport written to {FileSystems.join(options.output, SEARCH_DIRECTORY)}"

    return cli(argv, search, OPTIMIZE)


if __name__ == "__main__":
    sys.exit(main())
