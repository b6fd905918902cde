"""The Python API: ``generate``, ``load`` and ``evaluate`` for a notebook or a script.

Thin over the same code as the commands: keywords are turned into the command's own flags
and parsed by its parser (pipelines/cli/parser.py), so names, defaults, types, choices,
earlier names and every check are the CLI's, and nothing here knows an option by name
but those the signatures require; ``pipelines.generate.run`` and ``pipelines.evaluate.run``
then do the work. Users import it as ``dmc_datasets`` (the top-level module of that name
re-exports it)::

    import dmc_datasets

    version = dmc_datasets.generate(input="captions.json", output="out/mine", n_dev=500,
                                    n_test=500, beam_args=["--direct_num_workers", "2"])
    dev = dmc_datasets.load(version.path, "dev")

Errors are exceptions, not exit codes: an InputError (a ValueError) with the one line the
command would print, NotPublished when ``audit_gate="fail"`` held a version back.
"""

import dataclasses
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipelines import evaluate as evaluate_command
from pipelines import generate as generate_command
from pipelines.cli import Command
from pipelines.cli.commands import EVALUATE, GENERATE
from pipelines.cli.parser import beam_parser, closest, known_flags, parse_flags
from pipelines.options import LogOptions
from pipelines.runner import logging_to
from pipelines.store.versions import completed_dataset
from schemas.instance import ARROW_SCHEMA
from schemas.layout import PARQUET, shard_pattern
from transforms.corpus.split import SPLITS
from transforms.errors import InputError, input_error_message
from transforms.files import read_parquet_files


@dataclass(frozen=True)
class GeneratedVersion:
    """What :func:`generate` wrote, or found already written (``up_to_date``).

    ``path`` is ``OUTPUT/versions/<name>``, which :func:`load` and :func:`evaluate` take;
    ``statistics`` is its ``dataset/statistics.json`` and ``summary`` what ``dmc-generate``
    prints (Table 1 and the text-only audit). Both are left out of the repr, so a notebook
    cell ending in ``generate(...)`` shows a line, not the statistics.
    """

    name: str
    path: str
    up_to_date: bool
    statistics: dict = field(repr=False)
    summary: str = field(repr=False)


def generate(
    *,
    input: str | os.PathLike | Sequence[str],
    output: str | os.PathLike,
    beam_args: Sequence[str] = (),
    **options: Any,
) -> GeneratedVersion:
    """Generates a version under ``output`` as ``dmc-generate`` does; returns it.

    ``options`` are dmc-generate's flags as keywords (``n_dev=500``, ``decoys="mcic"``,
    ``force=True``), checked as the command checks them; those not given take its
    defaults. ``beam_args`` are Beam pipeline options as the command line gives them
    (``["--direct_num_workers", "2"]``, ``["--runner", "DataflowRunner", ...]``). A run
    with the inputs and options of a completed version does nothing and returns that
    version (``up_to_date``).
    """
    (run_options, log), beam_args = parsed(
        GENERATE, {"input": input, "output": output, **options}, beam_args
    )
    with command_errors(), logging_to(log):
        generated = generate_command.run(run_options, beam_args)
    return GeneratedVersion(
        name=generated.version.name,
        path=generated.version.directory,
        up_to_date=generated.up_to_date,
        statistics=generated.statistics,
        summary=generate_command.summary(generated, run_options.output),
    )


def evaluate(*, dataset: str | os.PathLike, beam_args: Sequence[str] = (), **options: Any) -> dict:
    """Scores a version zero-shot with a contrastive model as ``dmc-evaluate`` does.

    ``dataset`` is a version or generate's output (its latest); ``options`` are
    dmc-evaluate's flags as keywords (``images``, ``output`` and ``model`` or
    ``checkpoint`` among them) and ``beam_args`` Beam's. Returns the metrics the
    command writes to ``OUTPUT/metrics.json``, beside scores.parquet, table.txt and
    accuracy.png.
    """
    (run_options, log), beam_args = parsed(EVALUATE, {"dataset": dataset, **options}, beam_args)
    with command_errors(), logging_to(log):
        return evaluate_command.run(run_options, beam_args)


