"""``nuggetbench run``: retrieve on a dataset, save the runs, print and save the scores."""

from __future__ import annotations

from pathlib import Path

import click

from nuggetbench.cli._common import (
    average_over_option,
    console,
    echo_json,
    info,
    parse_options,
    query_options,
    query_subset_of,
    render_findings,
    render_means_table,
    run_dataset_options,
    run_measure_option,
    warn,
)
from nuggetbench.cli._formats import (
    cells_option,
    format_option,
    measure_digits,
    records_text,
    wide_text,
)
from nuggetbench.cli._globals import hidden_alias, progress_shown
from nuggetbench.datasets import load_dataset
from nuggetbench.errors import InputError, OutputError
from nuggetbench.experiment import Experiment, default_outdir, run_experiment
from nuggetbench.measures import get_profile
from nuggetbench.measures.depth import DEPTH_MARK, depth_of, depth_warning, shallow
from nuggetbench.measures.results import averaging, averaging_text
from nuggetbench.retrieval.compose.caching import failed_answers


@click.command("run", context_settings={"help_option_names": ["-h", "--help"]})
@run_dataset_options
@query_options
@click.argument("dataset")
@click.option(
    "-r",
    "--retriever",
    "retrievers",
    multiple=True,
    required=True,
    metavar="SPEC",
    help="Retriever spec, repeatable: bm25, 'bm25:k1=0.9,b=0.4', bm25:preset=lucene-flat, ...",
)
@run_measure_option
@click.option(
    "-k",
    "--depth",
    "k",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Documents retrieved per query.",
)
@click.option(
    "-o",
    "--output",
    "outdir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder for runs/*.trec and results.json (default: $NUGGETBENCH_HOME/outputs/<dataset>/<time>).",
)
@hidden_alias("--outdir", "old_outdir", type=click.Path(file_okay=False), default=None)
@format_option()
@cells_option
@click.option(
    "--chunker",
    default=None,
    metavar="SPEC",
    help="Same as -O chunker=SPEC, for datasets built from notebooks (fastbook), e.g. paragraphs:group=3,headers=true.",
)
@click.option(
    "--query-field",
    type=click.Choice(["question", "answer", "nuggets"]),
    default=None,
    help="Same as -O query_field=...: retrieve with the question (default), the answer or the nuggets (oracles; FreshStack).",
)
@click.option(
    "--with-objective",
    is_flag=True,
    help="Give the dataset's task objective to retrievers that accept instructions.",
)
@click.option(
    "--no-cache", is_flag=True, help="Always retrieve, never serve a run from the run cache."
)
@hidden_alias("--no-run-cache", "no_run_cache", is_flag=True)
@click.option("--overwrite", is_flag=True, help="Replace the experiment already in the -o folder.")
@click.option(
    "--baseline",
    default=None,
    metavar="NAME",
    help="The system the others are compared with (wins/ties/losses, per-query deltas): its "
    "spec, name= label or 1-based position (default: the first -r).",
)
@click.option(
    "--append",
    is_flag=True,
    help="Add these retrievers to the experiment already in the -o folder (same dataset, "
    "measures, profile and depth); the comparison then covers all its systems.",
)
@click.option(
    "--ray",
    default=None,
    metavar="ADDRESS",
    envvar="NUGGETBENCH_RAY_ADDRESS",
    help="Build and search sharded indexes (bm25:shard_docs=N or a bm25:memory=SIZE that shards, "
    "dense:MODEL,shard_docs=N) on a "
    "Ray cluster: auto (one running here), local (start one in this process) or HOST:PORT "
    "[env NUGGETBENCH_RAY_ADDRESS]; same runs, byte for byte.",
)
@average_over_option
@click.option(
    "--strict",
    is_flag=True,
    help="Fail (exit 2) when an LLM retriever got answers that stayed unusable after their "
    "re-asks; the scores and files are still written.",
)
@click.option(
    "--html",
    "with_html",
    is_flag=True,
    help="Also write OUTDIR/report.html (see `nuggetbench report`).",
)
def run_command(dataset, retrievers, measures, outdir, fmt, split, dataset_options, **more):
    """Retrieve on DATASET with each retriever, save the runs, score them on the dataset's
    judgments and print a table.

    DATASET is a dataset id (`nuggetbench datasets list`; found in the folders of
    $NUGGETBENCH_DATA, then the home, else downloaded) or a local dataset folder.

    \b
    Examples:
      nuggetbench run beir/scifact -r bm25 -r bm25:k1=0.9,b=0.4
      nuggetbench run beir/scifact -r bm25 --first-queries 10 -o try10
    """
    aliases = {name: more.pop(name) for name in ("chunker", "query_field")}
    old_outdir = more.pop("old_outdir")
    overwrite, append = more.pop("overwrite"), more.pop("append")
    if overwrite and append:
        raise click.UsageError("--overwrite and --append exclude each other")
    outdir = outdir or old_outdir
    with_html = more.pop("with_html")
    cells, strict = more.pop("cells"), more.pop("strict")
    no_cache, no_run_cache = more.pop("no_cache"), more.pop("no_run_cache")  # pop both, always
    queries = query_subset_of(more)
    ds = load_dataset(
        dataset, queries=queries, **parse_options(dataset_options, split=split, **aliases)
    )
    exp = run_experiment(
        ds,
        list(retrievers),
        measures=list(measures) or None,
        outdir=Path(outdir) if outdir else default_outdir(ds),
        show_progress=progress_shown() and fmt == "table",  # a bar, or lines in a log
        cache_runs=not (no_cache or no_run_cache),
        existing="overwrite" if overwrite else "append" if append else "error",
        ray=more.pop("ray") or "",  # the option reads NUGGETBENCH_RAY_ADDRESS itself
        average_over=more.pop("average_over"),
        **more,  # k, profile, with_objective
    )
    _render(exp, fmt, cells)
    _finish(exp, ds, strict=strict, with_html=with_html)


