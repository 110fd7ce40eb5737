"""``nuggetbench evaluate``: score an existing run (one call to ``evaluate_dataset``)."""

from __future__ import annotations

import logging

import click

from nuggetbench.cli._common import (
    console,
    dataset_options,
    echo_json,
    fmt_value,
    info,
    measure_option,
    measure_words,
    parse_options,
    query_options,
    query_subset_of,
    render_findings,
    render_means_table,
    render_summaries,
    run_file_options,
    run_reading,
    warn,
)
from nuggetbench.cli._formats import format_option, measure_digits, records_text, wide_text
from nuggetbench.data.formats.zscores import read_zscores
from nuggetbench.errors import NuggetbenchError
from nuggetbench.evaluation import Evaluation, evaluate_dataset, trec_eval_options, trec_eval_text
from nuggetbench.measures.depth import DEPTH_MARK, depth_of, depth_warning, shallow
from nuggetbench.measures.results import averaging_text


@click.command("evaluate", context_settings={"help_option_names": ["-h", "--help"]})
@dataset_options
@query_options
@click.argument("qrels")
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.argument("positional_measures", nargs=-1, metavar="[MEASURES]...")
@measure_option
@click.option("-q", "--per-query", is_flag=True, help="Also print each query's values.")
@format_option(
    "trec_eval",
    help="table, json (one object {measure: mean}; with --per-query {measure: {query: value}} "
    "under 'per_query'), jsonl/csv (records query, measure, value; the mean's query is null in "
    "jsonl and empty in csv), "
    "tsv (measure, query, value lines, as trec_eval -q), markdown or latex; trec_eval: "
    "trec_eval's own text (default measures: official). Every format prints the same values, "
    "averaged as the command line says (-c by default; --profile trec_eval for trec_eval's "
    "own default; `nuggetbench trec_eval` is the drop-in). "
    "trec_eval's measure names work too: all_trec, official, P.5,7,3, ndcg.1=3,2=9.",
)
@click.option(
    "-c",
    "complete",
    is_flag=True,
    help="trec_eval -c: average over every judged query (already the default of a qrels file; "
    "with --profile trec_eval...).",
)
@click.option(
    "-M",
    "max_docs",
    type=click.IntRange(min=1),
    help="trec_eval -M: documents kept per query (-M/-l/-J add to the profile, 'trec_eval -c' "
    "by default).",
)
@click.option("-l", "rel_level", type=int, help="trec_eval -l: the lowest relevant grade.")
@click.option("-J", "judged_only", is_flag=True, help="trec_eval -J: rank judged documents only.")
@click.option(
    "-R",
    "qrels_format",
    type=click.Choice(["qrels", "qrels_jg", "prefs", "qrels_prefs"]),
    default="qrels",
    help="trec_eval -R: qrels_jg reads QRELS' second column as judgment groups and averages "
    "each query over them (map_avgjg...); prefs (query group subgroup doc level) and "
    "qrels_prefs (a qrels file) are preference judgments for -m all_prefs.",
)
@click.option(
    "-Z",
    "zscores_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="trec_eval -Z (with --format trec_eval): print each value as a z-score against the "
    "file's 'query measure mean stddev' lines, names prefixed Z.",
)
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Span-judged datasets (fastbook): the BEIR corpus.jsonl the run's passages come from; "
    "its passages are judged against the dataset's evidence spans.",
)
@run_file_options
def evaluate_command(qrels, run, positional_measures, measures, fmt, **opts):
    """Score RUN (TREC run file, .gz, JSON {query: {doc: score}}, or a rank file) against QRELS.

    QRELS is a judgments file (TREC qrels, BEIR tsv, JSON, ndeval diversity qrels, a FreshStack
    queries file) or a dataset id or folder. Measures (-m, repeatable, as in `run` and `compare`;
    MEASURES after RUN is the older spelling) default to the dataset's, or nDCG@10 R@100 RR@10 AP
    for a qrels file.

    \b
    Example:
      nuggetbench evaluate qrels.test results.test -m nDCG@10 -m 'P(rel=2)@5' -m AP --per-query
      nuggetbench evaluate qrels.test results.test -m 'nDCG@10 P@5 AP'   (ir_measures' idiom)
      nuggetbench evaluate qrels.test results.test -m all_trec -q --format trec_eval
    """
    logging.getLogger("nuggetbench.data.checks").setLevel(logging.ERROR)  # rendered below
    try:
        positional_measures = measure_words(positional_measures)
    except NuggetbenchError as exc:
        raise click.BadParameter(str(exc), param_hint="MEASURES") from None
    measures = [*measures, *positional_measures] or (["official"] if fmt == "trec_eval" else [])
    if opts["zscores_file"] is not None and fmt != "trec_eval":
        raise click.UsageError("-Z (z-scores) applies to --format trec_eval only")
    zscores = read_zscores(opts["zscores_file"]) if opts["zscores_file"] else None
    flags = {k: opts.pop(k) for k in ("complete", "max_docs", "rel_level", "judged_only")}
    profile = trec_eval_options(opts["profile"], **flags)  # the format never changes it
    ev = evaluate_dataset(
        qrels,
        run,
        measures or None,
        profile,
        corpus=opts["corpus_path"],
        options=parse_options(opts["dataset_options"], split=opts["split"]),
        **run_reading(opts),
        judgment_groups=opts["qrels_format"] == "qrels_jg",
        preferences=opts["qrels_format"] if "prefs" in opts["qrels_format"] else None,
        queries=query_subset_of(opts),
    )
    _render(ev, fmt, opts["per_query"], ev.run.name or run, measures, zscores)


