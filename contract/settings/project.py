"""The project's identity: the name that tells one repository's stacks from another's in a shared account.

Every stack carries it as the ``Project`` tag (beside ``ManagedBy`` and ``Source``, which are the same for every
project doctable deploys), and ``doctable preview list``, ``destroy`` and ``gc`` act only on previews tagged with
this project's name. It is ``[project] name`` in the settings file; by default the repository's name: the last
path segment of the ``origin`` remote's URL (what every clone and a CI checkout agree on), else the name of the
folder holding ``.git``. The repository is the one holding the settings file, else the one holding the working
directory (a settings file written to a temporary folder by a script or a test run from the checkout), else there
is none and the settings file's folder names the project. Read from git's files, never by running git, so synth
stays a pure function of the checkout. Standard library only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from contract.knobs import ConfigError

PROJECT_TABLE = "project"
NAME_KEY = "name"
TAG_PROJECT = "Project"
# A GitHub repository's name: letters, digits, ., _ and -, at most 100 characters; an AWS tag value takes each.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
NAME_ALLOWED = "letters, digits, ., _ and -, starting with a letter or digit, at most 100 characters"
_ORIGIN = re.compile(r'^\s*\[remote\s+"origin"\]\s*$')
_SECTION = re.compile(r"^\s*\[")
_URL = re.compile(r"^\s*url\s*=\s*(?P<url>\S+)\s*$")


def parse_project_table(data: Any, where: str, problems: list[str]) -> str:
    """``[project]``: its ``name`` (empty when it declares none: the default applies); each problem one line."""
    if not isinstance(data, dict) or set(data) - {NAME_KEY}:
        problems.append(f'{where}: expected a table holding name = "<project>" only')
        return ""
    name = data.get(NAME_KEY, "")
    if not isinstance(name, str) or not NAME_RE.match(name):
        problems.append(f"{where}: name = {name!r} is not a project name; allowed: {NAME_ALLOWED}")
        return ""
    return name


def _git_config(dotgit: Path) -> Path:
    """The config file of the repository whose ``.git`` is ``dotgit`` (a worktree's names its common folder)."""
    if dotgit.is_file():  # a worktree or a submodule: "gitdir: <path>"
        text = dotgit.read_text().strip()
        gitdir = (dotgit.parent / text.removeprefix("gitdir:").strip()).resolve()
        common = gitdir / "commondir"
        if common.is_file():
            gitdir = (gitdir / common.read_text().strip()).resolve()
        return gitdir / "config"
    return dotgit / "config"


def origin_url(dotgit: Path) -> str | None:
    """The ``origin`` remote's URL in a repository's config; None without one."""
    try:
        lines = _git_config(dotgit).read_text().splitlines()
    except OSError:
        return None
    inside = False
    for line in lines:
        if _SECTION.match(line):
            inside = bool(_ORIGIN.match(line))
        elif inside and (match := _URL.match(line)):
            return match["url"]
    return None


def repository_name(url: str) -> str:
    """A remote URL's repository: its last path segment without ``.git`` (https://, git@host:owner/name, a path)."""
    return re.split(r"[/:]", url.rstrip("/"))[-1].removesuffix(".git")


def default_name(folder: Path) -> str:
    """The project's name when ``[project] name`` gives none, for a settings file in ``folder``; ConfigError when
    nothing there gives a name the rule allows."""
    folder = folder.resolve()
    name = folder.name
    for start in (folder, Path.cwd().resolve()):
        dotgit = next((p / ".git" for p in (start, *start.parents) if (p / ".git").exists()), None)
        if dotgit is not None:
            url = origin_url(dotgit)
            name = repository_name(url) if url else dotgit.parent.name
            break
    if not NAME_RE.match(name):
        raise ConfigError(
            [
                f"the project's name {name!r} (the default: the origin remote's repository, else the folder) is "
                f'not one; allowed: [project] name = "<project>" in the settings file ({NAME_ALLOWED})'
            ]
        )
    return name
