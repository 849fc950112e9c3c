"""IAM enforcement for the local AWS: who calls (principals), what a call needs (requests), whether policies
allow it (policy), and the WSGI middleware that refuses what they do not allow (middleware).

Switched by ``DOCTABLE_LOCAL_IAM``: ``on``, the default, or ``off`` (``doctable local up --no-iam``, the lenient
mode).
"""

from __future__ import annotations

import os

ENV = "DOCTABLE_LOCAL_IAM"
OFF_VALUES = ("off", "0", "false", "no")


def enforced() -> bool:
    """Whether this process enforces IAM (read from the environment the server was started with)."""
    return os.environ.get(ENV, "on").strip().lower() not in OFF_VALUES