# pandas.DataFrame: pandas is not among the package's requirements (Dataflow's workers never
# need it), so it is not imported here; pyarrow's to_pandas imports it when it is installed.
def load(path: str | os.PathLike, split: str, *, columns: Sequence[str] | None = None) -> Any:
    """One split's instances (``train``, ``dev`` or ``test``) as a pandas DataFrame.

    ``path`` is what every reader of a version takes: a version folder, generate's output
    (its latest version) or a folder inside either. The version is verified first (its
    marker, every file against its manifest), so a partial or altered one is refused,
    named, never half read. ``columns`` reads only those fields of the instance schema.
    """
    with command_errors():
        if split not in SPLITS:
            raise InputError(f"load(): no split {split!r}{closest(split, SPLITS)}")
        names = list(columns) if columns is not None else None
        for name in names or ():
            if name not in ARROW_SCHEMA.names:
                raise InputError(f"load(): no column {name!r}{closest(name, ARROW_SCHEMA.names)}")
        path = os.fspath(path)
        if not path.strip():
            raise InputError("load(): path is empty: give a version folder or generate's output")
        version = completed_dataset(path)
        tables = list(read_parquet_files(shard_pattern(version, PARQUET, split), names))
        schema = ARROW_SCHEMA if names is None else pa.schema(map(ARROW_SCHEMA.field, names))
        table = pa.concat_tables(tables) if tables else schema.empty_table()
        try:
            return table.to_pandas()
        except ImportError as error:
            raise InputError("load() returns a pandas DataFrame: pip install pandas") from error


def parsed(
    command: Command, values: dict[str, Any], beam_args: Sequence[str] = ()
) -> tuple[tuple[Any, LogOptions], list[str]]:
    """((the command's options, its logging options), Beam's) from keywords, parsed by the
    command's own parser. An unknown keyword is refused naming the closest option;
    a Beam pipeline option given as a keyword, or one of ours in ``beam_args``, says where
    it goes.
    """
    prog, function = command.prog, f"{command.prog.removeprefix('dmc-')}()"
    if isinstance(beam_args, str):
        raise InputError(f"{function}: beam_args is a list of flags, e.g. ['--runner', 'X']")
    beam_args = [as_text(arg) for arg in beam_args]
    fields = keyword_fields(*command.options)
    for name in values:
        if name not in fields:
            raise InputError(unknown_keyword(function, prog, name, fields))
    for arg in beam_args:
        name = arg.split("=", 1)[0].removeprefix("--")
        if arg.startswith("--") and name in fields:
            raise InputError(
                f"{function}: beam_args holds --{name}, an option of {function}: give it as "
                f"{name}=..."
            )
    argv = [flag for name, value in values.items() for flag in as_flags(name, value, fields)]
    with command_errors():
        (options, log), beam_args = parse_flags([*argv, *beam_args], *command.options)
        log.validate()
    return (options, log), beam_args


def keyword_fields(*options_types: type) -> dict[str, dataclasses.Field]:
    """Every keyword the options types take: each option's name and its earlier names
    (``renamed_from``, still taken with a warning as the command takes them)."""
    return {
        name: option
        for options_type in options_types
        for option in dataclasses.fields(options_type)
        for name in (option.name, *option.metadata.get("renamed_from", ()))
    }


def unknown_keyword(
    function: str, prog: str, name: str, fields: dict[str, dataclasses.Field]
) -> str:
    """The line refusing ``name``: a Beam option goes in beam_args, a typo gets its closest.

    Suggestions are today's names only, as the command's parser suggests its flags.
    """
    if f"--{name}" in known_flags(beam_parser()):
        return (
            f"{function}: {name} is a Beam pipeline option, not one of {function}'s: pass it "
            f"as beam_args=['--{name}', ...]"
        )
    current = sorted({option.name for option in fields.values()})
    listed = f" ({prog} --help lists the options)"
    return f"{function}: unknown option {name}{closest(name, current, listed)}"


def as_flags(name: str, value: Any, fields: dict[str, dataclasses.Field]) -> list[str]:
    """A keyword as the command line would give it: ``--name=value``; a bool option is its
    bare flag when True and nothing when False; None is not given (the default); a list
    is the comma-separated value the command's list flags (``--input``) take.

    >>> fields = {f.name: f for f in dataclasses.fields(LogOptions)}
    >>> as_flags("quiet", True, fields), as_flags("progress_interval", 5, fields)
    (['--quiet'], ['--progress_interval=5'])
    """
    if value is None:
        return []
    if fields[name].type is bool:
        if not isinstance(value, bool):
            raise InputError(f"{name}={value!r}: give True or False")
        return [f"--{name}"] if value else []
    if isinstance(value, list | tuple):
        return [f"--{name}={','.join(map(as_text, value))}"]
    return [f"--{name}={as_text(value)}"]


def as_text(value: Any) -> str:
    """A value as typed on the command line; a path as its string."""
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


@contextmanager
def command_errors() -> Iterator[None]:
    """An input error reaches the caller as the InputError the command would print as one
    line: a worker process's (which Beam re-raises inside a RuntimeError) included, and
    without the runner's `` [while running 'Stage']``."""
    try:
        yield
    except Exception as error:
        message = input_error_message(error)
        if message is None or (isinstance(error, InputError) and str(error) == message):
            raise
        raise InputError(message) from error
