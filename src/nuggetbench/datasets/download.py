"""Verified downloads and safe, atomic archive installation.

* :func:`download_file` streams a URL to a temporary file beside the target, computes its MD5
  (or SHA-256) on the fly and keeps the file only when the size and checksum match. A corrupt or truncated
  download never stays on disk. A transfer has an overall deadline (``NUGGETBENCH_DOWNLOAD_DEADLINE``
  seconds, default 4 hours) and a stall check: fewer than ``MIN_RATE`` bytes per second over a
  window of ``NUGGETBENCH_DOWNLOAD_STALL`` seconds (default 60; a silent socket times out after
  the same time) ends it. Either ends in a :class:`DownloadError` naming the file to put in place
  by hand (the dataset families add the folder to fill).
* :func:`safe_extract_zip` refuses any member that would land outside the target folder
  (absolute paths, ``..`` components, drive letters, symbolic links).
* :func:`install_zip` extracts into a temporary folder beside the destination and renames the
  finished folder into place, so a dataset folder is either complete or absent.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import stat
import time
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from nuggetbench._atomic import clean_stale, make_temp, make_temp_dir, staging_prefix
from nuggetbench.errors import ChecksumError, DatasetError, DownloadError, UnsafeArchiveError

log = logging.getLogger(__name__)

CHUNK = 1 << 20
TIMEOUT_S = 60
#: Overall deadline of one download, seconds (``NUGGETBENCH_DOWNLOAD_DEADLINE``).
DEADLINE_S = 4 * 3600.0
#: Stall window, seconds (``NUGGETBENCH_DOWNLOAD_STALL``); also the socket's read timeout.
STALL_S = 60.0
#: A transfer slower than this (bytes per second) over a whole stall window is stalled.
MIN_RATE = 1024


def _seconds(var: str, default: float) -> float:
    value = os.environ.get(var, "").strip()
    if not value:
        return default
    try:
        out = float(value)
    except ValueError:
        raise DownloadError(f"{var}={value!r} is not a number of seconds") from None
    if not out > 0:
        raise DownloadError(f"{var}={value!r}: give a positive number of seconds")
    return out


class _Pace:
    """The deadline and the stall check of one transfer (see the module docstring)."""

    def __init__(self, deadline: float, stall: float, min_rate: float):
        self.deadline, self.stall, self.min_rate = deadline, stall, min_rate
        self.start = self.window_start = time.monotonic()
        self.window_bytes = 0

    def check(self, received: int) -> str | None:
        """Why the transfer must end now, or ``None``."""
        now = time.monotonic()
        if now - self.start > self.deadline:
            return f"it did not finish within the deadline of {self.deadline:g} s"
        if now - self.window_start >= self.stall:
            got = received - self.window_bytes
            if got < self.min_rate * self.stall:
                return (
                    f"it stalled: {got} bytes in the last {now - self.window_start:.0f} s (less "
                    f"than {self.min_rate:g} bytes/s)"
                )
            self.window_start, self.window_bytes = now, received
        return None


def download_file(
    url: str,
    dest: str | Path,
    *,
    md5: str | None = None,
    show_progress: bool = False,
    what: str | None = None,
    sha256: str | None = None,
    deadline: float | None = None,
    stall: float | None = None,
    min_rate: float = MIN_RATE,
) -> Path:
    """Download *url* to *dest* (atomically), verifying its MD5 or SHA-256 when given.

    Args:
        url: an ``http(s)://`` or ``file://`` URL.
        dest: the final file path (its folder is created).
        md5: the expected hex MD5 digest, or ``None`` to skip verification.
        show_progress: show a tqdm bar (bytes).
        what: a label for messages (e.g. the dataset id).
        sha256: the expected hex SHA-256 digest (checked instead of *md5* when given).
        deadline: overall limit in seconds (default ``NUGGETBENCH_DOWNLOAD_DEADLINE`` or
            :data:`DEADLINE_S`).
        stall: stall window in seconds, also the socket timeout (default
            ``NUGGETBENCH_DOWNLOAD_STALL`` or :data:`STALL_S`).
        min_rate: bytes per second below which a whole window counts as stalled.

    Returns:
        *dest*.

    Raises:
        DownloadError: the network failed, the transfer ended early, stalled or passed its
            deadline (the partial file is removed; the message names *dest*).
        ChecksumError: the file's digest differs from *sha256* / *md5* (the file is removed).
    """
    dest = Path(dest)
    deadline = deadline or _seconds("NUGGETBENCH_DOWNLOAD_DEADLINE", DEADLINE_S)
    stall = stall or _seconds("NUGGETBENCH_DOWNLOAD_STALL", STALL_S)
    dest.parent.mkdir(parents=True, exist_ok=True)
    label = what or dest.name
    clean_stale(dest.parent)  # partial downloads of killed runs
    fd, tmp_name = make_temp(dest.parent, staging_prefix(dest.name), ".part")
    tmp = Path(tmp_name)
    algorithm, expected = ("SHA-256", sha256) if sha256 else ("MD5", md5)
    digest = hashlib.sha256() if sha256 else hashlib.md5()
    try:
        with os.fdopen(fd, "wb") as out:
            received = _transfer(
                url, out, digest, label, dest, (deadline, stall, min_rate), show_progress
            )
            out.flush()
            os.fsync(out.fileno())
        if expected is not None and digest.hexdigest() != expected.lower():
            raise ChecksumError(
                f"{label}: the file downloaded from {url} has {algorithm} {digest.hexdigest()}, "
                f"expected {expected.lower()} ({received} bytes received); it was deleted. The download was "
                "corrupt or truncated, or the server's file changed: try again, or report it"
            )
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    log.info("downloaded %s (%d bytes) to %s", url, received, dest)
    return dest


def _transfer(
    url: str,
    out: Any,
    digest: Any,
    label: str,
    dest: Path,
    limits: tuple[float, float, float],
    show_progress: bool,
) -> int:
    """Copy *url*'s bytes into the file *out*, updating *digest*, under *limits* (deadline and
    stall window in seconds, minimum rate in bytes per second: :class:`_Pace`, from the
    response on); the number of bytes received.

    Raises:
        DownloadError: the network failed, the transfer stalled, passed its deadline or ended
            before its ``Content-Length``.
    """
    import http.client
    import urllib.error
    import urllib.request

    from tqdm.auto import tqdm

    by_hand = f"or put the file at {dest} by hand (download {url} yourself)"
    received = 0
    total = None
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "nuggetbench"})
        deadline, stall, min_rate = limits
        timeout = min(TIMEOUT_S, stall, deadline)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            with tqdm(
                total=total,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=f"download {label}",
                disable=not show_progress,
                leave=False,
            ) as bar:
                pace = _Pace(deadline, stall, min_rate)
                while chunk := response.read1(CHUNK):
                    why = pace.check(received + len(chunk))
                    if why is not None:
                        raise DownloadError(
                            f"downloading {label} from {url}: {why}; {received + len(chunk)}"
                            f" bytes received{f' of {total}' if total else ''}. Try again "
                            "later, raise NUGGETBENCH_DOWNLOAD_DEADLINE / "
                            f"NUGGETBENCH_DOWNLOAD_STALL (seconds), {by_hand}"
                        )
                    out.write(chunk)
                    digest.update(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise DownloadError(
            f"downloading {label} from {url} failed after {received} bytes: {reason}. "
            "Check the network (or set NUGGETBENCH_OFFLINE=1 and fill the folder by hand), "
            f"then try again; {by_hand}"
        ) from exc
    if total is not None and received != total:
        raise DownloadError(
            f"downloading {label} from {url}: the transfer was truncated ({received} of "
            f"{total} bytes); try again"
        )
    return received


def file_md5(path: str | Path) -> str:
    """Hex MD5 digest of a file (streamed)."""
    return file_digest(path, "md5")


def file_digest(path: str | Path, algorithm: str = "md5") -> str:
    """Hex digest of a file (streamed) with a :mod:`hashlib` *algorithm* (``md5``, ``sha256``)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _member_target(root: Path, info: zipfile.ZipInfo, archive: Path) -> Path:
    """The path *info* extracts to below *root*; raises when it would escape or is a link."""
    name = info.filename
    mode = (info.external_attr >> 16) & 0xFFFF
    if stat.S_ISLNK(mode):
        raise UnsafeArchiveError(
            f"{archive}: member {name!r} is a symbolic link; refusing to extract"
        )
    posix = name.replace("\\", "/")
    parts = PurePosixPath(posix).parts
    if (
        posix.startswith("/")
        or (len(posix) > 1 and posix[1] == ":")
        or ".." in parts
        or "\x00" in posix
    ):
        raise UnsafeArchiveError(
            f"{archive}: member {name!r} would be written outside {root}; refusing to extract"
        )
    target = (root / Path(*[p for p in parts if p not in ("", ".")])).resolve() if parts else root
    if target != root and root not in target.parents:
        raise UnsafeArchiveError(
            f"{archive}: member {name!r} would be written outside {root}; refusing to extract"
        )
    return target


