"""A subscriber's ``environment`` table: no secret written in the settings file, none resolved at deploy.

What a secret looks like is detect-secrets' knowledge (Yelp's maintained scanner: one plugin per issuer's format,
GitHub and Stripe keys, AWS access keys, private keys, passwords in URLs, JWTs, Slack and npm tokens..., and a
keyword plugin for values held by secret-sounding names such as ``DB_PASS``), not regexes kept here. It runs as a
program of this interpreter (``python -m detect_secrets scan``), as pip does for the wheelhouse: contract/ imports
the standard library only, and the one rule has one owner whichever command or synth reads the settings, with
nothing to register first. Its command line and JSON baseline are its public interface (its Python API keeps
global settings). A scanner that cannot run refuses the values (a check that cannot run denies). Standard library
only.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SCANNER = "detect_secrets"
# Entropy alone cannot tell a key from the digests, commit ids and key ids a setting holds as an ordinary value;
# every other plugin recognizes a format or a name, so these two stay off.
DISABLED_PLUGINS = ("Base64HighEntropyString", "HexHighEntropyString")
SCANNED_FILE = "environment.toml"  # a .toml name: the keyword plugin reads each `NAME = "value"` line as TOML
SCAN_TIMEOUT = 60
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_ENV = re.compile(r"^(AWS_|LAMBDA_|_HANDLER$|DOCTABLE_|POWERTOOLS_)")
# The project's naming rule, beside the scanner: a variable named like a secret holds a reference, whatever its
# value (an empty or short one included, which no detector reports).
SECRET_NAME_RE = re.compile(r"(SECRET|PASSWORD|PASSWD|TOKEN|API_?KEY|PRIVATE_?KEY|CREDENTIAL)", re.IGNORECASE)
REFERENCE_RE = re.compile(r"^(arn:aws[a-z-]*:(ssm|secretsmanager):|\{\{resolve:ssm:|ssm:/)")
# Dynamic references CloudFormation resolves at deploy into the function's configuration, in plain text.
RESOLVED_SECRET_RE = re.compile(r"\{\{resolve:(secretsmanager|ssm-secure):")
WAY_OUT = (
    "allowed: the secret's ARN (Secrets Manager, or an SSM SecureString parameter), read at run time with a grant "
    "of secretsmanager:GetSecretValue (or ssm:GetParameter) on it"
)


class ScanError(ValueError):
    """The scanner could not run: one line saying why."""


def secrets_in(variables: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """name -> the kinds of secret detect-secrets finds in its value (its plugins' secret types, such as "GitHub
    Token" or "Secret Keyword"), for each variable where it finds one; ScanError when it cannot run."""
    return dict(_scanned(tuple(sorted(variables.items()))))


@functools.cache
def _scanned(variables: tuple[tuple[str, str], ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not variables:
        return ()
    if importlib.util.find_spec(SCANNER) is None:
        raise ScanError(f"the secret scanner detect-secrets is not installed for {sys.executable}")
    disabled = [arg for plugin in DISABLED_PLUGINS for arg in ("--disable-plugin", plugin)]
    with tempfile.TemporaryDirectory(prefix="doctable-secrets-") as folder:
        # One variable a line, its value as a JSON string (a multi-line key stays on its line).
        lines = "".join(f"{name} = {json.dumps(value)}\n" for name, value in variables)
        (Path(folder) / SCANNED_FILE).write_text(lines, encoding="utf-8")
        command = [sys.executable, "-m", SCANNER, "scan", "--no-verify", *disabled, SCANNED_FILE]
        try:  # relative to its folder: the scanner leaves out a file outside its working directory
            done = subprocess.run(
                command, cwd=folder, capture_output=True, text=True, timeout=SCAN_TIMEOUT, stdin=subprocess.DEVNULL
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ScanError(f"detect-secrets did not run ({exc.__class__.__name__})") from None
    try:
        results = json.loads(done.stdout)["results"].get(SCANNED_FILE, [])
        found: dict[str, set[str]] = {}
        for result in results:
            found.setdefault(variables[int(result["line_number"]) - 1][0], set()).add(str(result["type"]))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ScanError(f"detect-secrets failed (exit {done.returncode}: {last})") from None
    return tuple((name, tuple(sorted(kinds))) for name, kinds in sorted(found.items()))


def check_environment(problems: list[str], at: str, value: Any, *, scan: bool) -> tuple[tuple[str, str], ...]:
    """A subscriber's ``environment`` table, each variable checked; ``scan``: the values come from the settings
    file (a stack's record was scanned when it was deployed)."""
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        problems.append(f"{at}: environment must be a table of strings")
        return ()
    found, literals = {}, {}
    for key, text in value.items():
        if not ENV_NAME_RE.match(key) or RESERVED_ENV.match(key):
            problems.append(f"{at}: environment variable {key!r} is not allowed; allowed: a name of letters, "
                            "digits and _ not starting with AWS_, LAMBDA_, DOCTABLE_ or POWERTOOLS_")  # fmt: skip
        elif RESOLVED_SECRET_RE.search(text):
            problems.append(f"{at}: environment variable {key} resolves a secret at deploy ({text}): "
                            "CloudFormation writes it in plain text into the function's configuration, readable "
                            f"with lambda:GetFunctionConfiguration; {WAY_OUT}")  # fmt: skip
        elif REFERENCE_RE.match(text):
            found[key] = text
        elif SECRET_NAME_RE.search(key):
            problems.append(f"{at}: environment variable {key} looks like a secret written in the file (named "
                            f"like one, holding no reference); {WAY_OUT}")  # fmt: skip
        else:
            found[key] = literals[key] = text
    try:
        detected = secrets_in(literals) if scan else {}
    except ScanError as exc:
        problems.append(f"{at}: environment values cannot be checked for secrets: {exc}; allowed: detect-secrets "
                        "installed (doctable[cdk]; `make setup` installs it)")  # fmt: skip
        return ()
    for key, kinds in detected.items():
        problems.append(f"{at}: environment variable {key} looks like a secret written in the file (detect-secrets: "
                        f"{', '.join(kinds)}); {WAY_OUT}")  # fmt: skip
    return tuple(sorted((k, v) for k, v in found.items() if k not in detected))
