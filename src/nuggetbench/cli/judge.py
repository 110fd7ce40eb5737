"""``nuggetbench judge``: fill the holes of runs with LLM judgments, or measure their agreement."""

from __future__ import annotations

import math
from collections import Counter

import click

from nuggetbench.cli._common import (
    console,
    dataset_option,
    echo_json,
    endpoint_options,
    info,
    no_cache_option,
    parse_options,
    query_options,
    query_subset_of,
    request_bounds,
    warn,
)
from nuggetbench.cli._globals import llm_meter
from nuggetbench.errors import LLMError
from nuggetbench.judging import agreement_run_files, judge_run_files, judging_client
from nuggetbench.judging.holes import LLM_MARK

#: ``ctx.meta`` key of ``--strict``.
STRICT = "nuggetbench.strict"
#: The options of :func:`~nuggetbench.judging.judging_client`.
CLIENT_KEYS = (
    "model",
    "base_url",
    "api_key_env",
    "no_api_key",
    "concurrency",
    "price",
    "timeout",
    "max_retries",
    "max_reply_chars",
    "no_cache",
)


def llm_options(command):
    """``--model``, ``--base-url``, ``--no-api-key`` (:func:`~._common.endpoint_options`, shared
    with ``build``), ``--api-key-env``, ``--concurrency``, ``--timeout``, ``--max-retries`` and
    ``--max-reply-chars`` (:func:`~._common.request_bounds`, also shared with ``build``),
    ``--price``, ``--max-repairs``, ``--no-cache`` (shared with ``build``)."""
    for opt in reversed(
        [
            click.option(
                "--api-key-env",
                default="OPENAI_API_KEY",
                show_default=True,
                metavar="VAR",
                help="Environment variable holding the key (NUGGETBENCH_LLM_API_KEY is tried first); "
                "the key is never written anywhere.",
            ),
            click.option(
                "--concurrency",
                type=click.IntRange(min=1),
                default=4,
                show_default=True,
                help="Requests in flight at once.",
            ),
            request_bounds(),
            click.option(
                "--price",
                default=None,
                metavar="IN,OUT",
                help="USD per million input and output tokens, for the cost in the outputs "
                "(e.g. 2.5,10).",
            ),
            click.option(
                "--max-repairs",
                type=click.IntRange(min=0),
                default=2,
                show_default=True,
                help="Re-asks of an answer that cannot be parsed; then it is recorded as a failure.",
            ),
            no_cache_option("answers"),
        ]
    ):
        command = opt(command)
    return endpoint_options()(command)


def strict_option(written: str = "they are still written, as failures"):
    """``--strict`` (``judge``, ``answers``, ``nuggets``): exit 2 when answers stayed unusable
    after their re-asks; *written* says what becomes of them. Read by :func:`fail_if_strict`."""
    return click.option(
        "--strict",
        is_flag=True,
        expose_value=False,
        callback=lambda ctx, _param, value: ctx.meta.__setitem__(STRICT, value),
        help=f"Exit 2 when answers stayed unusable after their re-asks ({written}).",
    )


