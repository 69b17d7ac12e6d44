"""The one exception type for bad user input; the CLI prints it as a one-line message."""


class HlotuneError(Exception):
    """Bad input: a missing or corrupt file, a wrong shape, an unknown name, ...

    The message names the problem (and the file or key) in one line, without a traceback.
    """
