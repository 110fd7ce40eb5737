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
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from . import home
from ._atomic import atomic_write, clean_stale, staging_prefix
from ._version import __version__
from .errors import CacheError
from .jsonl import iter_jsonl, write_jsonl

__all__ = [
    "FORMAT",
    "Artifact",
    "Slot",
    "artifact",
    "iter_jsonl",
    "key_of",
    "slug",
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
            tempfile.mkdtemp(
                prefix=staging_prefix(self.path.name), suffix=".tmp", dir=self.path.parent
            )
        )
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
            os.chmod(staging, 0o755)  # mkdtemp made it private; caches are plain shared files
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
