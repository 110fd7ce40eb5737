"""Run a build plan stage by stage, resumably: questions, corpus, nuggets, pool, judge, export, calibrate.

Each stage writes its rows and a meta file under ``<output>/_build/`` (:mod:`.store`); a stage whose
key (its parameters and its inputs' keys) is unchanged is skipped on a re-run. Every LLM answer is
in ``<output>/_build/llm_cache.sqlite`` as soon as it arrives, so a build killed inside a stage
re-sends only the requests that never got an answer. A stage whose LLM answers stay unusable (prose
instead of JSON, pairs the judge never answered) is **not** recorded as done: the build stops with
:class:`~nuggetbench.errors.StageFailedError` saying how many failed and why, the unusable answers
are removed from the cache, and the next run re-sends exactly the failed requests
(``accept_failures=True`` records the stage with its failures listed instead). ``run(stage=...)`` runs one stage, reading its
inputs from earlier runs (an input that is missing or stale is an error naming the stage to run).
The keys of the stages that ask the model name the endpoint (``[llm] base_url`` normalised,
credentials removed) beside the model, so a build pointed at another server runs them again; with
``read_cache=False`` (``build --no-cache``) those stages run again and every request is sent again.

The benchmark (:mod:`.export`) is written to ``<output>/``; its ``manifest.json`` is deterministic
(no timestamps; usage counts every distinct request of the build, paid now or earlier), so an
interrupted and resumed build writes the same files as an uninterrupted one. What this process paid
is in :attr:`BuildReport.usage` and ``<output>/_build/last_run.json``.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nuggetbench.builder import stages
from nuggetbench.builder.check import check_build, check_plan, plan_stages
from nuggetbench.builder.manifest import fill_report, write_run_log
from nuggetbench.builder.plan import Plan
from nuggetbench.builder.stages import MODEL_STAGES, NEEDS, STAGES, closure
from nuggetbench.builder.store import StageStore
from nuggetbench.errors import InputError, StageFailedError, UnknownNameError, suggest
from nuggetbench.llm.cache import UsageLedger
from nuggetbench.llm.client import LLMClient
from nuggetbench.progress import Meter

log = logging.getLogger(__name__)

_DETERMINISTIC = ("requests", "prompt_tokens", "completion_tokens", "cost_usd")


@dataclass
class BuildReport:
    """What a build did: per stage ``{"status": "ran" | "cached" | "skipped" | "failed", ...}``, this
    process's LLM usage per stage (paid and cached calls), and the output folder."""

    output: Path
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    top_tags: list[tuple[str, int]] = field(default_factory=list)
    questions: dict[str, Any] = field(default_factory=dict)
    corpus_stats: dict[str, Any] = field(default_factory=dict)
    filter: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)


