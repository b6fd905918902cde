"""The one exception type for problems the user can fix."""


class InputError(ValueError):
    """Bad input or options. The message names the file/record and what to do.

    Pipelines print it as one line instead of a stack trace.
    """
