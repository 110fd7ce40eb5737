"""``nuggetbench report``: a self-contained HTML report (and paper figures) of an output folder."""

from __future__ import annotations

from pathlib import Path

import click

from nuggetbench import report
from nuggetbench._outfolder import folder_notes
from nuggetbench.cli._common import dataset_option, info, parse_options, warn


@click.command("report", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("outdir", type=click.Path(exists=True))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="The HTML file to write (default: OUTDIR/report.html).",
)
@click.option(
    "--plots",
    type=click.Path(file_okay=False),
    default=None,
    help="Also write the paper figures (means, deltas, scatter, depth: one multi-panel figure "
    "each) as PNG (300 dpi), PDF and SVG into this folder, the full text width of a two-column "
    "paper; needs matplotlib (the report extra).",
)
@click.option(
    "--baseline",
    default=None,
    metavar="NAME",
    help="System the deltas and win/tie/loss counts are taken against (default: the results' baseline).",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Documents shown per query and system (with snippets).",
)
@click.option(
    "--snippet-chars",
    type=click.IntRange(min=0),
    default=160,
    show_default=True,
    help="Characters of each document shown (span-judged benchmarks show whole passages).",
)
@dataset_option
def report_command(outdir, output, plots, baseline, top, snippet_chars, dataset_options):
    """Write an HTML report of OUTDIR, the output folder of `nuggetbench run` (results.json and
    runs/) or of `nuggetbench compare -o`: summary with CIs and tests, per-query table and plots,
    query view, nuggets, depth curves. It opens from disk with no network.

    Without the dataset on this machine (or without the run files, or for a comparison of
    folders scored on different data), the report shows the numbers results.json holds (means,
    intervals, tests, per-query values, wins/ties/losses) and says what is missing.

    \b
    Examples:
      nuggetbench report ~/.cache/nuggetbench/outputs/beir_scifact/20260101-120000 --plots figs
      nuggetbench compare OUT_A OUT_B -o AB && nuggetbench report AB --plots AB/figs
    """
    for note in folder_notes([outdir]):  # an interrupted run: reported, with this warning
        warn(note)
    path = report.html(
        Path(outdir),
        Path(output) if output else None,
        options=parse_options(dataset_options),
        plots=plots,
        partial=True,  # the dataset or runs absent: the numbers-only views, and a note
        on_missing=lambda line: warn(f"numbers only: {line}"),
        baseline=baseline,
        top=top,
        snippet_chars=snippet_chars,
    )
    info(f"report written to {path}" + (f"; figures in {plots}" if plots else ""))
