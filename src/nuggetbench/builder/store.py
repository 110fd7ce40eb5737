"""The builder's stage outputs: one :class:`~nuggetbench.store.Slot` of the artifact store per stage.

A stage's key (:func:`stage_key`) hashes its parameters and the keys of the stages it reads, so a
stage whose key is unchanged is skipped on a re-run, and a changed plan recomputes exactly the
stages it affects. Each stage writes ``<stage>.jsonl`` then ``<stage>.meta.json`` (holding the key)
atomically in the build folder, the meta last, so a stage killed mid-write is recomputed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from nuggetbench.store import Slot

__all__ = ["StageStore", "stage_key"]


def stage_key(stage: str, params: Any, inputs: Iterable[str] = ()) -> str:
    """16 hex chars of SHA-256 over the stage name, its JSON parameters and its input keys."""
    return Slot.key(stage, params, inputs)


class StageStore:
    """The stage slots of one build folder."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def slot(self, stage: str) -> Slot:
        """The slot of *stage*."""
        return Slot(self.folder, stage)

    def rows_path(self, stage: str) -> Path:
        """``<folder>/<stage>.jsonl``."""
        return self.slot(stage).rows_path

    def meta(self, stage: str) -> dict[str, Any] | None:
        """The stage's meta, or ``None`` when absent or unreadable."""
        return self.slot(stage).meta()

    def done(self, stage: str, key: str) -> bool:
        """True when the stage's output exists and was made with *key*."""
        return self.slot(stage).done(key)

    def write(
        self,
        stage: str,
        key: str,
        rows: Iterable[dict[str, Any]],
        info: dict[str, Any] | Callable[[], dict[str, Any]],
    ) -> dict[str, Any]:
        """Write the rows, then the meta; returns the meta (see :meth:`Slot.write`)."""
        return self.slot(stage).write(key, rows, info)

    def rows(self, stage: str) -> Iterator[dict[str, Any]]:
        """The rows of a stage (in written order).

        Raises:
            FormatError: a line is not JSON (the stage file was edited or damaged).
        """
        return self.slot(stage).rows()
