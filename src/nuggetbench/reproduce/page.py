"""``reproduce --report FILE.html``: one self-contained page, like Pyserini's 2CR pages.

Per recipe its source and summary line; per condition a table of datasets x measures whose
cells show the value obtained here above the published one, marked reproduced / not / skipped
(the reason in the cell's title and below the table), and the commands that give the numbers.
The page is rendered from ``templates/reproduce.html.j2`` with jinja2 (autoescaped), with its
CSS inline and no script: it opens from disk with no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from nuggetbench._atomic import atomic_write
from nuggetbench._version import __version__
from nuggetbench.reproduce.outcome import NOT_REPRODUCED, REPRODUCED, Reproduction, merge_counts

__all__ = ["render_reproductions_page", "write_reproductions_page"]

_CLASS = {REPRODUCED: "ok", NOT_REPRODUCED: "fail"}
_MARK = {REPRODUCED: "\u2713", NOT_REPRODUCED: "\u2717"}


def _cell(check) -> dict[str, Any]:
    digits = min(check.precision + 2, 8)
    diff = check.difference
    return {
        "cls": _CLASS.get(check.verdict, "skip"),
        "mark": _MARK.get(check.verdict, ""),
        "obtained": "skipped" if check.obtained is None else f"{check.obtained:.{digits}f}",
        "expected": f"{check.expected:.{check.precision}f}",
        "diff": "" if diff is None else f"{diff:+.{digits}f}",
        "title": "; ".join(t for t in (check.verdict, check.reason, check.note) if t),
    }


def _condition(rep: Reproduction, cond) -> dict[str, Any] | None:
    checks = [c for c in rep.checks if c.condition == cond.name]
    if not checks:
        return None
    datasets = list(dict.fromkeys(c.dataset for c in checks))
    rows = []
    for ds in datasets:
        by_measure = {c.measure: c for c in checks if c.dataset == ds}
        rows.append(
            {
                "dataset": ds,
                "cells": [_cell(by_measure[m]) if m in by_measure else None for m in cond.measures],
            }
        )
    reasons = list(
        dict.fromkeys(f"{c.dataset}: {t}" for c in checks for t in (c.reason, c.note) if t)
    )
    how = f"retriever {cond.retriever}" if cond.retriever else "published run files"
    extra = [f"profile {cond.profile}"] if cond.profile else []
    extra += [f"statistic: {cond.statistic}"] if cond.statistic != "mean" else []
    return {
        "name": cond.name,
        "title": cond.title,
        "how": "; ".join([how, *extra]),
        "measures": list(cond.measures),
        "rows": rows,
        "reasons": reasons,
        "commands": rep.commands.get(cond.name, []),
    }


def _recipe(rep: Reproduction) -> dict[str, Any]:
    r = rep.recipe
    s = r.source
    conditions = [x for x in (_condition(rep, c) for c in r.conditions) if x is not None]
    return {
        "name": r.name,
        "title": r.title,
        "description": r.description,
        "source": {
            "kind": s.kind,
            "name": s.name,
            "url": s.url,
            "where": ", ".join(p for p in (s.version, s.file, s.table) if p),
            "precision": s.precision,
            "citation": s.citation,
        },
        "summary": rep.summary_line(),
        "wall": "" if rep.dry_run else f"{rep.wall_seconds:.1f} s",
        "conditions": conditions,
    }


def render_reproductions_page(reproductions: Sequence[Reproduction]) -> str:
    """The page's HTML for *reproductions*."""
    text = resources.files("nuggetbench.reproduce").joinpath("templates", "reproduce.html.j2")
    env = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(text.read_text("utf-8"))
    return template.render(
        recipes=[_recipe(rep) for rep in reproductions],
        overall=merge_counts(list(reproductions)),
        version=__version__,
        built=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def write_reproductions_page(reproductions: Sequence[Reproduction], path: str | Path) -> Path:
    """Write :func:`render_reproductions_page` to *path* atomically; returns the path."""
    path = Path(path)
    with atomic_write(path) as fh:
        fh.write(render_reproductions_page(reproductions))
    return path