def _render(
    ev: Evaluation, fmt: str, per_query: bool, label: str, asked: list[str], zscores=None
) -> None:
    """Print the notes and findings (stderr), then the scores in *fmt* (stdout): every format
    the same values, and which queries they average (a footer, a JSON field, a caption, or a
    stderr line beside trec_eval's text and the record formats)."""
    for note in ev.notes:
        info(note)
    render_findings(ev.findings)
    avg = ev.averaging()
    cut, depth = shallow(ev.results, ev.measures), depth_of(ev.results)
    if cut:
        warn(depth_warning({"": cut}, {"": depth}))
    if fmt == "trec_eval":
        click.echo(trec_eval_text(ev, asked, per_query=per_query, zscores=zscores), nl=False)
        info(averaging_text(avg))
        return
    results = ev.results
    if fmt in ("json", "jsonl", "csv", "tsv"):
        _machine(ev, fmt, per_query, avg, cut)
        return
    measures = [m + DEPTH_MARK * (m in cut) for m in ev.measures]  # the column says it
    named = dict(zip(ev.measures, measures))
    rows = {q: _renamed(v, named) for q, v in _rows(results, ev.measures, per_query).items()}
    means = _renamed(results.means, named)
    title = f"{label} ({len(results.query_ids)} queries, profile {results.profile!r})"
    footer = averaging_text(avg) + (f"; {DEPTH_MARK}: cutoff beyond the run's depth" * bool(cut))
    digits = {m: measure_digits(m.rstrip(DEPTH_MARK)) for m in measures}
    if fmt in ("markdown", "latex"):
        caption = f"{title}; {footer}"
        text = wide_text(fmt, "query", rows, measures, digits=digits, caption=caption, total=means)
        click.echo(text, nl=False)
        for s in ev.summaries:
            s_rows = {k: _renamed(v, named) for k, v in s.rows.items()}
            click.echo("\n" + wide_text(fmt, "", s_rows, measures, caption=s.title), nl=False)
        return
    if per_query:
        render_means_table("per query", rows, measures, first="query")
    render_means_table(title, {"mean": means}, measures, first="")
    console().print(footer, markup=False)
    render_summaries(ev.summaries, list(ev.measures))


def _renamed(values, named: dict[str, str]) -> dict:
    """*values* keyed by the shown column names (a measure beyond the depth carries its mark)."""
    return {named.get(k, k): v for k, v in values.items()}


def _machine(ev: Evaluation, fmt: str, per_query: bool, avg: dict, cut: list[str]) -> None:
    """The scores as json (one object: the means, ``averaged``, ``beyond_depth`` when a
    cutoff exceeds the run's depth), tsv (trec_eval -q lines) or jsonl/csv records (which
    queries they average is said on stderr)."""
    results, measures = ev.results, ev.measures
    if fmt != "json":
        info(averaging_text(avg))
    if fmt == "json":
        out = {m: results.means[m] for m in measures}
        if per_query:
            out = {**out, "per_query": {m: results.values(m) for m in measures}}
        if ev.summaries:
            out["summaries"] = {s.title: s.rows for s in ev.summaries}
        out["averaged"] = {**avg, "text": averaging_text(avg)}
        if cut:
            out["beyond_depth"] = {"measures": cut, "run_depth": depth_of(results)}
        echo_json(out)
    elif fmt == "tsv":
        if per_query:
            for m in measures:
                for qid, value in results.values(m).items():
                    click.echo(f"{m}\t{qid}\t{fmt_value(value, None)}")
        for m in measures:
            click.echo(f"{m}\tall\t{fmt_value(results.means[m], None)}")
    else:
        rows = _rows(results, measures, per_query)
        records = [
            {"query": q, "measure": m, "value": v[m]} for q, v in rows.items() for m in measures
        ]  # the mean: query null (jsonl) or empty (csv), which no query id can be
        records += [{"query": None, "measure": m, "value": results.means[m]} for m in measures]
        records += [
            {"query": f"{s.title}: {name}", "measure": m, "value": values.get(m)}
            for s in ev.summaries
            for name, values in s.rows.items()
            for m in measures
        ]
        click.echo(records_text(fmt, records), nl=False)


def _rows(results, measures, per_query: bool) -> dict[str, dict[str, float]]:
    """``{query: {measure: value}}`` with ``--per-query``, else empty; the means are not a row
    here (a query may be named ``all`` or ``mean``)."""
    rows: dict[str, dict[str, float]] = {}
    if per_query:
        columns = {m: results.per_query[m].tolist() for m in measures}
        for i, qid in enumerate(results.query_ids):
            rows[qid] = {m: columns[m][i] for m in measures}
    return rows