@click.command("judge", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("dataset")
@click.argument("runs", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--depth",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Judge the unjudged documents in the top k of each run (ranked as trec_eval ranks).",
)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Output folder (required unless --agreement): qrels.txt (the dataset's qrels with the "
    "model's grades added), judgments.jsonl (every judgment) and judge.json (the summary); with "
    "--agreement, judgments.jsonl and agreement.json. Each file written is named on stderr.",
)
@click.option(
    "--agreement",
    is_flag=True,
    help="Re-judge judged pairs and report agreement with the human qrels.",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=None,
    help="With --agreement: judged pairs drawn at random (default all; --sample-queries draws "
    "queries instead).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --sample.")
@click.option(
    "--rel-level",
    type=click.IntRange(min=0),
    default=None,
    help="With --agreement: binary relevance threshold (default: the dataset profile's).",
)
@click.option(
    "-m",
    "--measure",
    default=None,
    metavar="MEASURE",
    help="With --agreement and runs: the measure ordering the systems for Kendall's tau (default: the dataset's first).",
)
@click.option(
    "--profile", default=None, metavar="NAME", help="Profile of --measure (default: the dataset's)."
)
@dataset_option
@query_options
@llm_options
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@strict_option()
def judge_command(dataset, runs, agreement, out_dir, fmt, **kw):
    """Judge the holes of RUNS on DATASET with an LLM (UMBRELA's 0-3 scale), or with
    --agreement re-judge judged pairs and compare with the human qrels.

    Every request is cached by content in the home folder: a re-run sends none, and a killed run
    resumes where it stopped.

    \b
    Examples:
      nuggetbench judge beir/scifact bm25.trec dense.trec --depth 10 --model gpt-4o -o judged/
      nuggetbench judge birco/clinical-trial --agreement --sample 300 --seed 1 --model M
    """
    if not agreement and (out_dir is None or not runs):
        raise click.UsageError("give RUN files and -o DIR (or --agreement)")
    options, kw["queries"] = parse_options(kw.pop("dataset_options")), query_subset_of(kw)
    client = judging_client(**{k: kw.pop(k) for k in CLIENT_KEYS})
    try:
        if agreement:
            del kw["depth"]
            with llm_meter("judging", "pairs", client.ledger) as progress:
                res = agreement_run_files(
                    dataset, runs, client, out_dir, options=options, progress=progress, **kw
                )
            _render_agreement(res, fmt)
        else:
            kw = {k: kw[k] for k in ("depth", "max_repairs", "queries")}
            with llm_meter("judging", "pairs", client.ledger) as progress:
                res = judge_run_files(
                    dataset,
                    runs,
                    kw.pop("depth"),
                    client,
                    out_dir,
                    options=options,
                    progress=progress,
                    **kw,
                )
            _render_holes(res, fmt)
    finally:
        client.close()


def fail_if_strict(
    failures: int, what: str = "answers", kept: str = "recorded as failures, left out of the qrels"
) -> None:
    """Under ``--strict``, unusable answers are an error (exit 2) once the results are shown:
    *failures* counts *what* stayed unusable after the re-asks; *kept* says what became of them."""
    if failures and click.get_current_context().meta.get(STRICT):
        raise LLMError(
            f"--strict: {failures} {what} stayed unusable after their re-asks ({kept}); run "
            "again to ask them again"
        )


def warn_failures(judgments, consequence: str) -> None:
    """A warning when judgments failed (every one, or some), with the commonest reason;
    *consequence* says what it means for the outputs. Shown in every format, before
    ``--strict`` turns it into an error."""
    errors = Counter(j.error for j in judgments if j.grade is None)
    failures, of = sum(errors.values()), len(judgments)
    if not failures:
        return
    why = errors.most_common(1)[0][0] or "no answer"
    if failures == of:
        warn(
            f"every one of the {of} judgments failed ({why}): {consequence}. Check the model "
            "and the endpoint (judgments.jsonl holds each reply and why it was not used), then "
            "run again"
        )
    else:
        warn(
            f"{failures} of {of} judgments failed (commonest reason: {why}): {consequence}; "
            "run again to ask them again"
        )


def _render_holes(res, fmt: str) -> None:
    warn_failures(res.judgments, "those pairs stay unjudged in qrels.txt (no grade was added)")
    if fmt == "json":
        echo_json({"judge": res.to_dict()})
        return fail_if_strict(res.failures)
    from rich.table import Table

    info(
        f"holes found in the top {res.depth}: {res.holes}; requests sent: {res.sent}; "
        f"failures: {res.failures}; model grades added to the qrels: {res.llm_grades} "
        f"(marked '{LLM_MARK}' in their second column)"
    )
    table = Table(title=f"Judged@{res.depth}", title_justify="left")
    for col in ("run", "before", "after"):
        table.add_column(col, justify="left" if col == "run" else "right")
    for name in res.judged_before:
        table.add_row(name, f"{res.judged_before[name]:.4f}", f"{res.judged_after[name]:.4f}")
    console().print(table)
    wrote(res.files)
    fail_if_strict(res.failures)


#: What each file of ``judge -o`` holds, for the lines naming them.
_FILE_ROLES = {
    "qrels": "the qrels with the model's grades added",
    "judgments": "every judgment",
    "summary": "the summary",
}


def wrote(files: dict, roles: dict | None = None) -> None:
    """One stderr line per file written (``wrote PATH (what it holds)``); *roles* maps the keys
    of *files* to what each holds (default: ``judge``'s)."""
    roles = _FILE_ROLES if roles is None else roles
    for key, path in (files or {}).items():
        info(f"wrote {path} ({roles.get(key, key)})")


def _render_agreement(res, fmt: str) -> None:
    warn_failures(res.judgments, "the agreement figures leave those pairs out")
    if fmt == "json":
        echo_json({"agreement": res.to_dict()})
        return fail_if_strict(res.failures)
    from rich.table import Table

    out = console()
    info(
        f"pairs: {res.pairs}; judged: {res.judged}; failures: {res.failures}; requests sent: {res.sent}"
    )
    for what, raw, kappa in (
        ("grades", res.raw_agreement, res.cohen_kappa),
        (
            f"binary, relevant at grade >= {res.rel_level}",
            res.raw_agreement_binary,
            res.cohen_kappa_binary,
        ),
    ):
        shown = f"{kappa:.4f}" if math.isfinite(kappa) else "undefined (one label on both sides)"
        out.print(f"agreement ({what}): {raw:.4f} of the pairs; Cohen's kappa {shown}")
    table = Table(title="confusion (rows: human grade, columns: model grade)", title_justify="left")
    table.add_column("human \\ model")
    for g in res.grades:
        table.add_column(str(g), justify="right")
    for g, row in zip(res.grades, res.confusion):
        table.add_row(str(g), *(str(v) for v in row))
    out.print(table)
    if res.measure is not None:
        tau = f"{res.tau:.4f}" if res.tau is not None and math.isfinite(res.tau) else "undefined"
        out.print(f"Kendall's tau of the system orders by {res.measure}: {tau}")
    wrote(res.files)
    fail_if_strict(res.failures)
