"""``nuggetbench evaluate``: score an existing run (one call to ``evaluate_dataset``)."""

from __future__ import annotations

import logging

import click

from ..evaluation import Evaluation, evaluate_dataset, trec_eval_options, trec_eval_text
from ._common import (
    dataset_options,
    echo_json,
    fmt_value,
    info,
    parse_options,
    render_findings,
    render_means_table,
    render_summaries,
)


@click.command("evaluate", context_settings={"help_option_names": ["-h", "--help"]})
@dataset_options
@click.argument("qrels")
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.argument("measures", nargs=-1)
@click.option(
    "-m",
    "--measure",
    "measure_opts",
    multiple=True,
    metavar="MEASURE",
    help="A measure, repeatable (as the MEASURES arguments); trec_eval's names too: "
    "all_trec, official, P.5,7,3, ndcg.1=3,2=9, relstring.20.",
)
@click.option("-q", "--per-query", is_flag=True, help="Also print each query's values.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "tsv", "trec_eval"]),
    default="table",
    show_default=True,
    help="json: exactly one JSON object {measure: mean} on stdout (with --per-query: {measure: {query: value}} under 'per_query'). "
    "trec_eval: trec_eval's own text (default measures: official; averaged as trec_eval without -c).",
)
@click.option("-c", "complete", is_flag=True, help="trec_eval -c: average over every judged query.")
@click.option(
    "-M", "max_docs", type=click.IntRange(min=1), help="trec_eval -M: documents kept per query."
)
@click.option("-l", "rel_level", type=int, help="trec_eval -l: the lowest relevant grade.")
@click.option("-J", "judged_only", is_flag=True, help="trec_eval -J: rank judged documents only.")
@click.option(
    "-R",
    "qrels_format",
    type=click.Choice(["qrels", "qrels_jg"]),
    default="qrels",
    help="trec_eval -R: qrels_jg reads QRELS' second column as judgment groups and averages "
    "each query over them (map_avgjg...).",
)
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Span-judged datasets (fastbook): the BEIR corpus.jsonl the run's passages come from; "
    "its passages are judged against the dataset's evidence spans.",
)
@click.option(
    "--ignore-trailing",
    is_flag=True,
    help="Ignore fields after the 6th column of run lines, as trec_eval does (default: an error).",
)
def evaluate_command(
    qrels,
    run,
    measures,
    per_query,
    fmt,
    profile,
    dataset_options,
    split,
    corpus_path,
    ignore_trailing,
    measure_opts,
    qrels_format,
    **trec_flags,
):
    """Score RUN (TREC run file, .gz, JSON {query: {doc: score}}, or a rank file) against QRELS.

    QRELS is a judgments file (TREC qrels, BEIR tsv, JSON, ndeval diversity qrels, a FreshStack
    queries file) or a dataset id or folder. MEASURES default to the dataset's, or
    nDCG@10 R@100 RR@10 AP for a qrels file.

    \b
    Example:
      nuggetbench evaluate qrels.test results.test nDCG@10 'P(rel=2)@5' AP --per-query
      nuggetbench evaluate qrels.test results.test -m all_trec -q --format trec_eval
    """
    logging.getLogger("nuggetbench.measures.checks").setLevel(logging.ERROR)  # rendered below
    measures = list(measures) + list(measure_opts) or (["official"] if fmt == "trec_eval" else [])
    profile = trec_eval_options(profile, trec_format=fmt == "trec_eval", **trec_flags)
    ev = evaluate_dataset(
        qrels,
        run,
        measures or None,
        profile,
        corpus=corpus_path,
        options=parse_options(dataset_options, split=split),
        trailing="ignore" if ignore_trailing else "error",
        judgment_groups=qrels_format == "qrels_jg",
    )
    _render(ev, fmt, per_query, ev.run.name or run, measures)


def _render(ev: Evaluation, fmt: str, per_query: bool, label: str, asked: list[str]) -> None:
    """Print the notes and findings (stderr), then the scores in *fmt* (stdout)."""
    for note in ev.notes:
        info(note)
    render_findings(ev.findings)
    if fmt == "trec_eval":
        click.echo(trec_eval_text(ev, asked, per_query=per_query), nl=False)
        return
    results, measures = ev.results, ev.measures
    if fmt == "json":
        out = {m: results.means[m] for m in measures}
        if per_query:
            out = {**out, "per_query": {m: results.values(m) for m in measures}}
        echo_json(out)
        return
    if fmt == "tsv":
        if per_query:
            for m in measures:
                for qid, value in results.values(m).items():
                    click.echo(f"{m}\t{qid}\t{fmt_value(value)}")
        for m in measures:
            click.echo(f"{m}\tall\t{fmt_value(results.means[m])}")
        return
    if per_query:
        rows = {qid: {m: results.values(m)[qid] for m in measures} for qid in results.query_ids}
        render_means_table("per query", rows, measures)
    render_means_table(
        f"{label} ({len(results.query_ids)} queries, profile {results.profile!r})",
        {"mean": results.means},
        measures,
    )
    render_summaries(ev.summaries, measures)
