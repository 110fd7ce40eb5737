"""The artifact store: every expensive output, keyed by its content, written atomically.

One mechanism serves every cache and stage output of nuggetbench: BM25 indexes, dense / sparse /
multi-vector embeddings, runs, chunked corpora and the builder's stages.

* **Key.** An artifact's key is the SHA-256 of the canonical JSON of its *fields*: the stage
  (``bm25``, ``embeddings/dense``, ``runs``, ``chunks``, a builder stage), the parameters that
  change its content, and the fingerprints of its inputs (corpus, queries, upstream stages), plus
  :data:`FORMAT`. Any change of those gives another key, so a stale artifact is never reused.
* **Folder artifacts** (:class:`Artifact`) live in ``<root>/<stage>/<label>-<key>/``; they are built
  in a staging folder beside it (:meth:`Artifact.build`) and renamed into place with a
  ``meta.json`` written last (the key fields plus what the builder adds), so an interrupted build
  leaves nothing behind. An artifact counts only when its ``meta.json`` repeats the fields asked for.
* **Slots** (:class:`Slot`): one named output in a fixed place (``<root>/<name>.jsonl`` plus
  ``<root>/<name>.meta.json`` holding its key), for pipelines whose outputs are read by name (the
  builder): a slot is *done* for a key when its meta records that key; the rows are written first,
  the meta last.
* **Formats** are plain (npy, npz, JSON, JSONL, TREC, bm25s' own npy + JSON); never pickles.

The default root is ``<NUGGETBENCH_HOME>/cache``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nuggetbench import home
from nuggetbench._atomic import atomic_write, clean_stale, make_temp_dir, staging_prefix
from nuggetbench._version import __version__
from nuggetbench.errors import CacheError, InputError
from nuggetbench.jsonl import iter_jsonl, write_jsonl

__all__ = [
    "FORMAT",
    "Artifact",
    "CacheEntry",
    "CACHE_KINDS",
    "cache_entries",
    "cache_kinds",
    "cache_root",
    "unknown_kinds",
    "parse_age",
    "remove_cache_entries",
    "Slot",
    "artifact",
    "iter_jsonl",
    "key_of",
    "slug",
    "spec_file_name",
    "write_jsonl",
]

log = logging.getLogger(__name__)

#: Version of the store's layout; part of every key.
FORMAT = 1


def key_of(fields: Mapping[str, Any], *, length: int = 24) -> str:
    """SHA-256 (*length* hex chars) of the canonical JSON of *fields* (keys sorted)."""
    text = json.dumps(fields, sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def slug(text: str, *, keep: str = "end", length: int = 60) -> str:
    """A short folder-name-safe label (the end of a model path or spec by default; never hidden)."""
    clean = re.sub(r"[^A-Za-z0-9_.=\-]+", "_", text)
    clean = clean[-length:] if keep == "end" else clean[:length]
    return clean.lstrip("._-") or "x"


def spec_file_name(spec: str) -> str:
    """A file-name-safe form of a retriever spec (at most 120 characters, ``run`` when empty):
    the name of ``runs/<name>.trec`` and the tag column of the TREC files written for it."""
    text = re.sub(r"[^A-Za-z0-9._=,+-]+", "_", spec).strip("_")
    return text[:120] or "run"


def _canonical(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class Artifact:
    """One content-keyed artifact folder ``<root>/<stage>/<label>-<key>/``.

    Args:
        stage: what produced it (``bm25``, ``embeddings/dense``, ``chunks``...); ``/`` nests folders.
        params: the parameters that change the content (JSON-serialisable).
        inputs: fingerprints of the inputs (``{"corpus": ..., "queries": ...}``).
        label: human-readable prefix of the folder name (a model name, a chunker spec).
        root: the store's root (default ``<home>/cache``).

    Attributes:
        fields: ``{"format", "stage", **params, **inputs}``, the key's content (flat, so a
            ``meta.json`` reads ``fields["corpus"]``; a name in both *params* and *inputs* is a
            ``ValueError``).
        key: 24 hex chars of :func:`key_of` over *fields*.
        path: the artifact's folder.
    """

    def __init__(
        self,
        stage: str,
        params: Mapping[str, Any],
        inputs: Mapping[str, Any] | None = None,
        *,
        label: str = "",
        root: str | Path | None = None,
    ):
        self.stage = stage
        inputs = dict(inputs or {})
        clash = sorted(set(params) & (set(inputs) | {"format", "stage"}))
        if clash:
            raise ValueError(f"artifact {stage}: key fields named twice: {', '.join(clash)}")
        self.fields = {"format": FORMAT, "stage": stage, **params, **inputs}
        self.key = key_of(self.fields)
        base = Path(root) if root is not None else home.home() / "cache"
        self.path = base.joinpath(*stage.split("/")) / f"{slug(label)}-{self.key}"

    def meta(self) -> dict | None:
        """The ``meta.json`` of a complete artefact whose key fields match, else ``None`` (an
        unreadable or foreign ``meta.json`` is logged and ignored)."""
        meta_path = self.path / "meta.json"
        if not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("ignoring unreadable cache %s (%s)", meta_path, exc)
            return None
        if _canonical(meta.get("fields")) != _canonical(self.fields):
            log.warning("cache %s was written for other parameters; it is not reused", self.path)
            return None
        return meta

    def discard(self) -> None:
        """Remove the artifact (a damaged one is rebuilt by the next :meth:`build`)."""
        shutil.rmtree(self.path, ignore_errors=True)

    @contextlib.contextmanager
    def build(self) -> Iterator[tuple[Path, dict]]:
        """Yield ``(staging_folder, extra_meta)``; on success the folder is renamed into place
        with a ``meta.json`` holding the key fields plus *extra_meta* (written last). On error
        nothing is kept. When another process finished the same artifact first, theirs is kept."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        clean_stale(self.path.parent)  # staging folders of killed builds
        staging = Path(
            make_temp_dir(self.path.parent, staging_prefix(self.path.name), ".tmp")
        )  # the user's umask applies (mkdtemp made it 0700)
        extra: dict = {}
        try:
            yield staging, extra
            meta = {
                "fields": self.fields,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "nuggetbench": __version__,
                **extra,
            }
            with atomic_write(staging / "meta.json") as fh:
                json.dump(meta, fh, indent=1, default=str)
            if self.path.exists():
                shutil.rmtree(self.path, ignore_errors=True)
            try:
                os.replace(staging, self.path)
            except OSError:
                shutil.rmtree(staging, ignore_errors=True)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def check(self, cond: bool, what: str) -> None:
        """Raise :class:`CacheError` naming the folder when *cond* is false."""
        if not cond:
            raise CacheError(
                f"cache {self.path} is inconsistent ({what}); delete that folder and run again"
            )


