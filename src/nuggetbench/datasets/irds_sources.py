"""What ir_datasets declares about a dataset: its id (``irds:<id>``), its source files (URLs,
MD5s, where ir_datasets keeps them, whether present), the errors that name what to fetch, and the
fingerprint of its documents. Used by :mod:`.irds`; ``ir_datasets`` is imported only when called.

This reads two private parts of ir_datasets 0.6: ``Download._cache_path`` (through ``getattr``
with a default) and the ``Cache`` class of ``ir_datasets.util``; if a later release moves them,
the messages lose a path, and loading still works.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nuggetbench import home as _home
from nuggetbench.datasets.irds_local import local_docs_fault
from nuggetbench.errors import (
    ChecksumError,
    DatasetError,
    DownloadError,
    NuggetbenchError,
    UnknownNameError,
    suggest,
)

__all__ = [
    "CATALOGUE",
    "HOME_VARIABLES",
    "PREFIX",
    "SourceFile",
    "catalogue_url",
    "check_present",
    "docs_fingerprint",
    "download_missing",
    "handle",
    "home_error",
    "ir_datasets_module",
    "irds_name",
    "local_sources",
    "missing_error",
    "source_files",
    "translated",
]

PREFIX = "irds:"
CATALOGUE = "https://ir-datasets.com/"
EXTRA = "pip install 'nuggetbench[irds]'"


def ir_datasets_module(dataset_id: str | None = None):
    """The ``ir_datasets`` module, imported now (never on ``import nuggetbench``); *dataset_id*
    (the id being loaded) is named in errors.

    Raises:
        DatasetError: it is not installed (the message names the extra to install), or its
            import fails on its folder (``IR_DATASETS_HOME`` naming a file).
    """
    try:
        import ir_datasets  # lazy: an optional dependency, slow to import (its whole catalogue)
    except OSError as exc:  # its catalogue makes folders under IR_DATASETS_HOME on import
        raise home_error(dataset_id, exc) or exc from None
    except ImportError as exc:
        raise DatasetError(
            f"'{PREFIX}' dataset ids are served by the ir_datasets package, which is not "
            f"installed: {EXTRA}"
        ) from exc
    return ir_datasets


def irds_name(dataset_id: str) -> str:
    """``irds:<name>`` -> ``<name>`` (ir_datasets' own id).

    Raises:
        UnknownNameError: *dataset_id* does not start with ``irds:`` or names nothing after it.
    """
    name = dataset_id[len(PREFIX) :] if dataset_id.startswith(PREFIX) else ""
    if not name.strip():
        raise UnknownNameError(
            f"{dataset_id!r} is not an ir_datasets id: write irds:<id>, e.g. "
            f"irds:msmarco-passage/trec-dl-2019/judged (the ids: {CATALOGUE})"
        )
    return name


def catalogue_url(name: str) -> str:
    """The catalogue page of ir_datasets' dataset *name* (``https://ir-datasets.com/<top>.html#<name>``)."""
    return f"{CATALOGUE}{name.split('/')[0]}.html#{name}"


def handle(dataset_id: str) -> Any:
    """ir_datasets' dataset object for ``irds:<name>`` (nothing is downloaded).

    Raises:
        UnknownNameError: ir_datasets has no such id (the nearest is named).
        DatasetError: ir_datasets is not installed.
    """
    name = irds_name(dataset_id)
    ir = ir_datasets_module(dataset_id)
    try:
        return ir.load(name)
    except OSError as exc:
        raise home_error(dataset_id, exc) or exc from None
    except KeyError:
        raise UnknownNameError(
            f"ir_datasets has no dataset {name!r} (from {dataset_id!r}).{suggest(name, list(ir.registry))} "
            f"Its catalogue of ids: {CATALOGUE}"
        ) from None


#: ir_datasets' folders, named by the environment (``ir_datasets.util.home_path``/``tmp_path``)
HOME_VARIABLES = ("IR_DATASETS_HOME", "IR_DATASETS_TMP")


def home_error(dataset_id: str | None, exc: OSError) -> DatasetError | None:
    """*exc* (raised inside ir_datasets) as a :class:`DatasetError` naming the ir_datasets
    variable whose folder it concerns (``IR_DATASETS_HOME`` naming a file made ir_datasets fail
    with ``FileExistsError``, which read as a nuggetbench folder's fault), or ``None`` when the
    path is not under one."""
    where = Path(str(exc.filename)) if exc.filename else None
    who = f"{dataset_id}: " if dataset_id else ""
    for variable in HOME_VARIABLES:
        value = os.environ.get(variable)
        base = Path(value) if value else None
        if variable == "IR_DATASETS_HOME" and base is None:
            base = Path.home() / ".ir_datasets"
        if where is None or base is None or not (where == base or base in where.parents):
            continue
        if base.exists() and not base.is_dir():
            return DatasetError(
                f"{who}{variable}={base} is a file, not a folder: ir_datasets keeps its files "
                f"in that folder; point {variable} at a folder (or unset it)"
            )
        return DatasetError(
            f"{who}ir_datasets cannot use its folder {base} ({variable}): "
            f"{exc.strerror or exc} [{where}]; point {variable} at a folder this user can write"
        )
    return None


def local_sources(ds: Any) -> list[Path]:
    """The local files (no MD5: a ``LocalDownload`` or a folder ir_datasets unpacked into) the
    documents of *ds* are read from, that exist."""
    return [
        Path(s.path)
        for s in source_files(ds, ["docs"])
        if s.md5 is None and s.path and Path(s.path).is_file()
    ]


# --- downloads: what ir_datasets declares, and what is missing --------------------------------------
@dataclass(frozen=True)
class SourceFile:
    """One file ir_datasets reads for a part of a dataset.

    Attributes:
        part: ``docs``, ``queries`` or ``qrels``.
        urls: where ir_datasets downloads it from (empty: it must be provided by hand).
        md5: the MD5 ir_datasets checks, or ``None``.
        path: where ir_datasets keeps it (under ``IR_DATASETS_HOME``), or ``None`` (streamed).
        present: whether *path* exists.
        kept_at: for a streamed file, where ir_datasets keeps what it makes of it (unpacked).
    """

    part: str
    urls: tuple[str, ...]
    md5: str | None
    path: str | None
    present: bool
    kept_at: str | None = None

    def describe(self) -> str:
        where = f" -> {self.path}" if self.path else " (streamed by ir_datasets)"
        if not self.path and self.kept_at:
            where = f" (read by ir_datasets, which keeps it unpacked at {self.kept_at})"
        md5 = f" (MD5 {self.md5})" if self.md5 else ""
        source = ", ".join(self.urls) or "no download: provide it by hand"
        return f"{self.part}: {source}{md5}{where}"


def _nodes(obj: Any, seen: set[int], depth: int = 0, cache: Any = None) -> Iterator[tuple]:
    """``(node, cache)``: ir_datasets' download objects (and its present caches) reachable from a
    handler, each with the missing cache it is read into (or ``None``)."""
    if depth > 12 or id(obj) in seen or isinstance(obj, (str, bytes, int, float, Path, type)):
        return
    seen.add(id(obj))
    from ir_datasets.util import Cache  # lazy: ir_datasets is optional
    from ir_datasets.util.download import Download, LocalDownload

    if isinstance(obj, (Download, LocalDownload)) or (
        isinstance(obj, Cache) and Path(obj.path(force=False)).exists()
    ):
        yield obj, cache
        return
    if isinstance(obj, Cache):
        cache = obj
    if isinstance(obj, dict):
        children: Iterable[Any] = obj.values()
    elif isinstance(obj, (list, tuple, set)):
        children = obj
    else:
        children = getattr(obj, "__dict__", {}).values()
    for child in children:
        yield from _nodes(child, seen, depth + 1, cache)


def _source(part: str, node: Any, cache: Any = None) -> SourceFile:
    from ir_datasets.util import Cache  # lazy: ir_datasets is optional
    from ir_datasets.util.download import LocalDownload

    if isinstance(node, (Cache, LocalDownload)):
        path = Path(node.path(force=False))
        return SourceFile(part, (), None, str(path), path.exists())
    urls = tuple(m.url for m in node.mirrors if hasattr(m, "url"))
    local = [Path(m.path(force=False)) for m in node.mirrors if isinstance(m, LocalDownload)]
    kept_path = getattr(node, "_cache_path", None)  # where ir_datasets keeps the download
    path = Path(kept_path) if kept_path else (local[0] if local else None)
    present = path is not None and path.exists()
    kept = str(cache.path(force=False)) if cache is not None else None
    return SourceFile(part, urls, node.expected_md5, str(path) if path else None, present, kept)


def source_files(ds: Any, parts: Iterable[str] = ("docs", "queries", "qrels")) -> list[SourceFile]:
    """The files ir_datasets reads for *parts* of *ds* (a file shared by parts is listed once)."""
    found: dict[tuple, SourceFile] = {}
    for part in parts:
        if not ds.has(part):
            continue
        for node, cache in _nodes(getattr(ds, f"{part}_handler")(), set()):
            src = _source(part, node, cache)
            key = (src.md5, src.path, src.urls)
            if key in found and part not in found[key].part.split("/"):
                found[key] = replace(found[key], part=f"{found[key].part}/{part}")
            found.setdefault(key, src)
    return list(found.values())


def _instructions(ds: Any) -> str:
    """ir_datasets' own words on getting the data (``data_access``), as plain text, shortened."""
    doc = ds.documentation() if hasattr(ds, "documentation") else {}
    text = (doc or {}).get("data_access") or (doc or {}).get("docs_instructions") or ""
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())
    return text if len(text) <= 600 else text[:597] + "..."


