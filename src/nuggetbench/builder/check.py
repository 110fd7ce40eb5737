"""Checking a whole plan before any stage runs (``nuggetbench build --check PLAN``).

A build that fails at its fourth stage for want of a key or a file wastes the time (and the paid
calls) of the stages before it. :func:`plan_problems` lists every problem a plan's run would meet
that can be seen without running it: the questions file, the repository folders (or ``git`` for
clones), the calibration labels, the prompt versions, a writable output folder, and the LLM key of
the stages that call the model (its presence, never its value; a local server that needs no key
is a choice the plan states with ``[llm] no_api_key = true``). :func:`check_plan` raises them all
at once. Credentials among the plan's values were refused when the plan was read
(:func:`~.plan.check_values`).

:func:`plan_stages` says what a run would do with each stage without running any: it computes
each stage's key as the stage would (:mod:`.stages`: the questions file's size and time, the
repositories' commits, the options, who answers, the prompts, the inputs' keys) and compares it
with the key on disk, so a finished build reports its stages ``cached``; a stage that would run
calls the model only when it asks it something (the pool stage only with the ``subq`` or ``hyde``
technique). :func:`check_build` adds what can fail at the endpoint and costs nothing to learn
(:func:`~nuggetbench.llm.probe.probe_endpoint`: ``GET /models``, the model in the list, the key
accepted), only when a stage that would run calls the model.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from nuggetbench.builder import stages as st
from nuggetbench.builder.plan import Plan
from nuggetbench.builder.repos import prepare_repo
from nuggetbench.builder.store import StageStore
from nuggetbench.errors import InputError, NuggetbenchError, UnknownNameError, suggest
from nuggetbench.llm.probe import probe_endpoint
from nuggetbench.llm.prompts import load_prompt
from nuggetbench.llm.secrets import redact_url

__all__ = [
    "plan_problems",
    "check_plan",
    "plan_stages",
    "describe_plan",
    "check_build",
    "cached_answers",
]


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
            run: :func:`plan_stages`; ``False`` when a test transport replaces the endpoint).
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


def _key(plan: Plan, stage: str, keys: dict[str, str]) -> str | None:
    """The key *stage* would have, as the stage computes it, or ``None`` when it cannot be known
    without running something (an input's key is unknown, a repository still to clone, an input
    file missing): the stage then counts as one that runs."""
    try:
        if stage == "questions":
            return st.questions_key(plan)
        if stage == "corpus":
            for r in plan.repos:
                if r.url and not (plan.workdir / "repos" / r.name / ".git").exists():
                    return None  # a clone is a download: not made by a check
            return st.corpus_key(plan, [prepare_repo(r, plan.workdir) for r in plan.repos])
        makers = {
            "nuggets": st.nuggets_key,
            "pool": st.pool_key,
            "judge": st.judge_key,
            "export": st.export_key,
        }
        return makers[stage](plan, keys) if stage in makers else None
    except (KeyError, NuggetbenchError, OSError):
        return None


def plan_stages(
    plan: Plan, stage: str | None = None, *, read_cache: bool = True
) -> list[dict[str, Any]]:
    """What a run of *plan* (every stage, or ``--stage`` *stage*) would do with each stage,
    without running any.

    Returns:
        ``[{"stage", "action", "calls_model", "recorded"}]`` in stage order; ``action``:
        ``"run"``, ``"cached"`` (its output on disk has the key it would have: loaded, not
        run), ``"read"`` (an input of the ``--stage`` asked for), ``"missing"`` (such an input
        that is absent or stale: the run would stop) or ``"skip"``; ``calls_model``: the stage
        runs and sends requests to the model; ``recorded``: its summary from an earlier run.

    Raises:
        UnknownNameError: an unknown stage name.
    """
    if stage is not None and stage not in st.STAGES:
        raise UnknownNameError(
            f"unknown stage {stage!r}.{suggest(stage, st.STAGES)} Stages: {', '.join(st.STAGES)}"
        )
    store = StageStore(plan.workdir)
    wanted = set(st.STAGES) if stage is None else st.closure(stage)
    keys: dict[str, str] = {}
    rows = []
    for name in st.STAGES:
        key = _key(plan, name, keys)
        if key is not None:
            keys[name] = key
        done = key is not None and store.done(name, key)
        if name not in wanted or (name == "calibrate" and plan.calibration_labels is None):
            action = "skip"  # calibrate runs only against human labels
        elif stage is not None and name != stage:
            action = "read" if done else "missing"
        else:
            forced = (not read_cache and name in st.MODEL_STAGES) or (
                name == "export" and not (plan.output / "manifest.json").is_file()
            )
            action = "cached" if stage is None and done and not forced else "run"
        meta = store.meta(name)
        rows.append(
            {
                "stage": name,
                "action": action,
                "calls_model": action == "run" and st.calls_model(plan, name),
                "recorded": meta.get("summary", {}) if meta else None,
            }
        )
    return rows


def describe_plan(plan: Plan, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What ``build --check`` prints: the plan's sources, endpoint (credentials masked) and
    output, whether the key is set (never its value), the price known for the model, what a
    run would do with each stage and what is already on disk. Reads only; creates nothing.

    Args:
        plan: the parsed plan.
        rows: :func:`plan_stages`' rows (``None``: no stage rows).

    Returns:
        ``name``, ``output``, ``questions``, ``repos``, ``llm``, ``api_key``, ``price``
        (``[input, output]`` USD per million tokens, or ``None`` when ``[prices]`` names no
        price for the model), then ``stages`` (the rows), ``counts`` (questions limit and
        tags, repositories, retrievers, techniques) and ``llm_cache`` (``{"path", "answers"}``:
        ``answers`` is ``{stage: n}``, empty while the file does not exist).
    """
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
        "price": list(plan.llm.price) if plan.llm.price else None,
        "stages": list(rows or []),
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


def check_build(
    plan: Plan, *, stage: str | None = None, read_cache: bool = True, probe: bool = True
) -> dict[str, Any]:
    """Check *plan* as a build does before its first stage, probe the endpoint when a stage that
    would run calls the model (``GET /models``: it answers, serves the model, accepts the key),
    run nothing, and return :func:`describe_plan` with ``ready``, ``problems`` (what would make
    the run fail: the endpoint's, an input of ``--stage`` missing) and ``endpoint_check``
    (:meth:`~nuggetbench.llm.probe.EndpointProbe.as_dict`, or ``None`` when no stage calls the
    model or *probe* is false).

    Raises:
        UnknownNameError: an unknown stage name.
        InputError: the plan's own problems (files, prompts, output folder, the key), all at once.
    """
    rows = plan_stages(plan, stage, read_cache=read_cache)
    wanted = set(st.STAGES) if stage is None else st.closure(stage)
    calling = [r["stage"] for r in rows if r["calls_model"]]
    check_plan(plan, wanted, need_key=bool(calling))
    problems = [
        f"stage {stage!r} needs the output of stage {r['stage']!r}, which is "
        + ("missing" if r["recorded"] is None else "stale (the plan or its inputs changed)")
        + f": run `nuggetbench build PLAN --stage {r['stage']}` first, or the whole build"
        for r in rows
        if r["action"] == "missing"
    ]
    found = probe_endpoint(plan.llm) if calling and probe else None
    if found is not None and found.problem:
        problems.append(f"{found.problem} (stages that would ask it: {', '.join(calling)})")
    described = describe_plan(plan, rows)
    described.update(
        ready=not problems,
        problems=problems,
        endpoint_check=found.as_dict() if found is not None else None,
    )
    return described


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
