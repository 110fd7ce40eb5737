"""``nuggetbench answers``: score generated answers by the nuggets they support."""

from __future__ import annotations

import click

from nuggetbench.cli._common import (
    console,
    echo_json,
    query_options,
    query_subset_of,
    render_means_table,
    stats_options,
    warn,
)
from nuggetbench.cli._globals import llm_meter
from nuggetbench.cli.judge import CLIENT_KEYS, fail_if_strict, llm_options, strict_option, wrote
from nuggetbench.judging import answers_files, judging_client

SCORES = ("vital_score", "strict_vital_score", "all_score", "strict_all_score")


@click.command("answers", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("nuggets", type=click.Path(exists=True, dir_okay=False))
@click.argument("answers", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Also write every assignment (assignments.jsonl) and the summary (answers.json); each "
    "file written is named on stderr.",
)
@click.option(
    "--baseline",
    default=None,
    metavar="NAME",
    help="Baseline system: its name (file stem) or 1-based position (default: the first).",
)
@stats_options
@query_options
@llm_options
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@strict_option("they are still written, their nuggets scored as 'failed'")
def answers_command(nuggets, answers, out_dir, fmt, max_repairs, **kw):
    """Label the NUGGETS of each question as supported, partly supported or not supported by
    each system's ANSWERS (one file per system, named by its stem) and print nuggetizer's
    vital_score, strict_vital_score, all_score and strict_all_score, with paired tests and
    bootstrap intervals between the systems.

    NUGGETS: nuggetizer JSONL ({"qid", "query", "nuggets": [{"text", "importance"}]}), a
    FreshStack queries file or fastbook-benchmark.json. ANSWERS: TREC 2024 RAG JSONL
    ({"topic_id", "answer": [{"text", "citations"}], ...}) or {"query_id", "answer"} lines.

    \b
    Example:
      nuggetbench answers nuggets.jsonl ragA.jsonl ragB.jsonl --model gpt-4o -o assigned/
    """
    kw["queries"] = query_subset_of(kw)  # the questions kept (--queries...)
    client = judging_client(**{k: kw.pop(k) for k in CLIENT_KEYS})
    try:
        with llm_meter("assigning", "windows", client.ledger) as progress:
            res = answers_files(
                nuggets, answers, client, out_dir, max_repairs=max_repairs, progress=progress, **kw
            )
    finally:
        client.close()
    _warn(res)
    if fmt == "json":
        echo_json(res.to_dict())
    else:
        _render(res)
    fail_if_strict(sum(res.failures.values()), kept="their nuggets scored as 'failed'")


def _warn(res) -> None:
    """What failed or is missing, and how it counts in the scores (stderr)."""
    for s in res.failures:
        if res.failures[s]:
            warn(
                f"{s}: {res.failures[s]} windows could not be parsed; their nuggets are 'failed', "
                "scored as not supported (the scores are lower than the answers may deserve)"
            )
        if res.missing[s]:
            counted = (
                "left out of every mean and test (--average-over common)"
                if res.average_over == "common"
                else "scored on an empty answer (0) in the means and tests; --average-over "
                "common compares the questions every system answered"
            )
            warn(f"{s}: {res.missing[s]} questions have no answer; {counted}")


def _render(res) -> None:
    render_means_table("nugget scores", res.results, SCORES)
    console().print(res.averaging(), markup=False)
    console().print(f"requests: {res.windows} windows of at most 10 nuggets; sent now: {res.sent}")
    if res.comparison is not None:
        out = console()
        out.print(res.comparison.to_rich(width=out.width))
    wrote(res.files, _FILE_ROLES)


#: What each file of ``answers -o`` holds, for the lines naming them.
_FILE_ROLES = {"assignments": "every assignment", "summary": "the summary"}
