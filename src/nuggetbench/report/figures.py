"""Figures for papers and notebooks: functions that return matplotlib figures.

Each function takes a :class:`~nuggetbench.report.data.ReportData` and returns a
:class:`matplotlib.figure.Figure` sized for one column of a two-column paper (3.5 x 2.4 inches,
8-point text; ``wide=True`` gives the full text width, 7.16 inches). The HTML report embeds the same
figures as SVG; :func:`write_plots` saves them as PNG (300 dpi) and SVG. matplotlib is an optional
dependency (``pip install nuggetbench[report]``).

- :func:`delta_figure`: the per-query differences ``system - baseline`` on one measure, sorted
  (bars; above zero the system wins). Many queries are drawn as one filled step curve.
- :func:`scatter_figure`: per-query values of system A (x) against system B (y), with the diagonal.
- :func:`depth_figure`: mean ``R@k`` or ``Coverage@k`` against ``k`` per system.
- :func:`means_figure`: means with their bootstrap confidence intervals, one panel per measure.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench.errors import InputError
from nuggetbench.report.data import ReportData

__all__ = [
    "COLUMN",
    "delta_figure",
    "scatter_figure",
    "depth_figure",
    "means_figure",
    "figure_svg",
    "write_plots",
]

#: Width and height in inches of a one-column figure (two-column paper, e.g. ACM/IEEE).
COLUMN = (3.5, 2.4)
WIDE = 7.16
#: Beyond this many queries, the bars of a delta figure and the points of a scatter are drawn as
#: an image inside the SVG (axes and text stay vector), so a 7,000-query report stays small.
RASTER_ABOVE = 2000
_STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "svg.fonttype": "none",
}


def _plt() -> Any:
    try:
        import matplotlib  # lazy: optional heavy dependency (the report extra)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise InputError("figures need matplotlib: pip install 'nuggetbench[report]'") from exc
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _figure(wide: bool = False, height: float | None = None) -> tuple[Any, Any]:
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(WIDE if wide else COLUMN[0], height or COLUMN[1]))
    return fig, ax


def _check(data: ReportData, system: str, measure: str) -> None:
    if system not in data.systems:
        raise InputError(f"unknown system {system!r}; the systems are {', '.join(data.systems)}")
    if measure not in data.measures:
        raise InputError(
            f"unknown measure {measure!r}; the measures are {', '.join(data.measures)}"
        )


def delta_figure(
    data: ReportData, measure: str, system: str, baseline: str | None = None, *, wide: bool = False
) -> Any:
    """Sorted per-query differences ``system - baseline`` on *measure* (NaN queries left out).

    Returns:
        a matplotlib ``Figure``; its title gives the win/tie/loss counts.

    Raises:
        InputError: an unknown system or measure.
    """
    baseline = baseline or data.baseline
    _check(data, system, measure)
    _check(data, baseline, measure)
    d = data.per_query[system][measure] - data.per_query[baseline][measure]
    d = np.sort(d[~np.isnan(d)])[::-1]
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = _figure(wide)
        x = np.arange(len(d) + 1)
        edges = np.append(d, d[-1] if len(d) else 0.0)
        raster = len(d) > RASTER_ABOVE  # thousands of bars: an image inside the SVG
        for where, colour in ((edges >= 0, "#2a7d2a"), (edges <= 0, "#b22222")):
            ax.fill_between(
                x, 0, edges, step="post", where=where, color=colour, lw=0, rasterized=raster
            )
        ax.axhline(0, color="black", lw=0.5)
        w = int((d > 1e-9).sum())
        lo = int((d < -1e-9).sum())
        ax.set_title(f"{system} \u2212 {baseline}\n{w} wins, {len(d) - w - lo} ties, {lo} losses")
        ax.set_xlabel("queries, sorted by difference")
        ax.set_ylabel(f"\u0394 {measure}")
        ax.set_xlim(0, max(len(d), 1))
        fig.tight_layout()
    return fig


def scatter_figure(data: ReportData, measure: str, system_a: str, system_b: str) -> Any:
    """Per-query *measure* of *system_a* (x) against *system_b* (y), with ``y = x``.

    Points are drawn semi-transparent (and rasterised inside the SVG beyond ``RASTER_ABOVE``
    queries, to keep files small). Raises :class:`InputError` for an unknown system or measure.
    """
    _check(data, system_a, measure)
    _check(data, system_b, measure)
    x = data.per_query[system_a][measure]
    y = data.per_query[system_b][measure]
    keep = ~(np.isnan(x) | np.isnan(y))
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = _figure(height=COLUMN[0] * 0.9)
        ax.scatter(
            x[keep],
            y[keep],
            s=6,
            alpha=0.35,
            lw=0,
            color="#1f5f9f",
            rasterized=bool(keep.sum() > RASTER_ABOVE),
        )
        lo = float(min(x[keep].min(initial=0), y[keep].min(initial=0)))
        hi = float(max(x[keep].max(initial=1), y[keep].max(initial=1)))
        ax.plot([lo, hi], [lo, hi], color="gray", lw=0.6, ls="--")
        ax.set_xlabel(f"{measure}: {system_a}")
        ax.set_ylabel(f"{measure}: {system_b}")
        ax.set_aspect("equal", adjustable="box")
        fig.tight_layout()
    return fig


def depth_figure(data: ReportData, family: str = "R", *, wide: bool = False) -> Any:
    """Mean ``{family}@k`` against ``k`` (``data.depth_k``) per system; *family* is ``"R"`` or
    ``"Coverage"`` (the latter only with nugget judgments). Raises :class:`InputError` otherwise."""
    if family not in data.depth:
        raise InputError(
            f"no {family}@k curves in this report (have: {', '.join(data.depth)}); Coverage needs "
            "nugget judgments"
        )
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = _figure(wide)
        for name, curve in data.depth[family].items():
            ax.plot(data.depth_k, curve, lw=1.2, label=name)
        ax.set_xscale("log")
        ax.set_xlabel("k (log scale)")
        ax.set_ylabel(f"mean {family}@k")
        top = max(float(np.nanmax(c)) for c in data.depth[family].values())
        ax.set_ylim(0, max(1.0, top) * 1.02)  # profiles that scale by 100 (birco) go above 1
        ax.grid(alpha=0.3, lw=0.4)
        ax.legend(loc="upper left", frameon=False)
        fig.tight_layout()
    return fig


def means_figure(data: ReportData, measure: str) -> Any:
    """Each system's mean *measure* with its bootstrap CI (from the comparison; without one, no
    interval). Raises :class:`InputError` for an unknown measure."""
    _check(data, data.systems[0], measure)
    est = {
        e["system"]: e
        for e in (data.comparison or {}).get("estimates", [])
        if e["measure"] == measure
    }
    means = [float(np.nanmean(data.per_query[s][measure])) for s in data.systems]
    lo = [means[i] - est[s]["ci_low"] if s in est else 0 for i, s in enumerate(data.systems)]
    hi = [est[s]["ci_high"] - means[i] if s in est else 0 for i, s in enumerate(data.systems)]
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = _figure(height=0.45 + 0.28 * len(data.systems))
        y = np.arange(len(data.systems))[::-1]
        ax.errorbar(means, y, xerr=[lo, hi], fmt="o", ms=3, capsize=2, color="#1f5f9f")
        ax.set_yticks(y, data.systems)
        ax.set_xlabel(f"mean {measure} (95% bootstrap CI)")
        ax.grid(axis="x", alpha=0.3, lw=0.4)
        fig.tight_layout()
    return fig


def figure_svg(fig: Any) -> str:
    """The figure as an SVG string (``<svg ...>`` without the XML prolog), then closed."""
    plt = _plt()
    buf = io.StringIO()
    with plt.rc_context(_STYLE):
        fig.savefig(buf, format="svg", dpi=150)
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _name(*parts: str) -> str:
    return "_".join(re.sub(r"[^A-Za-z0-9.=+-]+", "-", p).strip("-") for p in parts)


def figures(data: ReportData) -> dict[str, Any]:
    """Every figure of a report, by file stem: means, per measure and system the delta and the
    scatter against the baseline, and the depth curves."""
    out: dict[str, Any] = {}
    for m in data.measures:
        out[_name("means", m)] = lambda m=m: means_figure(data, m)
        for s in data.systems:
            if s != data.baseline:
                out[_name("delta", m, s)] = lambda m=m, s=s: delta_figure(data, m, s)
                out[_name("scatter", m, s)] = lambda m=m, s=s: scatter_figure(
                    data, m, data.baseline, s
                )
    for family in data.depth:
        out[_name("depth", family)] = lambda f=family: depth_figure(data, f)
    return out


def write_plots(data: ReportData, folder: str | Path) -> list[Path]:
    """Save every figure of :func:`figures` as ``<stem>.png`` (300 dpi) and ``<stem>.svg`` in
    *folder* (created), each written atomically. Returns the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    written = []
    for stem, make in figures(data).items():
        fig = make()
        with plt.rc_context(_STYLE):
            for ext in ("png", "svg"):
                path = folder / f"{stem}.{ext}"
                with atomic_write(path, mode="wb") as fh:
                    fig.savefig(fh, format=ext, dpi=300)
                written.append(path)
        plt.close(fig)
    return written
