"""``nuggetbench compare``: paired significance tests and bootstrap intervals for several runs."""

from __future__ import annotations

import click

from nuggetbench._outfolder import folder_notes
from nuggetbench.cli._common import (
    console,
    dataset_options,
    measure_option,
    parse_options,
    stats_options,
    warn,
)
from nuggetbench.cli._formats import format_option
from nuggetbench.evaluation import compare_run_files
from nuggetbench.report import compare_to_folder


@click.command("compare", context_settings={"help_option_names": ["-h", "--help"]})
@dataset_options
@click.argument("qrels")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@measure_option
@click.option(
    "--baseline",
    default=None,
    metavar="NAME",
    help="Baseline run: its name (file stem) or 1-based position (default: the first RUN).",
)
@stats_options
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level (applied to corrected p-values).",
)
@click.option(
    "--ci",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of the bootstrap intervals.",
)
@format_option()
@click.option(
    "-o",
    "--outdir",
    type=click.Path(file_okay=False),
    default=None,
    help="Also save results.json (per-query values, comparison) here, for `nuggetbench report`.",
)
def compare_command(qrels, runs, measures, profile, split, dataset_options, fmt, outdir, **stats):
    """Compare RUNS on QRELS: means with bootstrap CIs, and each run against the baseline
    with a paired test, corrected p-values and effect sizes.

    QRELS is a qrels file or a dataset id (then its default measures, profile and candidate
    pools apply). Each RUN is a TREC run, a JSON {query: {doc: score}} run, or a rank file
    {query: [doc, ...]} as a pickle (read safely) or JSON. A dagger marks significant differences.

    \b
    Examples:
      nuggetbench compare qrels.txt bm25.trec dense.trec splade.trec -m nDCG@10 -m AP
      nuggetbench compare DATASET run1.pickle run2.pickle --test randomization --format markdown
    """
    options = parse_options(dataset_options, split=split)
    measures = list(measures) or None
    for note in folder_notes(list(runs)):  # runs of an interrupted `nuggetbench run`
        warn(note)
    if outdir:
        report = compare_to_folder(qrels, runs, outdir, measures, profile, options=options, **stats)
    else:
        report = compare_run_files(qrels, runs, measures, profile, options=options, **stats)
    for note in report.notes:
        warn(note)
    if fmt == "table":
        out = console()
        out.print(report.to_rich(width=out.width))
    else:
        click.echo(report.render(fmt), nl=False)
