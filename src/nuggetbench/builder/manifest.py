"""The build's manifest and run reports (see :mod:`.pipeline`)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nuggetbench._atomic import atomic_write
from nuggetbench._version import __version__
from nuggetbench.builder.store import StageStore
from nuggetbench.llm.prompts import load_prompt

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.builder.pipeline import BuildReport
    from nuggetbench.builder.plan import Plan

log = logging.getLogger(__name__)


def build_manifest(
    plan: Plan, store: StageStore, keys: dict[str, str], filter_report: dict[str, Any]
) -> dict[str, Any]:
    """The benchmark's ``manifest.json``: plan, sources with commits, prompt versions, model,
    options, counts, cost and stage keys. Deterministic: usage counts every distinct request of
    the build (from the stage metas), not what one process paid."""
    metas = {s: store.meta(s) or {} for s in ("questions", "corpus", "nuggets", "pool", "judge")}
    usage: dict[str, Any] = {}
    for s in ("nuggets", "pool", "judge"):
        usage.update(metas[s].get("usage", {}))
    totals = {
        k: sum(u.get(k) or 0 for u in usage.values())
        for k in ("requests", "prompt_tokens", "completion_tokens")
    }
    costs = [u.get("cost_usd") for u in usage.values()]
    totals["cost_usd"] = round(sum(costs), 6) if costs and None not in costs else None
    p = plan
    return {
        "name": p.name,
        "format": "freshstack",
        "nuggetbench_version": __version__,
        "plan": p.raw,
        "sources": {
            "questions": {
                "path": str(p.questions.source),
                "report": metas["questions"].get("report"),
            },
            "repositories": metas["corpus"].get("repos", []),
        },
        "prompts": {
            n: {"version": load_prompt(n, v).version, "sha256": load_prompt(n, v).sha256}
            for n, v in (
                ("nuggets", p.nuggets.prompt_version),
                ("judge", p.judge.prompt_version),
                ("subq", p.rewrite.subq_version),
                ("hyde", p.rewrite.hyde_version),
            )
        },
        "llm": {
            **p.llm.describe(),
            "price_per_million_tokens": list(p.llm.price) if p.llm.price else None,
        },
        "options": {
            "nuggets": asdict(p.nuggets),
            "rewrite": asdict(p.rewrite),
            "pooling": asdict(p.pooling),
            "judge": asdict(p.judge),
            "filter": asdict(p.filter),
            "corpus": p.corpus.describe(),
        },
        "counts": {
            "questions": metas["questions"].get("summary"),
            "corpus": metas["corpus"].get("stats"),
            "nuggets": metas["nuggets"].get("summary"),
            "pool": metas["pool"].get("summary"),
            "judge": metas["judge"].get("summary"),
            "filter": filter_report,
        },
        "cost": {"per_stage": usage, "total": totals},
        "stage_keys": dict(keys),
    }


def fill_report(report: BuildReport, plan: Plan, store: StageStore) -> None:
    """Copy the figures the CLI shows (questions, tags, corpus, filter, cost) into *report*."""
    q = (store.meta("questions") or {}).get("report") or {}
    report.questions = {k: v for k, v in q.items() if k not in ("top_tags", "malformed")}
    report.questions["malformed_rows"] = q.get("malformed", [])
    report.top_tags = [tuple(t) for t in q.get("top_tags", [])]
    report.corpus_stats = (store.meta("corpus") or {}).get("stats") or {}
    export = store.meta("export")
    if export is not None and (plan.output / "manifest.json").is_file():
        try:
            manifest = json.loads((plan.output / "manifest.json").read_text(encoding="utf-8"))
            report.filter = manifest.get("counts", {}).get("filter") or {}
            report.cost = manifest.get("cost", {}).get("total") or {}
        except (OSError, json.JSONDecodeError):  # pragma: no cover
            pass


def write_run_log(
    path: Path, stage: str | None, report: BuildReport, totals: dict[str, Any]
) -> None:
    """``last_run.json``: when the run finished, its stages and what this process paid."""
    try:
        with atomic_write(path) as fh:
            fh.write(
                json.dumps(
                    {
                        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                        "stage": stage,
                        "stages": report.stages,
                        "usage": report.usage,
                        "totals": totals,
                    },
                    indent=2,
                    default=str,
                )
                + "\n"
            )
    except OSError as exc:  # pragma: no cover - a full disk should not hide the real error
        log.warning("could not write last_run.json: %s", exc)


def tree_stamp(root: Path) -> str:
    """A cheap fingerprint of a working tree (paths, sizes, mtimes) for trees without a clean commit."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            h.update(f"{rel}\x1f{st.st_size}\x1f{st.st_mtime_ns}\x1e".encode())
    return h.hexdigest()[:16]


__all__ = ["build_manifest", "fill_report", "write_run_log", "tree_stamp"]
