"""Checking a whole plan before any stage runs (``nuggetbench build --check PLAN``).

A build that fails at its fourth stage for want of a key or a file wastes the time (and the paid
calls) of the stages before it. :func:`plan_problems` lists every problem a plan's run would meet
that can be seen without running it: the questions file, the repository folders (or ``git`` for
clones), the calibration labels, the prompt versions, a writable output folder, and the LLM key of
the stages that call the model (its presence, never its value; a local server that needs no key
is a choice the plan states with ``[llm] no_api_key = true``). :func:`check_plan` raises them all
at once. Credentials among the plan's values were refused when the plan was read
(:func:`~.plan.check_values`).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nuggetbench.builder.plan import Plan
from nuggetbench.builder.store import StageStore
from nuggetbench.errors import InputError, NuggetbenchError
from nuggetbench.llm.prompts import load_prompt
from nuggetbench.llm.secrets import redact_url

__all__ = ["plan_problems", "check_plan", "describe_plan", "cached_answers", "LLM_STAGES"]

#: The stages that call the model.
LLM_STAGES = ("nuggets", "pool", "judge")


def _writable(folder: Path) -> bool:
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


def plan_problems(
    plan: Plan, stages: set[str] | frozenset[str], *, need_key: bool = True
) -> list[str]:
    """Every problem that running *stages* of *plan* would meet, as messages (``[]``: none).

    Args:
        plan: the parsed plan.
        stages: the stages that will run or be read (a stage and its inputs).
        need_key: check the LLM key (the caller says whether a stage that calls the model will
            run: a whole build, or ``--stage`` of one of :data:`LLM_STAGES`; ``False`` when a
            test transport replaces the endpoint).
    """
    out: list[str] = []
    if "questions" in stages and not plan.questions.source.is_file():
        out.append(f"[questions] source {plan.questions.source} does not exist; fix the path")
    if "corpus" in stages:
        for repo in plan.repos:
            if repo.path:
                root = Path(repo.path).expanduser()
                if not root.exists():
                    out.append(
                        f"repository {repo.name!r}: path {root} does not exist; fix [[repos]] path "
                        "in the plan (relative paths are relative to the plan file)"
                    )
                elif not root.is_dir():
                    out.append(f"repository {repo.name!r}: {root} is not a folder")
            elif shutil.which("git") is None:
                out.append(
                    f"repository {repo.name!r} is cloned from its url, but git is not installed"
                )
    labels = plan.calibration_labels
    if "calibrate" in stages and labels is not None and not labels.is_file():
        out.append(f"[calibration] labels file {plan.calibration_labels} does not exist")
    for name, version in (
        ("nuggets", plan.nuggets.prompt_version),
        ("judge", plan.judge.prompt_version),
        ("subq", plan.rewrite.subq_version),
        ("hyde", plan.rewrite.hyde_version),
    ):
        try:
            load_prompt(name, version)
        except NuggetbenchError as exc:
            out.append(str(exc))
    if not _writable(plan.output):
        out.append(f"the output folder {plan.output} cannot be created or written; fix output")
    if need_key:
        problem = plan.llm.key_problem()
        if problem:
            out.append(problem)
    return out


def check_plan(plan: Plan, stages: set[str] | frozenset[str], *, need_key: bool = True) -> None:
    """Raise every problem of :func:`plan_problems` at once.

    Raises:
        InputError: ``<plan>: the plan cannot run: <problem>; <problem>...``.
    """
    problems = plan_problems(plan, stages, need_key=need_key)
    if problems:
        where = str(plan.path) if plan.path else "the plan"
        raise InputError(
            f"{where}: the plan cannot run ({len(problems)} problem"
            f"{'s' if len(problems) > 1 else ''}): " + "; ".join(problems)
        )


def describe_plan(plan: Plan, actions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What ``build --check`` prints: the plan's sources, endpoint (credentials masked) and
    output, whether the key is set (never its value), and what a run would do with each stage
    and what is already on disk. Reads only; creates nothing.

    Args:
        plan: the parsed plan.
        actions: ``{stage: "run" | "read" | "skip"}`` in stage order (``read``: an input of the
            ``--stage`` asked for, which must have been recorded); ``None``: no stage rows.

    Returns:
        ``name``, ``output``, ``questions``, ``repos``, ``llm``, ``api_key``, then ``stages``
        (``[{"stage", "action", "calls_model", "recorded"}]``; ``recorded``: the stage's summary
        from an earlier run, else ``None``), ``counts`` (questions limit and tags,
        repositories, retrievers, techniques) and ``llm_cache`` (``{"path", "answers"}``:
        ``answers`` is ``{stage: n}``, empty while the file does not exist).
    """
    store = StageStore(plan.workdir)
    rows = []
    for stage, action in (actions or {}).items():
        meta = store.meta(stage)
        rows.append(
            {
                "stage": stage,
                "action": action,
                "calls_model": stage in LLM_STAGES,
                "recorded": meta.get("summary", {}) if meta else None,
            }
        )
    qf = plan.questions.filter
    return {
        "name": plan.name,
        "output": str(plan.output),
        "questions": str(plan.questions.source),
        "repos": [r.path or redact_url(r.url) for r in plan.repos],
        "llm": plan.llm.describe(),
        "api_key": "not needed (no_api_key = true)"
        if plan.llm.no_api_key
        else ("set" if plan.llm.api_key() else "missing"),
        "stages": rows,
        "counts": {
            "question_limit": qf.limit,
            "tags": list(qf.tags),
            "repositories": len(plan.repos),
            "retrievers": list(plan.pooling.retrievers),
            "techniques": list(plan.pooling.techniques),
        },
        "llm_cache": {
            "path": str(plan.workdir / "llm_cache.sqlite"),
            "answers": cached_answers(plan.workdir / "llm_cache.sqlite"),
        },
    }


def cached_answers(path: Path) -> dict[str, int]:
    """``{stage: answers}`` in the build's LLM cache, read-only (nothing is created); ``{}``
    when the file does not exist. An unreadable file reads as ``{"unreadable": 0}``."""
    if not path.is_file():
        return {}
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT stage, COUNT(*) FROM responses GROUP BY stage").fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return {"unreadable": 0}
    return {str(stage): int(n) for stage, n in sorted(rows)}