def missing_error(
    dataset_id: str, ds: Any, parts: Iterable[str], cause: object = None
) -> DownloadError:
    """A :class:`DownloadError` naming *dataset_id*, each missing file of *parts* (URLs, MD5 and
    the path ir_datasets expects it at) and ir_datasets' instructions; a :class:`ChecksumError`
    when *cause* is (or holds) ir_datasets' MD5 mismatch."""
    name = irds_name(dataset_id)
    parts = list(parts)
    missing = [s for s in source_files(ds, parts) if not s.present]
    lines = [f"{dataset_id}: ir_datasets could not provide its {'/'.join(parts)}"]
    if isinstance(cause, BaseException):
        lines[0] += f" ({type(cause).__name__}: {str(cause)[:300]})"
    elif cause is not None:
        lines[0] += f" ({cause})"
    if missing:
        lines.append("Download these files (ir_datasets checks the MD5) and put each at its path:")
        lines += [f"  {s.describe()}" for s in missing]
    lines.append(
        "ir_datasets keeps its files under IR_DATASETS_HOME (default ~/.ir_datasets); on a machine "
        f"with internet, `nuggetbench datasets fetch {dataset_id}` downloads them there, and its "
        f"{name.split('/')[0]}/ folder can then be copied to the same place here"
    )
    hint = _instructions(ds) if "docs" in parts else ""  # its words are about the documents
    if hint:
        lines.append(f"ir_datasets says: {hint}")
    lines.append(f"About the dataset: {catalogue_url(name)}")
    # ir_datasets raises its own error, or RuntimeError(text, [(mirror, error), ...])
    nested = getattr(cause, "args", ())[1:2]
    causes = [cause, *(e for group in nested if isinstance(group, list) for _, e in group)]
    mismatch = any(type(c).__name__ == "HashVerificationError" for c in causes)
    return (ChecksumError if mismatch else DownloadError)("\n".join(lines))


