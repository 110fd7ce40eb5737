"""Repositories of a benchmark's corpus: local git checkouts, or URLs cloned shallowly.

:func:`prepare_repo` finds a local folder (or clones a URL with ``git clone --depth 1`` into the
build folder, reusing an earlier clone) and reads its commit (``git rev-parse HEAD``), origin and
whether the working tree has uncommitted changes. Walking and chunking the tree is
:mod:`.collect`'s job.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nuggetbench.errors import InputError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RepoSource:
    """A repository named in the plan: a local folder (``path``) or a clone URL (``url``, ``ref``)."""

    name: str
    path: str | None = None
    url: str | None = None
    ref: str | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-]*", self.name or ""):
            raise InputError(
                f"repository name {self.name!r}: use letters, digits, '.', '_' or '-' "
                "(it starts every chunk id)"
            )
        if bool(self.path) == bool(self.url):
            raise InputError(
                f"repository {self.name!r}: give exactly one of path (a local folder) or url"
            )


@dataclass(frozen=True)
class PreparedRepo:
    """A repository ready to walk: its root folder, commit and where its files can be seen."""

    name: str
    root: Path
    commit: str | None
    origin: str | None
    dirty: bool = False

    def url_for(self, rel: str) -> str:
        web = _web_base(self.origin)
        if web and self.commit:
            return f"{web}/blob/{self.commit}/{rel}"
        return (self.root / rel).as_uri()

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "root": str(self.root),
            "commit": self.commit,
            "origin": self.origin,
            "dirty": self.dirty,
        }


def _web_base(origin: str | None) -> str | None:
    if not origin:
        return None
    m = re.match(
        r"^(?:https?://|git@)(github\.com|gitlab\.com|bitbucket\.org)[/:]([^/]+)/(.+?)(?:\.git)?/?$",
        origin,
    )
    return f"https://{m.group(1)}/{m.group(2)}/{m.group(3)}" if m else None


def _git(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    if shutil.which("git") is None:
        raise InputError("git is not on the PATH: install git to collect repositories")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=False
    )


def prepare_repo(source: RepoSource, workdir: Path) -> PreparedRepo:
    """Find (or shallowly clone) a repository and read its commit.

    Args:
        source: the plan's entry.
        workdir: where clones go (``<workdir>/repos/<name>``); an existing clone is reused.

    Raises:
        InputError: the folder does not exist or is not a folder, ``git`` is missing, or the clone
            fails (git's message is quoted).
    """
    if source.path:
        root = Path(source.path).expanduser()
        if not root.exists():
            raise InputError(
                f"repository {source.name!r}: path {root} does not exist; fix [[repos]] path "
                "in the plan (relative paths are relative to the plan file)"
            )
        if not root.is_dir():
            raise InputError(f"repository {source.name!r}: {root} is not a folder")
        root = root.resolve()
    else:
        root = (workdir / "repos" / source.name).resolve()
        if not (root / ".git").exists():
            root.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{source.name}.", dir=root.parent))
            args = ["clone", "--depth", "1", "--quiet"]
            if source.ref:
                args += ["--branch", source.ref]
            done = _git([*args, "--", str(source.url), str(tmp / "r")])
            if done.returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise InputError(
                    f"repository {source.name!r}: git clone of {source.url} failed: "
                    f"{' | '.join(tail) or 'no message'}; check the URL and ref"
                )
            if root.exists():
                shutil.rmtree(root)
            os.replace(tmp / "r", root)
            shutil.rmtree(tmp, ignore_errors=True)
    commit = origin = None
    dirty = False
    if shutil.which("git") is not None and (root / ".git").exists():
        head = _git(["rev-parse", "HEAD"], cwd=root)
        commit = head.stdout.strip() if head.returncode == 0 else None
        remote = _git(["config", "--get", "remote.origin.url"], cwd=root)
        origin = remote.stdout.strip() or None if remote.returncode == 0 else None
        status = _git(["status", "--porcelain", "--untracked-files=no"], cwd=root)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else False
    else:
        log.warning(
            "repository %s (%s) is not a git checkout: no commit is recorded", source.name, root
        )
    if source.url and not origin:
        origin = source.url
    return PreparedRepo(source.name, root, commit, origin, dirty)


__all__ = ["RepoSource", "PreparedRepo", "prepare_repo"]
