"""A subscriber's ``requirements`` file as doctable reads it before anything installs it: plain requirement lines
(optionally pinned with ``--hash``: pip's hash-checking mode), and the extra indexes its build may search. The rules
only; tooling/wheelhouse.py installs what they allow. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# A plain requirement line: a name, optional extras, optional version specifiers, optional environment markers.
# No options (-e, -r, --index-url...), no URL (name @ url) and no path: the index and the platform are doctable's.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_SPECIFIER = r"(?:===|==|!=|<=|>=|~=|<|>)\s*[A-Za-z0-9.*+!_-]+"
REQUIREMENT_RE = re.compile(
    rf"^(?P<name>{_NAME})\s*(?:\[\s*{_NAME}(?:\s*,\s*{_NAME})*\s*\])?\s*"
    rf"(?:\(?\s*{_SPECIFIER}(?:\s*,\s*{_SPECIFIER})*\s*\)?)?\s*(?:;\s*[A-Za-z0-9_.<>=!~\"' ()-]+)?$"
)
ALLOWED_LINES = (
    "one package per line: a name with optional [extras], version specifiers and ; markers, optionally pinned with "
    "--hash options (no option such as -e, -r or --index-url, no URL and no path)"
)
# pip's hash-checking mode: a line's --hash options (the algorithms pip accepts), each with its digest's length.
HASH_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}
HASHES_RE = re.compile(r"^(?P<requirement>.*?)(?P<hashes>(?:\s+--hash[=\s]\s*\S+)+)$")
HASH_RE = re.compile(r"--hash[=\s]\s*(?P<value>\S+)")
HASH_OPTION = " --hash="
HASHES_ALLOWED = (
    "allowed: --hash on every line, each line pinned with == (pip's hash-checking mode, dependencies listed too), "
    "or on none"
)
EXTRA_INDEX_VARIABLE = "PIP_EXTRA_INDEX_URL"
EXTRA_INDEX_URL_RE = re.compile(
    r"^https://[^\s/@:]+(:\d+)?(/[^\s@]*)?$"
)  # no credentials (a secret in the file)


class WheelhouseError(ValueError):
    """Requirements that cannot be installed for the function's platform: one line saying what is allowed."""


def read_requirements(path: Path, shown: str) -> tuple[str, ...]:
    """The requirement lines of ``path`` (``shown`` as the user wrote it), comments and blank lines dropped,
    continued lines (``\\``) joined, ``--hash`` options written ``name==version --hash=algo:hex``; a missing file,
    a line that is not a plain requirement or hashes on some lines only is a WheelhouseError of one line."""
    if not path.is_file():
        raise WheelhouseError(
            f"requirements file {shown} not found (looked in {path.parent}); allowed: a requirements file "
            "relative to the settings file's folder"
        )
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise WheelhouseError(
            f"requirements file {shown} cannot be read ({exc.__class__.__name__})"
        ) from None
    logical: list[tuple[int, str]] = []
    continued = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        joined = continued and logical
        if joined:
            logical[-1] = (logical[-1][0], f"{logical[-1][1]} {line.removesuffix(chr(92)).strip()}".strip())
        elif line:
            logical.append((number, line.removesuffix(chr(92)).strip()))
        continued = line.endswith(chr(92))
    lines = [_requirement(shown, number, line) for number, line in logical if line]
    hashed = [number for (number, _), line in zip(logical, lines, strict=True) if HASH_OPTION in line]
    if hashed and len(hashed) < len(lines):
        bare = next(n for (n, _), line in zip(logical, lines, strict=True) if HASH_OPTION not in line)
        raise WheelhouseError(
            f"requirements file {shown} line {bare}: no --hash while line {hashed[0]} has one; {HASHES_ALLOWED}"
        )
    return tuple(lines)


def _requirement(shown: str, number: int, line: str) -> str:
    """One logical line as pip reads it: the requirement, then its ``--hash`` options (checked) if any."""
    at = f"requirements file {shown} line {number}"
    found = HASHES_RE.match(line)
    requirement = found["requirement"].strip() if found else line
    if not REQUIREMENT_RE.match(requirement):
        raise WheelhouseError(f"{at}: {line!r} is not a plain requirement; allowed: " + ALLOWED_LINES)
    if not found:
        return line
    hashes = []
    for value in HASH_RE.findall(found["hashes"]):
        algorithm, _, digest = value.partition(":")
        if HASH_LENGTHS.get(algorithm) != len(digest) or not re.fullmatch(r"[0-9a-fA-F]+", digest):
            raise WheelhouseError(f"{at}: --hash={value} is not a digest pip checks; allowed: --hash=sha256:<64 "
                                  "hex digits> (or sha384:<96>, sha512:<128>)")  # fmt: skip
        hashes.append(f"--hash={algorithm}:{digest.lower()}")
    if not re.search(r"(?<![=!<>~])===?\s*[A-Za-z0-9.+!_-]+\s*(;.*)?$", requirement):
        raise WheelhouseError(f"{at}: {requirement!r} is hashed without an exact version; {HASHES_ALLOWED}")
    return " ".join([requirement, *hashes])


def requires_hashes(requirements: tuple[str, ...]) -> bool:
    """Every line pinned with ``--hash`` (read_requirements allows all or none): pip's hash-checking mode."""
    return any(HASH_OPTION in line for line in requirements)


def extra_index_refusal(environ: Mapping[str, str], allowed: tuple[str, ...]) -> str | None:
    """Why pip may not run with ``environ``'s PIP_EXTRA_INDEX_URL: an index the subscriber's ``extra_index_urls``
    does not name (pip searches it beside the main index and takes the highest version of a name from either)."""
    named = {url.rstrip("/") for url in allowed}
    unnamed = [url for url in environ.get(EXTRA_INDEX_VARIABLE, "").split() if url.rstrip("/") not in named]
    if not unnamed:
        return None
    return (
        f"{EXTRA_INDEX_VARIABLE} names {', '.join(unnamed)}, an index pip would search beside the main one (a "
        "package of the same name there wins by its version: dependency confusion); allowed: unset it, or name "
        "each of its indexes in the subscriber's extra_index_urls"
    )


def check_extra_index_urls(problems: list[str], at: str, value: Any) -> tuple[str, ...]:
    """A subscriber's ``extra_index_urls``: the extra indexes its build may search (PIP_EXTRA_INDEX_URL's)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(u, str) and EXTRA_INDEX_URL_RE.match(u) for u in value
    ):
        problems.append(f"{at}: extra_index_urls = {value!r} is not allowed; allowed: an array of https:// index "
                        "URLs without credentials (pip reads those from its keyring or .netrc)")  # fmt: skip
        return ()
    return tuple(value)