@contextlib.contextmanager
def translated(dataset_id: str, ds: Any, part: str) -> Iterator[None]:
    """Turn a failure of ir_datasets while it reads *part* into one of ours, naming the dataset
    and its files: a :class:`DownloadError` naming what to fetch when files of *part* are
    missing; a :class:`DatasetError` naming ``IR_DATASETS_HOME`` for its folder's faults; a
    :class:`FormatError` naming the file, line and value for a local documents file it cannot
    parse (:func:`.irds_local.local_docs_fault`); else a :class:`DatasetError` naming the
    dataset, the part, its files and ir_datasets' message. ``KeyError`` (a document not found)
    and our own errors pass unchanged."""
    try:
        yield
    except (NuggetbenchError, KeyError):
        raise
    except Exception as exc:
        if any(not s.present for s in source_files(ds, [part])):
            raise missing_error(dataset_id, ds, [part], exc) from exc
        if isinstance(exc, OSError) and home_error(dataset_id, exc) is not None:
            raise home_error(dataset_id, exc) from exc
        fault = local_docs_fault(dataset_id, ds, exc) if part == "docs" else None
        if fault is not None:
            raise fault from exc
        files = "; ".join(s.describe() for s in source_files(ds, [part])) or "no file declared"
        raise DatasetError(
            f"{dataset_id}: ir_datasets could not read its {part} ({type(exc).__name__}: "
            f"{str(exc)[:300]}); its files: {files}"
        ) from exc