def artifact(
    stage: str,
    params: Mapping[str, Any],
    inputs: Mapping[str, Any] | None = None,
    *,
    label: str = "",
    root: str | Path | None = None,
) -> Artifact:
    """Shorthand for :class:`Artifact`."""
    return Artifact(stage, params, inputs, label=label, root=root)


class Slot:
    """A named output in a fixed place: ``<root>/<name>.jsonl`` rows and ``<name>.meta.json``.

    Args:
        root: the folder (created on write).
        name: the output's name (a builder stage).
    """

    def __init__(self, root: str | Path, name: str):
        self.root = Path(root)
        self.name = name

    @staticmethod
    def key(stage: str, params: Any, inputs: Iterable[str] = ()) -> str:
        """16 hex chars over the stage name, its JSON parameters and its input keys."""
        return key_of(
            {"stage": stage, "params": params, "inputs": list(inputs), "format": FORMAT},
            length=16,
        )

    @property
    def rows_path(self) -> Path:
        return self.root / f"{self.name}.jsonl"

    @property
    def meta_path(self) -> Path:
        return self.root / f"{self.name}.meta.json"

    def meta(self) -> dict[str, Any] | None:
        """The slot's meta, or ``None`` when absent or unreadable."""
        if not self.meta_path.is_file():
            return None
        try:
            return json.loads(self.meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            return None

    def done(self, key: str) -> bool:
        """True when the rows exist and the meta records *key*."""
        meta = self.meta()
        return bool(meta) and meta.get("key") == key and self.rows_path.is_file()

    def write(
        self,
        key: str,
        rows: Iterable[dict[str, Any]],
        info: dict[str, Any] | Callable[[], dict[str, Any]],
    ) -> dict[str, Any]:
        """Write the rows, then the meta (``stage``, ``key``, ``rows`` and *info*, which may be a
        callable evaluated after the rows are written); returns the meta."""
        n = write_jsonl(self.rows_path, rows)
        meta = {"stage": self.name, "key": key, "rows": n, **(info() if callable(info) else info)}
        with atomic_write(self.meta_path) as fh:
            fh.write(
                json.dumps(meta, ensure_ascii=False, indent=2, sort_keys=True, default=str) + "\n"
            )
        return meta

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows (in written order).

        Raises:
            FormatError: a line is not JSON (the file was edited or damaged: run the stage again).
        """
        for _, row in iter_jsonl(
            self.rows_path, hint="damaged stage file; run the stage again with --force"
        ):
            yield row


# --- seeing and clearing the caches ---------------------------------------------------------------
@dataclass(frozen=True)
class CacheEntry:
    """One thing under the cache root: an artifact folder, a stray staging folder, or a file
    kept outside artifacts (the LLM cache's SQLite file).

    Attributes:
        kind: where it sits below the root (``bm25``, ``runs``, ``embeddings/dense``, ``llm``).
        path: the folder or file.
        bytes: its size on disk (sum of its files).
        modified: the newest modification time of its files (seconds since the epoch).
    """

    kind: str
    path: Path
    bytes: int
    modified: float


def cache_root() -> Path:
    """``<NUGGETBENCH_HOME>/cache``: the root of every cache (may not exist yet)."""
    return home.home() / "cache"


#: What nuggetbench caches under the root, by kind (the folder below ``cache/``): every
#: artifact stage and ``cache_dir`` folder the sources name (a test reads them there).
CACHE_KINDS = {
    "bm25": "BM25 indexes (bm25s)",
    "lucene": "Lucene indexes (bm25:backend=lucene)",
    "pisa/index": "PISA forward indexes (bm25:backend=pisa)",
    "pisa/bm25": "PISA block-max BM25 indexes, one per k1, b (bm25:backend=pisa)",
    "runs": "runs served by the run cache",
    "embeddings/dense": "corpus embeddings of dense models",
    "embeddings/sparse": "corpus vectors of learned sparse models",
    "embeddings/colbert": "corpus token embeddings of ColBERT models",
    "chunks": "chunked corpora (notebooks, code)",
    "llm": "LLM answers (one SQLite file)",
    "jsonl-index": "offset indexes of read-only JSONL corpora",
    "huggingface": "Hugging Face downloads of hub datasets",
}


def cache_kinds(root: str | Path | None = None) -> list[str]:
    """The kinds :data:`CACHE_KINDS` names and those found under *root* (default
    :func:`cache_root`), sorted."""
    found = {e.kind for e in cache_entries(root)}
    return sorted(set(CACHE_KINDS) | found)


def unknown_kinds(kinds: Iterable[str], root: str | Path | None = None) -> list[str]:
    """The *kinds* that name no kind of :func:`cache_kinds` nor a prefix of one
    (``embeddings`` covers ``embeddings/dense``)."""
    known = cache_kinds(root)
    return [
        k
        for k in kinds
        if not any(x == k.strip("/") or x.startswith(k.strip("/") + "/") for x in known)
    ]


def cache_entries(root: str | Path | None = None, kinds: Iterable[str] = ()) -> list[CacheEntry]:
    """Every artifact (a folder with ``meta.json``), staging folder and loose file under *root*
    (default :func:`cache_root`), sorted by kind then path; only the given *kinds* (a kind or a
    prefix of one: ``embeddings`` covers ``embeddings/dense``) when some are named."""
    base = Path(root) if root is not None else cache_root()
    wanted = [k.strip("/") for k in kinds]
    out: list[CacheEntry] = []
    if not base.is_dir():
        return out
    stack = [base]
    while stack:
        folder = stack.pop()
        for child in sorted(folder.iterdir()):
            kind = folder.relative_to(base).as_posix()
            whole = child.is_file() or _is_artifact(child) or not _holds_artifacts(child)
            if child.is_dir() and not whole:
                stack.append(child)
                continue
            if (
                child.is_dir()
                and not _is_artifact(child)
                and not any(p.is_file() for p in child.rglob("*"))
            ):
                continue  # an emptied kind folder
            kind = kind if kind != "." else child.name
            if wanted and not any(kind == k or kind.startswith(k + "/") for k in wanted):
                continue
            size, newest = _usage(child)
            out.append(CacheEntry(kind, child, size, newest))
    return sorted(out, key=lambda e: (e.kind, str(e.path)))


_KEYED = re.compile(r"-[0-9a-f]{16,64}$")


def _is_artifact(folder: Path) -> bool:
    """An artifact folder (``<label>-<key>``, or one with ``meta.json``) or a staging one."""
    return (
        bool(_KEYED.search(folder.name))
        or (folder / "meta.json").exists()
        or folder.name.endswith(".tmp")
    )


def _holds_artifacts(folder: Path) -> bool:
    """Whether artifacts lie below *folder* (else it is one foreign cache: hub downloads)."""
    return any(p.is_dir() and _is_artifact(p) for p in folder.rglob("*"))


def _usage(path: Path) -> tuple[int, float]:
    """``(bytes, newest mtime)`` of a file or of every file under a folder."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    stats = [p.stat() for p in files]
    newest = max((s.st_mtime for s in stats), default=path.stat().st_mtime)
    return sum(s.st_size for s in stats), newest


def remove_cache_entries(entries: Iterable[CacheEntry]) -> int:
    """Delete *entries* (folders and files); returns the bytes freed. An entry already gone is
    skipped."""
    freed = 0
    for entry in entries:
        if entry.path.is_dir():
            shutil.rmtree(entry.path, ignore_errors=True)
        elif entry.path.exists():
            entry.path.unlink()
        else:
            continue
        freed += entry.bytes
    return freed


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """``"30d"`` -> seconds: a number followed by ``s``, ``m``, ``h``, ``d`` or ``w``.

    Raises:
        InputError: any other text (the accepted forms are named).
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if match is None:
        raise InputError(
            f"age {text!r}: write a number and a unit, e.g. 30d, 12h, 2w (s, m, h, d, w)"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]
