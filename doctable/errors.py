"""The one error type of the operations commands: a problem the user can act on, printed as one line."""


class UserError(Exception):
    """An error the user can act on: the console script prints it as one line (exit 2), never a traceback."""
