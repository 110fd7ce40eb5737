"""``nuggetbench build PLAN.toml [--stage NAME]``: build a FreshStack-style benchmark."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from nuggetbench.builder.pipeline import STAGES, check_build, run_build
from nuggetbench.builder.plan import load_plan
from nuggetbench.cli._common import (
    console,
    echo_json,
    endpoint_options,
    no_cache_option,
    request_bounds,
)
from nuggetbench.cli._globals import progress_shown
from nuggetbench.errors import InputError


@click.command("build", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("plan", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--stage",
    type=click.Choice(STAGES),
    default=None,
    help="Run only this stage (its inputs must have been built with the same plan).",
)
@click.option("--no-progress", is_flag=True, help="No progress bars.")
@click.option(
    "--top-tags",
    type=int,
    default=15,
    show_default=True,
    help="Rows of the co-occurring tag table (0: none).",
)
@click.option(
    "--accept-failures",
    is_flag=True,
    help="Record a stage even when some LLM answers stayed unusable (they are listed in its "
    "meta) instead of stopping with an error.",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Check the whole plan (files, prompts, output folder, the API key's presence) and, when "
    "a stage that would run calls the model, the endpoint at no cost (GET /models: it answers, "
    "serves the model, accepts the key); print what would run, what is cached and the price "
    "known; run nothing. Exit 2 when the build would fail.",
)
@endpoint_options(plan=True)
@request_bounds(plan=True)
@no_cache_option("stage outputs")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="With --check: the plan in words, or as JSON.",
)
def build_command(plan, stage, no_progress, top_tags, accept_failures, check_only, fmt, **endpoint):
    """Build a benchmark from Q&A and repositories, as PLAN.toml describes.

    A commented plan to start from: examples/stackexchange-plan.toml in the nuggetbench
    repository (every section, against a local OpenAI-compatible server).

    Stages: questions, corpus, nuggets, pool, judge, export, calibrate. Every LLM answer is cached
    in <output>/_build/llm_cache.sqlite as it arrives: run the same command again to resume an
    interrupted build without paying twice (--no-cache: the stages that ask the model run again
    and every request is sent again). The endpoint: --model / --base-url / --no-api-key /
    --timeout / --max-retries / --max-reply-chars, else the plan's [llm] model / base_url /
    no_api_key / timeout / max_retries / max_reply_chars, else NUGGETBENCH_LLM_MODEL /
    NUGGETBENCH_LLM_BASE_URL (the first given wins); the key from OPENAI_API_KEY (or the variable
    named by [llm] api_key_env).

    \b
    Examples:
      nuggetbench build examples/stackexchange-plan.toml --check   # what would run; runs nothing
      nuggetbench build plan.toml
      nuggetbench build plan.toml --stage questions     # read the questions, show the tag table
      nuggetbench build plan.toml --model M --base-url http://127.0.0.1:8000/v1 --no-api-key
    """

    no_cache = endpoint.pop("no_cache")
    loaded = load_plan(plan, llm=endpoint)  # --model ... --max-reply-chars over [llm]
    if check_only:
        return _check(loaded, stage, not no_cache, fmt)
    report = run_build(
        loaded,
        stage=stage,
        show_progress=not no_progress and progress_shown(),
        accept_failures=accept_failures,
        read_cache=not no_cache,
    )
    _render(report, top_tags, console(stderr=True), loaded.llm.model)


def _check(loaded, stage: str | None, read_cache: bool, fmt: str) -> None:
    """``build --check``: print the check (:func:`check_build`) in *fmt*; not ready, exit 2.

    Raises:
        InputError: the build would fail (every problem named).
    """
    described = {
        "plan": str(loaded.path),
        **check_build(loaded, stage=stage, read_cache=read_cache),
    }
    if fmt == "json":
        echo_json(described)
    else:
        render_check(described, console())
    if not described["ready"]:
        n = len(described["problems"])
        raise InputError(
            f"{loaded.path}: not ready, the build would fail ({n} problem"
            f"{'s' if n > 1 else ''}): " + "; ".join(described["problems"])
        )


def render_check(d: dict, out) -> None:
    """``build --check`` in words on *out* (a rich console): the plan, the endpoint, the key,
    what the endpoint said, the price, what each stage would do and what is on disk already,
    then the problems."""
    llm, counts, cache = d["llm"], d["counts"], d["llm_cache"]
    limit = counts["question_limit"]
    n = len(d["problems"])
    state = "ready" if d["ready"] else f"NOT READY, {n} problem{'s' if n > 1 else ''}"
    lines = [
        f"plan {d['plan']}: {state} (nothing was run)",
        f"name: {d['name']}; output: {d['output']}",
        f"questions: {d['questions']}"
        + (f" (tags {', '.join(counts['tags'])})" if counts["tags"] else "")
        + (f", at most {limit}" if limit else ""),
        f"repositories ({counts['repositories']}): {', '.join(map(str, d['repos'])) or '-'}",
        f"pooling: retrievers {', '.join(counts['retrievers'])}; "
        f"techniques {', '.join(counts['techniques'])}",
        f"endpoint: {llm['base_url'] or 'the OpenAI API'} ({llm['provider']}), model "
        f"{llm['model']}; API key: {d['api_key']}",
        "endpoint check: " + _probe_words(d["endpoint_check"]),
        "price: "
        + (
            f"${d['price'][0]:g} / ${d['price'][1]:g} per million input / output tokens"
            if d["price"]
            else f"none for model {llm['model']!r} in the plan's [prices] (costs not computed)"
        ),
    ]
    for line in lines:
        out.print(line, markup=False, highlight=False)
    table = Table(title="stages", title_justify="left")
    for col in ("stage", "would", "calls the model", "on disk"):
        table.add_column(col)
    would = {
        "run": "run",
        "cached": "use its cached output",
        "read": "be read",
        "missing": "be read: MISSING",
        "skip": "not run",
    }
    for row in d["stages"]:
        rec = row["recorded"]
        on_disk = "-" if rec is None else ", ".join(f"{k} {v}" for k, v in rec.items()) or "done"
        table.add_row(
            row["stage"],
            would[row["action"]],
            "yes" if row["calls_model"] else "no",
            escape(on_disk),
        )
    out.print(table)
    answers = cache["answers"]
    out.print(
        f"LLM cache: {cache['path']}: "
        + (
            ", ".join(f"{n} {stage} answers" for stage, n in answers.items()) + " cached"
            if answers
            else "none yet (every request would be paid)"
        ),
        markup=False,
        highlight=False,
    )
    for problem in d["problems"]:
        out.print(f"problem: {problem}", markup=False, highlight=False)


def _probe_words(p: dict | None) -> str:
    """What ``GET /models`` found, in words (``p``: ``endpoint_check``)."""
    if p is None:
        return "not needed (no stage that would run calls the model)"
    if p["problem"]:
        return f"FAILED: {p['problem']}"
    if p["model_listed"]:
        return f"answers, serves the model ({p['models']} models listed), key accepted"
    return f"answers, key accepted; {p['note']}"


def _render(report, top_tags: int, out, model: str = "") -> None:
    """The build report on *out* (a rich console): questions, tags, corpus, stages, usage,
    filter and cost, each part only when the build produced it."""
    _questions(report.questions, out)
    if top_tags and report.top_tags:
        table = Table(title="co-occurring tags (repositories to index)")
        table.add_column("tag")
        table.add_column("questions", justify="right")
        for tag, count in report.top_tags[:top_tags]:
            table.add_row(tag, str(count))
        out.print(table)
    _corpus(report.corpus_stats, out)
    stages = Table(title="stages")
    for col in ("stage", "status", "details"):
        stages.add_column(col)
    for name, info in report.stages.items():
        details = escape(", ".join(f"{k} {v}" for k, v in info.items() if k not in ("status",)))
        stages.add_row(name, info.get("status", ""), details)
    out.print(stages)
    _usage(report.usage, out)
    _filter_and_cost(report.filter, report.cost, out, model)
    out.print(f"output: {report.output}")


def _questions(q: dict, out) -> None:
    if not q:
        return
    out.print(
        f"questions: {q.get('questions', 0)} read, {q.get('with_accepted', 0)} with an accepted answer, "
        f"{q.get('kept', 0)} kept ({len(q.get('malformed_rows', []))} malformed rows skipped)"
    )
    for row in q.get("malformed_rows", [])[:5]:
        out.print(
            f"  malformed row at line {row['line']}, column {row['column']}: {row['error']}",
            markup=False,
        )


def _corpus(c: dict, out) -> None:
    if not c:
        return
    tok = c.get("tokens_per_chunk", {})
    skipped = ", ".join(f"{k} {v}" for k, v in c.get("skipped", {}).items()) or "none"
    out.print(
        f"corpus: {c['files_seen']} files seen, {c['files_chunked']} chunked, {c['files_skipped']} "
        f"skipped ({skipped}); {c['chunks']} chunks, tokens per chunk min {tok.get('min')} / median "
        f"{tok.get('p50')} / mean {tok.get('mean')} / max {tok.get('max')}"
    )


def _usage(usage: dict, out) -> None:
    if not usage:
        return
    table = Table(title="LLM usage (this run)")
    columns = (
        "stage",
        "paid calls",
        "cached calls",
        "retries",
        "prompt tok",
        "completion tok",
        "paid $",
    )
    for col in columns:
        table.add_column(col, justify="right" if col != "stage" else "left")
    for name, u in usage.items():
        cost = u.get("paid_cost_usd")
        table.add_row(
            name,
            str(u["paid_calls"]),
            str(u["cached_calls"]),
            str(u["retries"]),
            str(u["paid_prompt_tokens"]),
            str(u["paid_completion_tokens"]),
            "n/a" if cost is None else f"{cost:.4f}",
        )
    out.print(table)


def _filter_and_cost(f: dict, cost: dict, out, model: str = "") -> None:
    if f:
        out.print(
            f"filter: {f['questions']} questions; {f['no_nuggets']} without nuggets, "
            f"{f['no_supported_nugget']} with no supported nugget ({f['share_no_supported']:.1%}), "
            f"{f['any_unsupported_nugget']} with an unsupported nugget ({f['share_any_unsupported']:.1%}); "
            f"{f['kept']} kept"
        )
    if cost:
        total = cost.get("cost_usd")
        out.print(  # no markup: "[prices]" is text, not a style tag
            f"benchmark cost: {cost.get('requests', 0)} requests, {cost.get('prompt_tokens', 0)} "
            f"prompt + {cost.get('completion_tokens', 0)} completion tokens"
            + (
                f", ${total:.4f}"
                if total is not None
                else f" (no price for the model {model!r} in the plan's [prices])"
            ),
            markup=False,
            highlight=False,
        )
