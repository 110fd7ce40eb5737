"""``nuggetbench evaluate``: score an existing run."""

from __future__ import annotations

import click

from ._common import echo_json, fmt_value, info, load_qrels_arg, render_means_table, warn


@click.command("evaluate", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("qrels")
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.argument("measures", nargs=-1)
@click.option("-q", "--per-query", is_flag=True, help="Also print each query's values.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "tsv"]),
    default="table",
    show_default=True,
    help="json: exactly one JSON object {measure: mean} on stdout (with --per-query: {measure: {query: value}} under 'per_query').",
)
@click.option(
    "--profile",
    default=None,
    metavar="NAME",
    help="Semantics profile (default 'trec_eval -c': every judged query counts, a missing one scores 0).",
)
@click.option("--split", default=None, help="Split, when QRELS is a dataset id.")
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="fastbook: the BEIR corpus.jsonl the run's passages come from (span judging).",
)
@click.option(
    "--ignore-trailing",
    is_flag=True,
    help="Ignore fields after the 6th column of run lines, as trec_eval does (default: an error).",
)
def evaluate_command(
    qrels, run, measures, per_query, fmt, profile, split, corpus_path, ignore_trailing
):
    """Score RUN (TREC run file, .gz, or JSON {query: {doc: score}}) against QRELS.

    QRELS is a qrels file (TREC 4 columns, BEIR tsv, JSON) or a dataset id. MEASURES default to
    the dataset's, or nDCG@10 R@100 RR@10 AP for a qrels file.

    \b
    Example:
      nuggetbench evaluate qrels.test results.test nDCG@10 'P(rel=2)@5' AP --per-query
    """
    from ..data import load_run
    from ..measures import evaluate, parse_measure

    for m in measures:
        parse_measure(m)
    if corpus_path is not None:
        qrels_value, ds = _span_judged_qrels(qrels, corpus_path)
    else:
        qrels_value, ds = load_qrels_arg(qrels, split=split)
    measures = list(measures) or (
        list(ds.default_measures) if ds is not None else ["nDCG@10", "R@100", "RR@10", "AP"]
    )
    profile = profile or (ds.default_profile if ds is not None else None)
    run_value = load_run(run, keep_rank=True, trailing="ignore" if ignore_trailing else "error")
    kwargs = {"profile": profile} if profile else {}
    import logging

    from ..measures.checks import check_run_against_qrels

    logging.getLogger("nuggetbench.measures.checks").setLevel(
        logging.ERROR
    )  # printed below instead
    for line in check_run_against_qrels(
        qrels_value, run_value, getattr(ds, "corpus", None), metadata=getattr(ds, "metadata", None)
    ):
        (warn if line.startswith("[warning]") else info)(line.split("] ", 1)[-1])
    results = evaluate(qrels_value, run_value, measures, **kwargs)
    if results.run_only_queries:
        warn(f"{len(results.run_only_queries)} run queries have no judgments and were ignored")
    if results.missing_queries:
        scored = "score 0" if _counts_missing(results.profile) else "are left out of the mean"
        warn(
            f"{len(results.missing_queries)} judged queries are missing from the run and {scored} "
            f"under profile {results.profile!r}"
        )
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
        f"{run_value.name or run} ({len(results.query_ids)} queries, profile {results.profile!r})",
        {"mean": results.means},
        measures,
    )
    if results.profile == "birco":
        from ..compare import birco_summary

        order = list(ds.queries) if getattr(ds, "queries", None) is not None else None
        boot = birco_summary(results, order=order)
        render_means_table(
            "BIRCO bootstrap (rank2metric.py: 1000 resamples, seed 42)",
            {
                "bootstrap mean": {m: v[0] for m, v in boot.items()},
                "bootstrap std": {m: v[1] for m, v in boot.items()},
            },
            measures,
            digits=3,
        )


def _span_judged_qrels(dataset_id: str, corpus_path: str):
    """fastbook-style datasets: judge the passages of CORPUS against the dataset's evidence spans.

    Returns ``(qrels, defaults)`` where *defaults* carries the dataset's measures and profile.
    """
    from types import SimpleNamespace

    from ..data import JsonlCorpus
    from ..errors import InputError
    from ._common import info

    if dataset_id != "fastbook":
        raise InputError(f"--corpus applies to span-judged datasets (fastbook), not {dataset_id!r}")
    from ..datasets import fastbook

    qrels_value, ceiling = fastbook.nugget_qrels(JsonlCorpus(corpus_path), restrict_to_chapter=True)
    info(str(ceiling))
    defaults = SimpleNamespace(
        default_measures=list(fastbook.DEFAULT_MEASURES), default_profile=fastbook.DEFAULT_PROFILE
    )
    return qrels_value, defaults


def _counts_missing(profile_name: str) -> bool:
    from ..measures.profiles import get_profile

    return getattr(get_profile(profile_name), "average_over", "qrels") != "run_and_qrels"
