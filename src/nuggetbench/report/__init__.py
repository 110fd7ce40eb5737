"""See the results: a self-contained HTML report, per-query differences, and figures.

``html(experiment_or_path, path)`` writes one HTML file (CSS, JS, data and SVG figures inline; it
opens from disk with no network) with five views: the summary (means, bootstrap CIs, the paired
test and correction, provenance), the per-query table (sortable, filterable, deltas to the
baseline, win/tie/loss counts, sorted delta bars and an A-vs-B scatter), the query view (each
system's top documents side by side: rank, score, grade, snippet; shared and unjudged documents
marked), the nuggets (first supporting rank per nugget and system, nuggets no system finds,
evidence spans highlighted for span-judged benchmarks) and the depth curves (``R@k``,
``Coverage@k``). Systems are named by a key letter and a short label, the full names in a
legend; the page's charts are inline SVG drawn by :mod:`nuggetbench.report.svg`, so it needs no
matplotlib. The figure functions of :mod:`nuggetbench.report.figures` return matplotlib figures
for notebooks and papers; :func:`write_plots` saves one multi-panel figure per measure set as
PNG, PDF and SVG (the ``report`` extra).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
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
    **settings: Any,
) -> ReportData:
    """Load the inputs (:func:`load_inputs`) and compute the report's content
    (:func:`build_report_data`; *settings*: ``baseline``, ``top``, ``snippet_chars``, ``depth``).
    Use it with the figure functions in a notebook."""
    return build_report_data(load_inputs(source, dataset=dataset, options=options), **settings)


def html(
    source: Experiment | str | Path,
    path: str | Path | None = None,
    *,
    dataset: Dataset | str | None = None,
    options: Mapping[str, Any] | None = None,
    plots: str | Path | None = None,
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
        settings: ``baseline``, ``top`` (documents per query and system, default 20),
            ``snippet_chars`` (160), ``depth`` (100): see :func:`build_report_data`.

    Returns:
        The path written (atomically).

    Raises:
        InputError: unreadable results or runs, a dataset that differs from the one scored, an
            unknown baseline, or no path and no output folder.
    """
    inputs = load_inputs(source, dataset=dataset, options=options)
    if path is None:
        if inputs.source == "<experiment>":
            raise InputError("the experiment has no output folder; give the report's path")
        path = Path(inputs.source) / "report.html"
    data = build_report_data(inputs, **settings)
    text = render_page(data, source=inputs.source)
    path = Path(path)
    with atomic_write(path) as fh:
        fh.write(text)
    if plots is not None:
        write_plots(data, plots)
    return path
