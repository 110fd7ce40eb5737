"""Stage outputs on disk: JSONL rows plus a ``<stage>.meta.json`` holding the stage's key.

A stage's key hashes its parameters and the keys of the stages it reads, so a stage whose key is
unchanged is skipped on a re-run, and a changed plan recomputes exactly the stages it affects.
Files are written atomically (``nuggetbench._atomic.atomic_write``), the meta file last, so a stage
killed mid-write leaves no meta and is recomputed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .._atomic import atomic_write
from ..errors import FormatError

FORMAT = 1


def stage_key(stage: str, params: Any, inputs: Iterable[str] = ()) -> str:
    """16 hex chars of SHA-256 over the stage name, its JSON parameters and its input keys."""
    blob = json.dumps(
        {"stage": stage, "params": params, "inputs": list(inputs), "format": FORMAT},
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class StageStore:
    """Reads and writes the stage files of one build folder."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def rows_path(self, stage: str) -> Path:
        """``<folder>/<stage>.jsonl``."""
        return self.folder / f"{stage}.jsonl"

    def meta_path(self, stage: str) -> Path:
        """``<folder>/<stage>.meta.json``."""
        return self.folder / f"{stage}.meta.json"

    def meta(self, stage: str) -> dict[str, Any] | None:
        """The stage's meta, or ``None`` when absent or unreadable."""
        path = self.meta_path(stage)
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            return None

    def done(self, stage: str, key: str) -> bool:
        """True when the stage's output exists and was made with *key*."""
        meta = self.meta(stage)
        return bool(meta) and meta.get("key") == key and self.rows_path(stage).is_file()

    def write(
        self,
        stage: str,
        key: str,
        rows: Iterable[dict[str, Any]],
        info: dict[str, Any] | Callable[[], dict[str, Any]],
    ) -> dict[str, Any]:
        """Write the rows, then the meta (``key`` and *info*, which may be a callable evaluated after
        the rows are written); returns the meta."""
        n = 0
        with atomic_write(self.rows_path(stage)) as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
        meta = {"stage": stage, "key": key, "rows": n, **(info() if callable(info) else info)}
        with atomic_write(self.meta_path(stage)) as fh:
            fh.write(
                json.dumps(meta, ensure_ascii=False, indent=2, sort_keys=True, default=str) + "\n"
            )
        return meta

    def rows(self, stage: str) -> Iterator[dict[str, Any]]:
        """The rows of a stage (in written order).

        Raises:
            FormatError: a line is not JSON (the stage file was edited or damaged: run the stage again).
        """
        path = self.rows_path(stage)
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise FormatError(
                            path,
                            lineno,
                            f"damaged stage file ({exc.msg}); run the stage again with --force",
                        ) from None


__all__ = ["StageStore", "stage_key"]