def safe_extract_zip(
    archive: str | Path, target: str | Path, *, show_progress: bool = False
) -> Path:
    """Extract *archive* into *target*, refusing members that would escape it.

    Every member is checked before anything is written.

    Raises:
        UnsafeArchiveError: a member has an absolute path, a ``..`` component, a drive letter,
            or is a symbolic link.
        DatasetError: the file is not a valid zip archive.
    """
    from tqdm.auto import tqdm

    archive = Path(archive)
    root = Path(target).resolve()
    root.mkdir(parents=True, exist_ok=True)
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise DatasetError(
            f"{archive} is not a valid zip archive ({exc}); delete it and download again"
        ) from exc
    with zf:
        members = zf.infolist()
        targets = [_member_target(root, info, archive) for info in members]
        for info, dest in tqdm(
            list(zip(members, targets)),
            desc=f"extract {archive.name}",
            disable=not show_progress,
            leave=False,
        ):
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
    return root


def install_zip(
    archive: str | Path,
    *,
    member_dir: str,
    destination: str | Path,
    marker: str | None = None,
    show_progress: bool = False,
) -> Path:
    """Extract *archive* and move its top folder *member_dir* to *destination* atomically.

    The archive is extracted into a temporary folder beside *destination*; the folder
    ``<tmp>/<member_dir>`` is then renamed to *destination*. When another process installed
    *destination* in the meantime (it holds *marker*), its copy is kept and ours discarded.

    Raises:
        UnsafeArchiveError: see :func:`safe_extract_zip`.
        DatasetError: the archive has no folder *member_dir*, or *destination* exists but is
            incomplete (it is named; remove it and try again).
    """
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(destination.parent)  # extractions of killed runs
    tmp = Path(make_temp_dir(destination.parent, staging_prefix(destination.name), ".extract"))
    try:
        safe_extract_zip(archive, tmp, show_progress=show_progress)
        source = tmp / member_dir
        if not source.is_dir():
            found = sorted(p.name for p in tmp.iterdir())
            raise DatasetError(
                f"{archive}: expected a top folder {member_dir!r} in the archive, found {found}; "
                "the archive does not have the official layout"
            )
        try:
            os.replace(source, destination)
        except OSError as exc:
            if marker is not None and (destination / marker).exists():
                return destination
            if destination.is_dir() and any(destination.iterdir()):
                raise DatasetError(
                    f"{destination} already exists and is not empty, but is not a complete dataset "
                    "folder; remove it and try again"
                ) from exc
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return destination
