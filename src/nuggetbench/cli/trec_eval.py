"""``nuggetbench trec_eval``: trec_eval's drop-in: its arguments, its defaults, its text."""

from __future__ import annotations

import logging

import click

from nuggetbench.cli._common import info, render_findings
from nuggetbench.data.formats.zscores import read_zscores
from nuggetbench.evaluation import evaluate_dataset, trec_eval_options, trec_eval_text
from nuggetbench.measures.results import averaging_text


@click.command("trec_eval", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("qrels", type=click.Path(exists=True, dir_okay=False))
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.option("-q", "per_query", is_flag=True, help="Per-query lines before the 'all' lines.")
@click.option(
    "-m",
    "measures",
    multiple=True,
    metavar="MEASURE",
    help="trec_eval's measure names, repeatable: official (default), all_trec, map, P.5,10, "
    "ndcg_cut.10, relstring.20, all_prefs, qrels_jg...; nuggetbench's (nDCG@10) work too.",
)
@click.option(
    "-c", "complete", is_flag=True, help="Average over every judged query (missing: scored 0)."
)
@click.option("-M", "max_docs", type=click.IntRange(min=1), help="Documents kept per query.")
@click.option("-l", "rel_level", type=int, help="The lowest relevant grade (default 1).")
@click.option("-J", "judged_only", is_flag=True, help="Rank judged documents only.")
@click.option(
    "-R",
    "qrels_format",
    type=click.Choice(["qrels", "qrels_jg", "prefs", "qrels_prefs"]),
    default="qrels",
    help="How QRELS is read: qrels, qrels_jg (judgment groups), prefs or qrels_prefs "
    "(preference judgments, for -m all_prefs).",
)
@click.option(
    "-Z",
    "zscores_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Print each value as a z-score against the file's 'query measure mean stddev' lines.",
)
@click.option(
    "--version-9",
    "legacy",
    is_flag=True,
    help="trec_eval 9.0.8's conventions (interpolation, no per-query lines for a judged query "
    "missing from the run under -c -q); default: 10.0's.",
)
def trec_eval_command(qrels, run, per_query, measures, zscores_file, qrels_format, legacy, **flags):
    """Evaluate RUN against QRELS as trec_eval does, and print trec_eval's text.

    trec_eval's options and its defaults: without -c only the queries both in the run and in
    the qrels are averaged; run lines may carry fields after the 6th (ignored, as trec_eval).
    `nuggetbench evaluate` differs by design: it averages over every judged query (-c) unless
    --profile says otherwise, and prints that same text with --format trec_eval. Which queries
    were averaged is said on stderr.

    \b
    Example:
      nuggetbench trec_eval -q -c -m all_trec qrels.test results.test
    """
    logging.getLogger("nuggetbench.data.checks").setLevel(logging.ERROR)  # rendered below
    measures = list(measures) or ["official"]
    profile = trec_eval_options("trec_eval-9.0.8" if legacy else None, drop_in=True, **flags)
    ev = evaluate_dataset(
        qrels,
        run,
        measures,
        profile,
        trailing="ignore",
        judgment_groups=qrels_format == "qrels_jg",
        preferences=qrels_format if "prefs" in qrels_format else None,
    )
    zscores = read_zscores(zscores_file) if zscores_file else None
    render_findings(ev.findings)
    click.echo(trec_eval_text(ev, measures, per_query=per_query, zscores=zscores), nl=False)
    info(averaging_text(ev.averaging()))  # stderr: stdout is trec_eval's text