def check_present(dataset_id: str, ds: Any, parts: list[str], download: bool) -> None:
    """Refuse, before ir_datasets tries, when downloads are off and a file is missing."""
    if download and not _home.offline():
        return
    if any(not s.present for s in source_files(ds, parts)):
        why = "download=False" if not download else "NUGGETBENCH_OFFLINE=1"
        raise missing_error(dataset_id, ds, parts, f"downloads are off: {why}")


# --- the fingerprint --------------------------------------------------------------------------------
def docs_fingerprint(dataset_id: str, ds: Any) -> str:
    """SHA-256 (16 hex chars) of what ir_datasets declares about *dataset_id*'s documents: the id
    owning them, ir_datasets' version, each source file's MD5 (a local file: path, size and
    modification time) and the declared count. Reads no document."""
    ir = ir_datasets_module()
    name = irds_name(dataset_id)
    try:
        owner = ir.docs_parent_id(name)
    except Exception:  # a dataset registered at run time under a new top-level name
        owner = name
    files = []
    for s in source_files(ds, ["docs"]):
        if s.md5:
            files.append(f"md5:{s.md5}")
        elif s.path and Path(s.path).exists():
            st = Path(s.path).stat()
            files.append(f"file:{s.path}:{st.st_size}:{st.st_mtime_ns}")
        else:
            files.append(f"url:{','.join(s.urls)}:{s.path}")
    count = (ds.docs_metadata() or {}).get("count") if hasattr(ds, "docs_metadata") else None
    declared = {"docs": owner, "ir_datasets": ir.__version__, "files": files, "count": count}
    return hashlib.sha256(json.dumps(declared, sort_keys=True).encode()).hexdigest()[:16]


def download_missing(dataset_id: str, ds: Any, parts: list[str]) -> None:
    """Have ir_datasets download (MD5-checked) every missing source file of *parts* into its
    cache (a streamed file: into the cache it is unpacked into).

    Raises:
        DownloadError: offline, or a download failed (see :func:`missing_error`);
            :class:`ChecksumError` for an MD5 mismatch.
    """
    check_present(dataset_id, ds, parts, True)
    from ir_datasets.util.download import LocalDownload  # lazy: ir_datasets is optional

    for part in parts:
        with translated(dataset_id, ds, part):
            for node, cache in _nodes(getattr(ds, f"{part}_handler")(), set()):
                if _source(part, node, cache).present:
                    continue
                if getattr(node, "_cache_path", None) or isinstance(node, LocalDownload):
                    node.path()  # downloaded to its path, MD5-checked (by hand: FileNotFoundError)
                elif cache is not None:
                    cache.path()  # ir_datasets streams the download, MD5-checked, into its cache