def _finish(exp: Experiment, ds, *, strict: bool, with_html: bool) -> None:
    """After the scores: the dataset's notes, what could not be saved (exit 2), unusable LLM
    answers under ``--strict`` (exit 2), then where the files are and the HTML report."""
    for note in ds.notes:
        info(note)
    if ds.query_subset is not None:  # --queries, --first-queries, --sample-queries
        info(f"queries: {ds.query_subset['how']}")
    if exp.unsaved:  # the scores are printed; what could not be saved is an error (exit 2)
        raise OutputError(exp.unsaved_message())
    failed = {
        n: k
        for n, s in exp.systems.items()
        if (k := failed_answers(s.run.metadata if s.run is not None else s.run_metadata))
    }
    if strict and failed:
        raise InputError(
            "--strict: unusable LLM answers in "
            + ", ".join(f"{n} ({k})" for n, k in failed.items())
            + f"; the results in {exp.outdir} mark them (run_metadata.llm.failed)"
        )
    info(f"runs and results saved in {exp.outdir}")
    if with_html:
        from nuggetbench import report  # lazy: jinja2 and the report's modules, only with --html

        info(f"report written to {report.html(exp, exp.outdir / 'report.html', dataset=ds)}")


def _render(exp: Experiment, fmt: str, cells=None) -> None:
    """The experiment's warnings (stderr), then its scores in *fmt* (stdout): with several
    systems the comparison (whose legend and JSON say which queries it averaged, what each
    system lacks, and the cutoffs beyond a system's depth), with one its means and the same."""
    render_findings(exp.findings())
    means = exp.means()
    report = None
    if len(exp.systems) > 1:
        try:
            report = exp.comparison()
        except InputError as exc:  # e.g. NaNs on other queries: the means are still shown
            warn(f"no comparison (no intervals or tests; the means are unaffected): {exc}")
        for note in report.notes if report is not None else ():
            warn(note)  # e.g. a measure of one query: its intervals and tests unavailable
    averaged, cut, depths = _coverage(exp)
    if cut:
        warn(depth_warning(cut, depths))
    if fmt == "json":
        out = {"dataset": exp.dataset_id, "results": means, "averaged": averaged}
        out.update({"depths": depths, "beyond_depth": cut} if cut else {})
        if report is not None:
            out["comparison"] = report.to_dict()
        echo_json(out)
        return
    title = f"{exp.dataset_id} ({exp.n_queries} queries, profile {exp.profile!r})"
    footer = "; ".join(f"{n}: {t}" for n, t in averaged.items()) if len(averaged) > 1 else ""
    footer = footer or next(iter(averaged.values()), "")
    if report is not None and fmt != "table":
        click.echo(report.render(fmt, cells=cells), nl=False)
    elif fmt in ("jsonl", "csv", "tsv"):
        records = [
            {"system": n, "measure": m, "mean": v[m]}
            for n, v in means.items()
            for m in exp.measures
        ]
        click.echo(records_text(fmt, records), nl=False)
        info(footer)
    elif fmt in ("markdown", "latex"):
        digits = {m: measure_digits(m) for m in exp.measures}
        caption = f"{title}; {footer}"
        click.echo(
            wide_text(fmt, "system", means, exp.measures, digits=digits, caption=caption),
            nl=False,
        )
    elif report is not None:
        console().print(title)
        out = console()
        out.print(report.to_rich(width=out.width))
    else:  # one system: its means (long names abbreviated, with a legend), marked
        marked = {
            n: {m + DEPTH_MARK * (m in cut.get(n, ())): v for m, v in row.items()}
            for n, row in means.items()
        }
        columns = [m + DEPTH_MARK * any(m in c for c in cut.values()) for m in exp.measures]
        render_means_table(title, marked, columns)
        console().print(
            footer + (f"; {DEPTH_MARK}: cutoff beyond the depth" if cut else ""), markup=False
        )


def _coverage(exp: Experiment) -> tuple[dict, dict, dict]:
    """``({system: which queries its means average}, {system: measures beyond its depth},
    {system: depth})``."""
    prof = get_profile(exp.profile)
    averaged = {n: averaging_text(averaging(s.results, prof)) for n, s in exp.systems.items()}
    if exp.provenance.get("average_over") == "common":
        left = exp.provenance.get("left_out") or 0
        averaged = {n: f"{t} (every system has them; {left} left out)" for n, t in averaged.items()}
    depths = {n: depth_of(s.results) for n, s in exp.systems.items()}
    cut = {n: c for n, s in exp.systems.items() if (c := shallow(s.results, exp.measures))}
    return averaged, cut, depths
