"""``nuggetbench compare``: paired significance tests and bootstrap intervals for several runs."""

from __future__ import annotations

from pathlib import Path

import click

from nuggetbench._outfolder import folder_notes
from nuggetbench.cli._common import (
    console,
    dataset_options,
    info,
    measure_option,
    parse_options,
    query_options,
    query_subset_of,
    run_file_options,
    run_reading,
    stats_options,
    warn,
)
from nuggetbench.cli._formats import cells_option, format_option
from nuggetbench.errors import InputError
from nuggetbench.evaluation import compare_run_files
from nuggetbench.report import compare_folders, compare_to_folder, is_output_folder


@click.command("compare", context_settings={"help_option_names": ["-h", "--help"]})
@dataset_options
@query_options
@click.argument("qrels")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True))
@measure_option
@click.option(
    "--baseline",
    default=None,
    metavar="NAME",
    help="Baseline run: its name (file stem; FOLDER/SYSTEM or SYSTEM for output folders) or "
    "1-based position (default: the first RUN).",
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
@cells_option
@click.option(
    "-o",
    "--outdir",
    type=click.Path(file_okay=False),
    default=None,
    help="Also save the comparison here as an output folder (results.json: per-query values, "
    "the comparison, where each run is), which `nuggetbench report` and Experiment.load read.",
)
@run_file_options
def compare_command(qrels, runs, measures, profile, split, dataset_options, fmt, outdir, **stats):
    """Compare RUNS on QRELS: means with bootstrap CIs, and each run against the baseline
    with a paired test, corrected p-values and effect sizes.

    QRELS is a qrels file or a dataset id (then its default measures, profile and candidate
    pools apply). Each RUN is a TREC run, a JSON {query: {doc: score}} run, or a rank file
    {query: [doc, ...]} as a pickle (read safely) or JSON. A dagger marks significant differences.

    Output folders of `nuggetbench run` compare too (give only folders): every system of each,
    named FOLDER/SYSTEM, each scored on the dataset loaded with the options its folder recorded
    (-O chunker=..., the split); the folders must share the dataset and queries. With -o the
    comparison is saved as a folder for `nuggetbench report` (figures with --plots).

    \b
    Examples:
      nuggetbench compare qrels.txt bm25.trec dense.trec splade.trec -m nDCG@10 -m AP
      nuggetbench compare DATASET run1.pickle run2.pickle --test randomization --format markdown
      nuggetbench compare OUT_A OUT_B -o AB
    """
    cells = stats.pop("cells")  # markdown/latex cell parts (a formatting option)
    options = parse_options(dataset_options, split=split)
    measures, reading = list(measures) or None, run_reading(stats)
    stats["queries"] = query_subset_of(stats)
    for note in folder_notes([qrels, *runs]):  # folders (or their runs) of an interrupted run
        warn(note)
    if is_output_folder(qrels):
        _folders_only(runs, options, reading)
        report = compare_folders([qrels, *runs], measures, profile, outdir=outdir, **stats)
    elif _files_only(runs) and outdir:
        args = (qrels, runs, outdir, measures, profile)
        report = compare_to_folder(*args, options=options, **reading, **stats)
    else:
        args = (qrels, runs, measures, profile)
        report = compare_run_files(*args, options=options, **reading, **stats)
    _say_notes(report.notes)
    if fmt == "table":
        out = console()
        out.print(report.to_rich(width=out.width))
    else:
        click.echo(report.render(fmt, cells=cells), nl=False)


def _say_notes(notes: list[str]) -> None:
    """The comparison's notes on stderr: the folders and query subset said as they are, the
    rest as warnings."""
    for note in notes:
        (info if note.startswith(("queries: ", "folders: ")) else warn)(note)


def _folders_only(runs, options: dict, reading: dict) -> None:
    """Output folders compare with each other only, with the options they record."""
    files = [r for r in runs if not is_output_folder(r)]
    if files:
        raise InputError(
            f"{files[0]} is not an output folder (no results.json): the first argument is one, so "
            "give only output folders of `nuggetbench run` (or a dataset, then run files)"
        )
    given = ["-O/--split"] * bool(options)
    given += ["--ignore-trailing/--duplicates"] * (
        reading != {"trailing": "error", "duplicates": None}
    )
    if given:
        raise InputError(
            f"{' and '.join(given)}: not for output folders: each folder is scored with the "
            "dataset options it records, from the runs it wrote"
        )


def _files_only(runs) -> bool:
    """Run files after a dataset or qrels file (a folder is refused, naming the other form)."""
    for r in runs:
        if Path(r).is_dir():
            form = "only" if is_output_folder(r) else "output"
            raise InputError(
                f"{r} is a folder, not a run file; to compare the output folders of `nuggetbench "
                f"run`, give {form} folders (nuggetbench compare OUT_A OUT_B), each scored with "
                "the dataset options it records"
            )
    return True
