"""See the results: a self-contained HTML report, per-query differences, and figures.

``html(experiment_or_path, path)`` writes one HTML file (CSS, JS, data and SVG figures inline; it
opens from disk with no network) with five views: the summary (means, bootstrap CIs, the paired
test and correction, the systems each mean significantly beats among all pairs, the dataset's
notes, provenance), the per-query table (sortable, filterable, deltas to the baseline, how alike
each ranking is to the baseline's: RBO and weighted tau, win/tie/loss counts, sorted delta bars
and an A-vs-B scatter), the query view (opening on the largest difference; each system's top
documents side by side: rank, score, grade, snippet; shared and unjudged documents marked), the
nuggets (first supporting rank per nugget and system, nuggets no system finds, evidence spans
highlighted for span-judged benchmarks) and the depth curves (``R@k``, ``Coverage@k``, each to its
run's depth). A one-system report leaves out what compares. Systems are named by a key letter and a short label, the full names in a
legend; the page's charts are inline SVG drawn by :mod:`nuggetbench.report.svg`, so it needs no
matplotlib. The figure functions of :mod:`nuggetbench.report.figures` return matplotlib figures
for notebooks and papers; :func:`write_plots` saves one multi-panel figure per measure set as
PNG, PDF and SVG (the ``report`` extra).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench._outfolder import folder_lock
from nuggetbench.datasets import Dataset
from nuggetbench.errors import InputError
from nuggetbench.experiment import Experiment
from nuggetbench.report.data import TIE_TOLERANCE, ReportData, build_report_data, outcome
from nuggetbench.report.figures import (
    COLUMN,
    delta_figure,
    depth_figure,
    figure_svg,
    means_figure,
    panel_figure,
    scatter_figure,
    write_plots,
)
from nuggetbench.report.folders import compare_folders, is_output_folder
from nuggetbench.report.inputs import ReportInputs, load_inputs, read_results_json
from nuggetbench.report.page import render_page
from nuggetbench.report.saved import compare_to_folder

__all__ = [
    "html",
    "report_data",
    "ReportData",
    "ReportInputs",
    "build_report_data",
    "load_inputs",
    "read_results_json",
    "outcome",
    "TIE_TOLERANCE",
    "COLUMN",
    "delta_figure",
    "scatter_figure",
    "depth_figure",
    "means_figure",
    "figure_svg",
    "panel_figure",
    "write_plots",
    "render_page",
    "compare_to_folder",
    "compare_folders",
    "is_output_folder",
]


def report_data(
    source: Experiment | str | Path,
    *,
    dataset: Dataset | str | None = None,
    options: Mapping[str, Any] | None = None,
    partial: bool = False,
    **settings: Any,
) -> ReportData:
    """Load the inputs (:func:`load_inputs`, *partial* as there) and compute the report's
    content (:func:`build_report_data`; *settings*: ``baseline``, ``top``, ``snippet_chars``,
    ``depth``). Use it with the figure functions in a notebook."""
    inputs = load_inputs(source, dataset=dataset, options=options, partial=partial)
    return build_report_data(inputs, **settings)


def html(
    source: Experiment | str | Path,
    path: str | Path | None = None,
    *,
    dataset: Dataset | str | None = None,
    options: Mapping[str, Any] | None = None,
    plots: str | Path | None = None,
    partial: bool = False,
    on_missing: Callable[[str], None] | None = None,
    **settings: Any,
) -> Path:
    """Write the HTML report of an experiment or an output folder of ``nuggetbench run``.

    Args:
        source: an :class:`Experiment`, an output folder, or its ``results.json``.
        path: the HTML file (default: ``report.html`` in the output folder).
        dataset, options: the dataset and its loader options, when the recorded id alone does
            not reload it (see :func:`load_inputs`).
        plots: also write the paper figures (one per measure set) as PNG, PDF and SVG into this
            folder (needs matplotlib: the ``report`` extra).
        partial: report what ``results.json`` holds when the dataset or the runs are not
            there (or a comparison of folders on different data), with a banner saying what is
            missing, instead of an error (:func:`load_inputs`; ``nuggetbench report`` does).
        on_missing: called with each line of what is missing (``ReportData.missing``), before
            the page is written (``nuggetbench report`` prints them as warnings).
        settings: ``baseline``, ``top`` (documents per query and system, default 20),
            ``snippet_chars`` (160), ``depth`` (default: the deepest run's): see
            :func:`build_report_data`.

    Returns:
        The path written (atomically).

    Raises:
        InputError: unreadable results or runs, a dataset that differs from the one scored, an
            unknown baseline, or no path and no output folder; a report written into the
            output folder takes its lock first (:func:`nuggetbench._outfolder.folder_lock`):
            a folder another process is writing is refused, naming that process.
    """
    folder = _folder_of(source)
    if path is None:
        if folder is None:
            raise InputError("the experiment has no output folder; give the report's path")
        path = folder / "report.html"
    path = Path(path)
    own = folder is not None and folder.is_dir() and _same(path.parent, folder)
    with folder_lock(folder, "nuggetbench report") if own else contextlib.nullcontext():
        inputs = load_inputs(source, dataset=dataset, options=options, partial=partial)
        data = build_report_data(inputs, **settings)
        for line in data.missing if on_missing is not None else ():
            on_missing(line)
        text = render_page(data, source=inputs.source)
        with atomic_write(path) as fh:
            fh.write(text)
    if plots is not None:
        write_plots(data, plots)
    return path


def _folder_of(source: Experiment | str | Path) -> Path | None:
    """The output folder of *source* (an experiment's ``outdir``, a folder, or the folder of a
    ``results.json``), ``None`` for an experiment kept in memory."""
    if isinstance(source, Experiment):
        return Path(source.outdir) if source.outdir else None
    source = Path(source)
    return source.parent if source.name == "results.json" and not source.is_dir() else source


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
