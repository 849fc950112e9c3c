"""The local AWS's own errors: each is printed as one line by the CLI, never as a traceback."""

from __future__ import annotations


class LocalError(Exception):
    """Something the user can act on (a port taken, a server that did not start, a failed CDK command)."""
