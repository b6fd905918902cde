"""The exception types a user acts on: bad input, and a version its audit gate held back."""


class NotPublished(Exception):
    """A version written complete but not made the latest: ``--audit_gate fail`` held it
    back because its text-only audit is off chance. The message names the version and the
    audit's row furthest from chance; commands exit with ``EXIT_CODE``."""

    EXIT_CODE = 3


class InputError(ValueError):
    """Bad input or options. The message names the file/record and what to do.

    Pipelines print it as one line instead of a stack trace.
    """


def install_command(extras: str) -> str:
    """What adds an extra: the package is installed from its checkout, editable, as
    run_local.sh installs it (no index carries it, and a plain install would replace the
    editable one with a frozen copy).

    >>> install_command("ja")
    "pip install -e '.[ja]' (in the project's folder)"
    """
    return f"pip install -e '.[{extras}]' (in the project's folder)"


_MARKER = f"{InputError.__module__}.{InputError.__qualname__}: "


def first_line(error: BaseException | str) -> str:
    r"""A message as one line, for a message of ours that quotes a library's: many have
    several lines; an exception with none is named by its type.

    >>> first_line(OSError("no config.json\nin folder x"))
    'no config.json'
    >>> first_line(KeyError())
    'KeyError'
    """
    return (str(error).strip().splitlines() or [""])[0] or type(error).__name__


def input_error_message(error: BaseException) -> str | None:
    """The InputError's message inside ``error``, or None if it holds none.

    In-process runners re-raise the InputError itself (with " [while running
    'Stage']" appended); a runner with worker processes re-raises a
    RuntimeError whose text carries the worker's traceback, ending in
    "transforms.errors.InputError: <message>". Both give the same message.
    """
    if not isinstance(error, InputError) and _MARKER not in str(error):
        return None
    message = str(error).rsplit(_MARKER, 1)[-1].strip().splitlines()[0]
    return message.split(" [while running")[0]
