"""Published run and rank files, fetched like a dataset: looked up first, verified, downloaded.

A recipe's ``[[conditions.runs]]`` names a file by its relative ``path`` (looked up under every
``NUGGETBENCH_DATA`` folder, then the home), its ``url`` and its checksum. A file found on disk is
verified (a file with another checksum is refused, never scored); an absent one is downloaded
into the home with :func:`nuggetbench.datasets.download.download_file` (atomic, verified, with
its deadline and stall checks) unless downloads are off, in which case the error names the URL,
the checksum and the place to put the file.
"""

from __future__ import annotations

from pathlib import Path

from nuggetbench import home as _home
from nuggetbench.datasets.download import download_file, file_digest
from nuggetbench.errors import ChecksumError, DownloadError
from nuggetbench.reproduce.needs import find_run_file
from nuggetbench.reproduce.recipe import RunFile

__all__ = ["checksum_of", "fetch_run_file", "home_path"]


def checksum_of(run: RunFile) -> tuple[str, str]:
    """``(algorithm, hex digest)`` the file must have: SHA-256 when given, else MD5."""
    return ("sha256", run.sha256) if run.sha256 else ("md5", run.md5)


def home_path(run: RunFile) -> Path:
    """Where a download of *run* is kept: ``<home>/<run.path>``."""
    return _home.home() / run.path


def fetch_run_file(run: RunFile, *, show_progress: bool = False) -> Path:
    """The verified local copy of a published run file, downloading it when absent.

    Returns:
        The file's path (under ``NUGGETBENCH_DATA`` or the home).

    Raises:
        ChecksumError: the file on disk (or downloaded) has another checksum; a file on disk is
            named and left alone.
        DownloadError: absent and downloads are off (``NUGGETBENCH_OFFLINE=1``) or failed; the
            message names the URL, the checksum and where to put the file.
    """
    algorithm, digest = checksum_of(run)
    found = find_run_file(run)
    if found is not None:
        actual = file_digest(found, algorithm)
        if actual != digest:
            raise ChecksumError(
                f"{found} has {algorithm} {actual}, but the recipe expects {digest}: it is "
                f"another file than the one published at {run.url}; replace it with that file "
                "(or remove it to download it)"
            )
        return found
    dest = home_path(run)
    searched = ", ".join(str(root / run.path) for root in _home.search_path())
    if _home.offline():
        raise DownloadError(
            f"the run file {run.path} is not on disk and downloads are off "
            f"(NUGGETBENCH_OFFLINE=1). Fetch {run.url} ({algorithm} {digest}) to {dest}, or "
            f"point NUGGETBENCH_DATA at a folder holding {run.path}; searched: {searched}"
        )
    checksum = {algorithm: digest}
    return download_file(run.url, dest, show_progress=show_progress, what=run.path, **checksum)