class Builder:
    """Runs the stages of a :class:`~.plan.Plan`.

    Args:
        plan: the plan.
        show_progress: show progress (:class:`~nuggetbench.progress.Meter`: a bar, or lines in
            a log, as the command line configured); the LLM stages' meters add the requests
            sent, cached and failed and the running cost.
        transport: for tests, passed to :class:`~.llm.LLMClient`.
        accept_failures: record a stage whose LLM answers partly failed (the failures are listed
            in its meta) instead of stopping the build.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        show_progress: bool = False,
        transport=None,
        accept_failures: bool = False,
        read_cache: bool = True,
    ):
        self.plan = plan
        self.read_cache = read_cache
        self.show_progress = show_progress
        self.accept_failures = accept_failures
        self.store = StageStore(plan.workdir)
        self.ledger = UsageLedger(plan.llm.price)
        self._transport = transport
        self._client: LLMClient | None = None
        self.keys: dict[str, str] = {}
        self.report = BuildReport(plan.output)
        self.values: dict[str, Any] = {}

    # --- plumbing ---------------------------------------------------------------------
    def client(self) -> LLMClient:
        """The LLM client (built on first use; cache ``<output>/_build/llm_cache.sqlite``)."""
        if self._client is None:
            self._client = LLMClient(
                self.plan.llm,
                self.plan.workdir / "llm_cache.sqlite",
                ledger=self.ledger,
                transport=self._transport,
                read_cache=self.read_cache,
            )
        return self._client

    @contextmanager
    def progress(self, total: int, desc: str, unit: str = "q"):
        """A progress callback ``step(n)`` over *total* items of an LLM stage (questions,
        batches), followed by the build's LLM usage so far (:meth:`UsageLedger.brief`)."""
        with Meter(desc, total, unit, show=self.show_progress, stats=self.ledger.brief) as meter:
            yield meter

    def usage(self, *names: str) -> dict[str, Any]:
        """This build's deterministic LLM usage of the ledger entries *names*."""
        summary = self.ledger.summary()
        return {n: {k: summary[n][k] for k in _DETERMINISTIC} for n in names if n in summary}

    def stage(
        self, stage: str, key: str, compute, load, *, target: str | None, force: bool = False
    ) -> Any:
        """Load a stage when its output has *key* (and it is not the target), else compute it.

        *compute* returns ``(value, rows, info)``; *info* may be a callable evaluated after the rows
        are written (a streamed stage knows its figures only then). An *info* with
        ``failures["count"] > 0`` is not written (unless ``accept_failures``).

        Raises:
            StageFailedError: the stage had failures (see the module docstring).
        """
        self.keys[stage] = key
        if target is not None and stage != target:
            if not self.store.done(stage, key):
                state = (
                    "is missing"
                    if self.store.meta(stage) is None
                    else "is stale (the plan or its inputs changed)"
                )
                raise InputError(
                    f"stage {target!r} needs the output of stage {stage!r}, which {state}: run "
                    f"`nuggetbench build PLAN --stage {stage}` first, or the whole build"
                )
            self.report.stages.setdefault(stage, {"status": "cached"})
            return load()
        force = force or (not self.read_cache and stage in MODEL_STAGES)
        if target is None and not force and self.store.done(stage, key):
            self.report.stages[stage] = {
                "status": "cached",
                **(self.store.meta(stage) or {}).get("summary", {}),
            }
            return load()
        started = time.time()
        value, rows, info = compute()
        failed = info.get("failures") if isinstance(info, dict) else None
        if failed and failed["count"] and not self.accept_failures:
            self.report.stages[stage] = {
                "status": "failed",
                "failed": f"{failed['count']} of {failed['of']} {failed['unit']}",
            }
            raise StageFailedError(failure_message(stage, failed))
        meta = self.store.write(stage, key, rows, info)
        self.report.stages[stage] = {
            "status": "ran",
            "seconds": round(time.time() - started, 2),
            **meta.get("summary", {}),
        }
        return value

    # --- driver -----------------------------------------------------------------------
    def run(self, stage: str | None = None) -> BuildReport:
        """Run every stage (``stage=None``) or one stage; see the module docstring.

        Raises:
            UnknownNameError: an unknown stage name.
            InputError: the plan cannot run (every problem :func:`~.check.plan_problems` sees,
                raised before any stage runs; the LLM key's absence among them when a stage
                that would run calls the model: :func:`~.check.plan_stages`), a missing or stale
                input of the stage asked for.
            StageFailedError: a stage's LLM answers stayed unusable (how many and why).
            LLMError / BudgetError: the endpoint failed or a budget is spent (answers so far are
                cached: run again to resume).
        """
        if stage is not None and stage not in STAGES:
            raise UnknownNameError(
                f"unknown stage {stage!r}.{suggest(stage, STAGES)} Stages: {', '.join(STAGES)}"
            )
        wanted = set(STAGES) if stage is None else closure(stage)
        rows = plan_stages(self.plan, stage, read_cache=self.read_cache)
        need_key = self._transport is None and any(r["calls_model"] for r in rows)
        check_plan(self.plan, wanted, need_key=need_key)
        try:
            if "questions" in wanted:
                questions = stages.questions(self, stage)
            if "corpus" in wanted:
                corpus = stages.corpus(self, stage)
            if "nuggets" in wanted:
                nuggets = stages.nuggets(self, questions, stage)
            if "pool" in wanted:
                pool = stages.pool(self, questions, nuggets, corpus, stage)
            if "judge" in wanted:
                judgments = stages.judge(self, questions, nuggets, pool, corpus, stage)
            if "export" in wanted:
                stages.export(self, questions, nuggets, judgments, corpus, stage)
            if "calibrate" in wanted:
                stages.calibrate(self, judgments, stage)
        finally:
            self.report.usage = self.ledger.summary()
            fill_report(self.report, self.plan, self.store)
            write_run_log(
                self.plan.workdir / "last_run.json", stage, self.report, self.ledger.totals()
            )
            if self._client is not None:
                self._client.close()
        return self.report


def failure_message(stage: str, failed: dict[str, Any]) -> str:
    """The error of a stage with failures: how many, why (the commonest reasons), what to do."""
    reasons = list(failed["reasons"].items())
    why = "; ".join(f"{n} x {text[:200]}" for text, n in reasons[:3])
    more = f"; {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    return (
        f"stage {stage!r}: {failed['count']} of {failed['of']} {failed['unit']} got no usable LLM "
        f"answer (unusable answers: {why}{more}). The stage was not recorded as done and the "
        "unusable answers were not cached. Check that the model follows the prompt's JSON form "
        "(a model or endpoint change may be needed), then run the build again: only the failed "
        "requests are re-sent. To keep the stage without them, run again with --accept-failures."
    )


def run_build(
    plan: Plan,
    *,
    stage: str | None = None,
    show_progress: bool = False,
    transport=None,
    accept_failures: bool = False,
    read_cache: bool = True,
) -> BuildReport:
    """Run a plan (all stages, or one); see :class:`Builder`."""
    builder = Builder(
        plan,
        show_progress=show_progress,
        transport=transport,
        accept_failures=accept_failures,
        read_cache=read_cache,
    )
    return builder.run(stage)


__all__ = ["Builder", "BuildReport", "run_build", "check_build", "STAGES", "NEEDS"]
