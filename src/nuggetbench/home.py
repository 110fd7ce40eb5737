"""The dataset home and read-only data folders.

``NUGGETBENCH_HOME`` (default ``~/.cache/nuggetbench``) holds datasets, caches and outputs.
``NUGGETBENCH_DATA`` (optional, ``:``-separated) names read-only folders with the same layout that
are searched for datasets before the home; nothing is ever written there.
``NUGGETBENCH_OFFLINE=1`` forbids downloads.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The writable home folder (created on demand by the callers that write)."""
    value = os.environ.get("NUGGETBENCH_HOME")
    return Path(value).expanduser() if value else Path.home() / ".cache" / "nuggetbench"


def data_dirs() -> list[Path]:
    """Read-only dataset folders from ``NUGGETBENCH_DATA``, in search order."""
    value = os.environ.get("NUGGETBENCH_DATA", "")
    return [Path(p).expanduser() for p in value.split(os.pathsep) if p.strip()]


def search_path() -> list[Path]:
    """Folders searched for a dataset: ``NUGGETBENCH_DATA`` entries first, then the home."""
    return [*data_dirs(), home()]


def find_dataset_dir(relative: str | Path, *, marker: str | None = None) -> Path | None:
    """Return the first existing ``<folder>/<relative>`` on the search path, or ``None``.

    Args:
        relative: the dataset's folder below a data root, e.g. ``beir/scifact``.
        marker: a file that must exist inside the folder for it to count (e.g. ``corpus.jsonl``).
    """
    for root in search_path():
        candidate = root / relative
        if candidate.is_dir() and (marker is None or (candidate / marker).exists()):
            return candidate
    return None


def offline() -> bool:
    """True when downloads are forbidden (``NUGGETBENCH_OFFLINE`` or ``HF_HUB_OFFLINE`` set to 1/true)."""
    for var in ("NUGGETBENCH_OFFLINE", "HF_HUB_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}:
            return True
    return False


def cache_dir(*parts: str) -> Path:
    """A folder under ``<home>/cache/`` (created)."""
    path = home().joinpath("cache", *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
