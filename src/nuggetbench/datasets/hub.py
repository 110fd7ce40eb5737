"""Hugging Face Hub loading, in one place: pinned revisions, the home cache, offline mode, local files.

Three ways in, all under the nuggetbench home (``<home>/cache/huggingface/``):

* :func:`download_files` fetches raw files of a dataset repository at a pinned revision
  (``huggingface_hub.snapshot_download``). MIRACL (``miracl/miracl``, ``miracl/miracl-corpus``),
  mMARCO (``unicamp-dl/mmarco``) and the BEIR mirrors (``BeIR/<name>``, ``BeIR/<name>-qrels``)
  publish plain TSV / JSONL(.gz) files next to a *loading script*; ``datasets`` 4 and later no
  longer run loading scripts, so the loaders read those files directly.
* :func:`load_hub_dataset` is ``datasets.load_dataset`` with a pinned revision and the home
  cache, for repositories in parquet/JSON form (and for local folders of such files).
* :func:`find_record_files` / :func:`iter_records` read *hub-shaped local files*: what
  ``datasets`` writes (``Dataset.to_parquet``, ``to_json`` (JSON lines or a JSON array),
  ``save_to_disk`` folders of Arrow files) and what the hub repositories hold (``.jsonl.gz``,
  ``.tsv``), streaming record batches, never a whole table of Python strings.

Pinned revisions (:data:`PINNED_REVISIONS`, commit hashes read from the repositories' public
commit pages): ``miracl/miracl-corpus`` d921ec7 (adds the German and Yoruba corpora),
``unicamp-dl/mmarco`` 4618200 (adds the dev/small query files). ``miracl/miracl`` 6784e58 is the
merge after "fix yoruba dev qrels", as seen in a public mirror that carries that repository's
history (macavaney/miracl-noauth); if the hub refuses it, pass ``revision="main"``. Every other
repository (the ``BeIR/*`` mirrors) defaults to ``"main"``: give ``revision=`` to pin one.

``NUGGETBENCH_OFFLINE=1`` or ``HF_HUB_OFFLINE=1`` forbids downloads; the error names the local
folder to fill. Without them (and unless ``NUGGETBENCH_OFFLINE=0`` declares the machine online), a
machine that cannot reach the hub fails fast too:
:func:`ensure_reachable` first opens one TCP connection to the hub (``HF_ENDPOINT``, or the HTTPS
proxy when one is set) with a short timeout, instead of letting ``huggingface_hub`` spend half a
minute in retries, and the one error names the files and the folder to fill. ``miracl/miracl`` is gated: accept its terms on the hub and set ``HF_TOKEN``.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import json
import logging
import os
import re
import socket
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from nuggetbench import home as _home
from nuggetbench.data.lines import layout_error, stream_lines, tab_lines
from nuggetbench.data.source import SPACES
from nuggetbench.errors import DatasetError, DownloadError, FormatError
from nuggetbench.jsonl import iter_jsonl

log = logging.getLogger(__name__)

__all__ = [
    "PINNED_REVISIONS",
    "revision_for",
    "hf_cache_dir",
    "ensure_online",
    "ensure_reachable",
    "hub_unreachable",
    "download_files",
    "load_hub_dataset",
    "find_record_files",
    "iter_records",
    "count_records",
    "natural_key",
    "read_tsv_pairs",
]

PINNED_REVISIONS: dict[str, str] = {
    "miracl/miracl": "6784e58b0a12796f70544aea4507f23a964f9978",
    "miracl/miracl-corpus": "d921ec7e349ce0d28daf30b2da9da5ee698bef0d",
    "unicamp-dl/mmarco": "4618200568100aa0bf7fbf494d8d022e7ecab9a6",
}

RECORD_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".json", ".json.gz", ".arrow")
_BATCH = 8192


def revision_for(repo_id: str, revision: str | None = None) -> str:
    """*revision* when given, else the pinned commit of *repo_id*, else ``"main"``."""
    return revision or PINNED_REVISIONS.get(repo_id, "main")


def hf_cache_dir() -> Path:
    """``<home>/cache/huggingface`` (created): every hub download lands here."""
    return _home.cache_dir("huggingface")


def ensure_online(what: str, folder: Path, *, hint: str = "") -> None:
    """Raise :class:`DownloadError` naming *folder* when downloads are off.

    Args:
        what: the dataset being loaded (``miracl/ja``).
        folder: the local folder that would make the download unnecessary.
        hint: what to put in it.
    """
    if _home.offline():
        raise DownloadError(
            f"{what} is not on disk and downloads are off (NUGGETBENCH_OFFLINE=1 or HF_HUB_OFFLINE=1). "
            f"Fill the folder {folder}{': ' + hint if hint else ''}; or point NUGGETBENCH_DATA at a "
            f"folder holding the same layout; or unset the offline variables"
        )


#: Seconds to wait for the hub's TCP handshake (``NUGGETBENCH_HUB_PROBE_TIMEOUT``).
PROBE_TIMEOUT_S = 5.0
_PROBES: dict[tuple[str, int], str | None] = {}


def hub_unreachable(*, timeout: float | None = None) -> str | None:
    """Why the hub cannot be reached from here, or ``None`` when a TCP connection opens.

    The endpoint is ``HF_ENDPOINT`` (default ``https://huggingface.co``); when ``HTTPS_PROXY`` /
    ``ALL_PROXY`` is set the proxy is probed instead. The answer is remembered per host and port
    for the life of the process (one probe, however many files a dataset needs).
    ``NUGGETBENCH_OFFLINE=0`` (set, and false) declares the machine online: no probe is made (for
    networks the probe cannot see through).
    """
    if os.environ.get("NUGGETBENCH_OFFLINE", "").strip().lower() in {"0", "false", "no", "off"}:
        return None
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    proxy = next(
        (
            os.environ[v]
            for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
            if os.environ.get(v)
        ),
        None,
    )
    target = urlsplit(proxy if "://" in proxy else f"http://{proxy}") if proxy else endpoint
    host = target.hostname or ""
    try:
        port = target.port or (443 if target.scheme == "https" else 80)
    except ValueError:
        return f"the hub address {target.geturl()!r} has an invalid port"
    key = (host, port)
    if key not in _PROBES:
        wait = timeout or float(os.environ.get("NUGGETBENCH_HUB_PROBE_TIMEOUT") or PROBE_TIMEOUT_S)
        try:
            with socket.create_connection((host, port), timeout=wait):
                _PROBES[key] = None
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            via = " (the HTTPS proxy)" if proxy else ""
            _PROBES[key] = f"{host}:{port}{via} cannot be reached: {reason}"
    return _PROBES[key]


def ensure_reachable(what: str, folder: Path, *, hint: str = "") -> None:
    """:func:`ensure_online`, then fail fast when the hub cannot be reached (:func:`hub_unreachable`).

    Raises:
        DownloadError: offline, or the hub unreachable; one message naming *folder* and *hint*
            (the files to put there).
    """
    ensure_online(what, folder, hint=hint)
    why = hub_unreachable()
    if why is not None:
        raise DownloadError(
            f"{what} is not on disk and the Hugging Face hub cannot be reached ({why}). Fill the "
            f"folder {folder}{': ' + hint if hint else ''}; or point NUGGETBENCH_DATA at a folder "
            "holding the same layout; or connect and try again (NUGGETBENCH_OFFLINE=1 skips this "
            "check and says so at once)"
        )


def _hub_error(
    exc: Exception, repo_id: str, revision: str, what: str, folder: Path | None
) -> DownloadError:
    name = type(exc).__name__
    fill = f" Alternatively fill {folder} by hand." if folder else ""
    if "Gated" in name or "401" in str(exc) or "403" in str(exc):
        return DownloadError(
            f"{what}: the hub repository {repo_id} is gated or private: accept its terms "
            f"on huggingface.co and set HF_TOKEN ({exc}).{fill}"
        )
    if "Revision" in name:
        return DownloadError(
            f"{what}: revision {revision!r} of {repo_id} does not exist on the hub; pass "
            f"revision='main' (or another commit) to the loader.{fill}"
        )
    return DownloadError(
        f"{what}: downloading from the hub repository {repo_id}@{revision} failed: "
        f"{name}: {exc}.{fill}"
    )


def download_files(
    repo_id: str,
    patterns: Sequence[str],
    *,
    revision: str | None = None,
    what: str | None = None,
    fill_folder: Path | None = None,
    hint: str = "",
) -> Path:
    """Fetch the files of a hub dataset repository matching *patterns*; return the snapshot folder.

    Args:
        repo_id: ``owner/name`` of a dataset repository.
        patterns: ``fnmatch`` patterns of repository paths (``miracl-v1.0-ja/topics/*dev*``).
        revision: a commit, tag or branch; default :func:`revision_for`.
        what: a label for messages (the dataset id).
        fill_folder: the local folder named in errors.
        hint: what to put in that folder (for the offline error).

    Returns:
        The local snapshot folder (paths inside mirror the repository).

    Raises:
        DownloadError: offline, gated, unknown revision, network failure, or no file matched.
    """
    rev = revision_for(repo_id, revision)
    label = what or repo_id
    ensure_reachable(label, fill_folder or hf_cache_dir(), hint=hint)
    from huggingface_hub import snapshot_download

    try:
        folder = Path(
            snapshot_download(
                repo_id,
                repo_type="dataset",
                revision=rev,
                allow_patterns=list(patterns),
                cache_dir=str(hf_cache_dir()),
            )
        )
    except Exception as exc:  # huggingface_hub raises many types; each becomes a DownloadError
        raise _hub_error(exc, repo_id, rev, label, fill_folder) from exc
    if not any(p.is_file() for p in folder.rglob("*")):
        raise DownloadError(f"{label}: no file of {repo_id}@{rev} matches {list(patterns)}")
    log.info("%s: %s@%s is in %s", label, repo_id, rev, folder)
    return folder


def load_hub_dataset(
    path_or_repo: str | Path,
    config: str | None = None,
    *,
    split: str | None = None,
    revision: str | None = None,
    streaming: bool = False,
    data_files: Any = None,
    what: str | None = None,
    fill_folder: Path | None = None,
) -> Any:
    """``datasets.load_dataset`` with a pinned revision, the home cache and offline handling.

    Args:
        path_or_repo: a hub repository (``owner/name``) or a local folder/file of parquet / JSON
            files (as ``datasets`` writes them).
        config: the configuration name, if any.
        split: the split (``None``: all, as a ``DatasetDict``).
        revision: for a hub repository; default :func:`revision_for`.
        streaming: return an ``IterableDataset`` (no Arrow copy of the data is written).
        data_files: passed through (selects files inside the repository or folder).
        what, fill_folder: for messages.

    Returns:
        Whatever ``datasets.load_dataset`` returns.

    Raises:
        DownloadError: a hub repository while offline, or the hub failed.
        DatasetError: ``datasets`` could not read a local folder.
    """
    import datasets

    local = Path(str(path_or_repo)).expanduser()
    label = what or str(path_or_repo)
    kwargs: dict[str, Any] = {
        "split": split,
        "streaming": streaming,
        "data_files": data_files,
        "cache_dir": str(hf_cache_dir() / "datasets"),
    }
    if local.exists():
        try:
            return datasets.load_dataset(str(local), config, **kwargs)
        except Exception as exc:
            raise DatasetError(
                f"{label}: datasets could not read the local files in {local}: {exc}"
            ) from exc
    rev = revision_for(str(path_or_repo), revision)
    ensure_reachable(label, fill_folder or hf_cache_dir())
    try:
        return datasets.load_dataset(str(path_or_repo), config, revision=rev, **kwargs)
    except Exception as exc:
        raise _hub_error(exc, str(path_or_repo), rev, label, fill_folder) from exc


# --- hub-shaped local files ---------------------------------------------------------------------
def natural_key(path: Path) -> list:
    """Sort key putting ``docs-2`` before ``docs-10``."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def _has_suffix(path: Path) -> bool:
    return path.is_file() and path.name.endswith(RECORD_SUFFIXES)


def _saved_arrow_files(folder: Path) -> list[Path] | None:
    """Arrow files of a ``Dataset.save_to_disk`` folder (from ``state.json``), or ``None``."""
    state = folder / "state.json"
    if not state.exists():
        return None
    try:
        files = [folder / f["filename"] for f in json.loads(state.read_text())["_data_files"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise FormatError(state, None, f"not a datasets save_to_disk state file ({exc})") from None
    return files


def find_record_files(folder: Path, stem: str, *, split: str | None = None) -> list[Path]:
    """Files holding the records called *stem* in *folder*, in natural order; ``[]`` when none.

    Looked for, first match wins: ``<stem>/`` (a ``save_to_disk`` folder, a ``DatasetDict``
    folder with a *split* sub-folder, or a folder of record files), ``<stem>.<suffix>``,
    ``<stem>-*.<suffix>`` and ``<stem>_*.<suffix>``, with suffix in :data:`RECORD_SUFFIXES`.
    """
    base = folder / stem
    if base.is_dir():
        saved = _saved_arrow_files(base)
        if saved is not None:
            return saved
        if (base / "dataset_dict.json").exists():
            sub = base / split if split else None
            if sub is None or not sub.is_dir():
                raise DatasetError(
                    f"{base} is a DatasetDict folder; name its split "
                    f"({', '.join(sorted(p.name for p in base.iterdir() if p.is_dir()))})"
                )
            return _saved_arrow_files(sub) or []
        return sorted((p for p in base.rglob("*") if _has_suffix(p)), key=natural_key)
    for suffix in RECORD_SUFFIXES:
        if (folder / f"{stem}{suffix}").is_file():
            return [folder / f"{stem}{suffix}"]
    found = [p for sep in ("-", "_") for p in folder.glob(f"{stem}{sep}*") if _has_suffix(p)]
    return sorted(set(found), key=natural_key)


def count_records(paths: Iterable[Path]) -> int | None:
    """The number of records when cheap to know (parquet / Arrow metadata), else ``None``."""
    total = 0
    for path in paths:
        if path.name.endswith(".parquet"):
            import pyarrow.parquet as pq

            total += pq.ParquetFile(path).metadata.num_rows
        elif path.name.endswith(".arrow"):
            import pyarrow as pa

            with pa.memory_map(str(path)) as src:
                total += sum(b.num_rows for b in pa.ipc.open_stream(src))
        else:
            return None
    return total


def iter_records(paths: Iterable[Path], *, columns: Sequence[str] | None = None) -> Iterator[dict]:
    """Stream the records (dicts) of hub-shaped files, file after file.

    Parquet and Arrow files are read in record batches of 8192 rows; JSON lines (optionally
    gzipped) line by line; a JSON array file (``to_json(lines=False)``) is parsed whole.

    Args:
        paths: the files (see :func:`find_record_files`).
        columns: read only these columns (parquet / Arrow), when given.

    Raises:
        FormatError: a JSON line is malformed (file and line named).
    """
    for path in paths:
        name = path.name
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            cols = [c for c in columns if c in pf.schema_arrow.names] if columns else None
            for batch in pf.iter_batches(batch_size=_BATCH, columns=cols):
                yield from batch.to_pylist()
        elif name.endswith(".arrow"):
            import pyarrow as pa

            with pa.memory_map(str(path)) as src:
                for batch in pa.ipc.open_stream(src):
                    if columns:
                        batch = batch.select([c for c in columns if c in batch.schema.names])
                    yield from batch.to_pylist()
        else:
            yield from _iter_json(path)


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def _iter_json(path: Path) -> Iterator[dict]:
    """The records of a JSON array or JSON lines file (``.gz`` too), a byte-order mark dropped.

    Raises:
        FormatError: not JSON, a line that is not an object, or bytes that are not UTF-8 (the
            file named, and the line where known).
    """
    try:
        yield from _json_records(path)
    except UnicodeDecodeError as exc:
        raise FormatError(
            path,
            None,
            f"not valid UTF-8 ({exc.reason} at byte {exc.start} of a block); re-encode the file",
        ) from None


def _json_records(path: Path) -> Iterator[dict]:
    with _open_text(path) as fh:
        first = ""
        while True:
            ch = fh.read(1)
            if not ch or not ch.isspace():
                first = ch
                break
        if first == "[":
            rest = fh.read()
            try:
                records = json.loads(first + rest)
            except json.JSONDecodeError as exc:
                raise FormatError(path, exc.lineno, f"not valid JSON ({exc.msg})") from None
            yield from records
            return
        lines = itertools.chain([first + fh.readline()], fh)
        hint = "expected one JSON object per line (JSON lines)"
        for lineno, obj in iter_jsonl(path, hint=hint, lines=lines):
            if not isinstance(obj, dict):
                raise FormatError(path, lineno, "expected a JSON object per line")
            yield obj


def read_tsv_pairs(path: Path) -> Iterator[tuple[str, str]]:
    """``id<TAB>text`` lines (MIRACL topics, mMARCO collections and queries), streamed through
    the reading layer (:func:`nuggetbench.data.lines.stream_lines`: ``.gz``, a byte-order mark
    dropped, ids byte-exact); the id is stripped of ASCII white space only, the text keeps any
    further tab.

    Raises:
        FormatError: a non-empty line without a tab (file, line and value named).
    """
    with contextlib.closing(stream_lines(path, what="TSV")) as lines:
        for lineno, fields in tab_lines(lines):
            if len(fields) < 2:
                raise layout_error(path, lineno, "id<TAB>text", fields)
            yield fields[0].strip(SPACES), fields[1] if len(fields) == 2 else "\t".join(fields[1:])
