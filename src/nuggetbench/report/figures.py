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
- :func:`means_figure`: means with their bootstrap confidence intervals on one measure.
- :func:`panel_figure`: one multi-panel figure of a kind (``means``: a panel per measure;
  ``delta`` and ``scatter``: a row per system against the baseline, a column per measure;
  ``depth``: a panel per curve family), full text width.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench.errors import InputError
from nuggetbench.report.data import LABEL_CHARS, ReportData
from nuggetbench.spec import short_label

__all__ = [
    "COLUMN",
    "delta_figure",
    "scatter_figure",
    "depth_figure",
    "means_figure",
    "figure_svg",
    "panel_figure",
    "write_plots",
    "FORMATS",
]

#: Width and height in inches of a one-column figure (two-column paper, e.g. ACM/IEEE).
COLUMN = (3.5, 2.4)
WIDE = 7.16
#: Beyond this many queries, the bars of a delta figure and the points of a scatter are drawn as
#: an image inside the SVG (axes and text stay vector), so a 7,000-query report stays small.
RASTER_ABOVE = 2000
#: The files :func:`write_plots` writes per figure.
FORMATS = ("png", "pdf", "svg")
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
        fig, ax = plt.subplots(
            figsize=(WIDE if wide else COLUMN[0], height or COLUMN[1]), layout="constrained"
        )
    return fig, ax


def _label(data: ReportData, name: str) -> str:
    """*name*'s short label, distinct from the other systems' (``spec.short_labels``)."""
    labels = dict(zip(data.systems, data.payload.get("labels") or ()))
    return labels.get(name) or short_label(name, LABEL_CHARS)


def _check(data: ReportData, system: str, measure: str) -> None:
    if system not in data.systems:
        raise InputError(f"unknown system {system!r}; the systems are {', '.join(data.systems)}")
    if measure not in data.measures:
        raise InputError(
            f"unknown measure {measure!r}; the measures are {', '.join(data.measures)}"
        )


def _deltas(data: ReportData, measure: str, system: str, baseline: str) -> np.ndarray:
    d = data.per_query[system][measure] - data.per_query[baseline][measure]
    return np.sort(d[~np.isnan(d)])[::-1]


def _draw_delta(ax: Any, d: np.ndarray) -> tuple[int, int, int]:
    """Sorted differences as a filled step curve; returns (wins, ties, losses)."""
    x = np.arange(len(d) + 1)
    edges = np.append(d, d[-1] if len(d) else 0.0)
    raster = len(d) > RASTER_ABOVE  # thousands of bars: an image inside the SVG
    for where, colour in ((edges >= 0, "#2a7d2a"), (edges <= 0, "#b22222")):
        ax.fill_between(
            x, 0, edges, step="post", where=where, color=colour, lw=0, rasterized=raster
        )
    ax.axhline(0, color="black", lw=0.5)
    ax.set_xlim(0, max(len(d), 1))
    w, lo = int((d > 1e-9).sum()), int((d < -1e-9).sum())
    return w, len(d) - w - lo, lo


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
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = _figure(wide)
        w, t, lo = _draw_delta(ax, _deltas(data, measure, system, baseline))
        ax.set_title(
            f"{_label(data, system)} \u2212 {_label(data, baseline)}\n{w} wins, {t} ties, {lo} losses"
        )
        ax.set_xlabel("queries, sorted by difference")
        ax.set_ylabel(f"\u0394 {measure}")
    return fig


def _draw_scatter(ax: Any, x: np.ndarray, y: np.ndarray) -> None:
    keep = ~(np.isnan(x) | np.isnan(y))
    raster = bool(keep.sum() > RASTER_ABOVE)
    ax.scatter(x[keep], y[keep], s=6, alpha=0.35, lw=0, color="#1f5f9f", rasterized=raster)
    lo = float(min(x[keep].min(initial=0), y[keep].min(initial=0)))
    hi = float(max(x[keep].max(initial=1), y[keep].max(initial=1)))
    ax.plot([lo, hi], [lo, hi], color="gray", lw=0.6, ls="--")
    ax.set_aspect("equal", adjustable="box")


def scatter_figure(data: ReportData, measure: str, system_a: str, system_b: str) -> Any:
    """Per-query *measure* of *system_a* (x) against *system_b* (y), with ``y = x``.

    Points are drawn semi-transparent (and rasterised inside the SVG beyond ``RASTER_ABOVE``
    queries, to keep files small). Raises :class:`InputError` for an unknown system or measure.
    """
    _check(data, system_a, measure)
    _check(data, system_b, measure)
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = _figure(height=COLUMN[0] * 0.9)
        _draw_scatter(ax, data.per_query[system_a][measure], data.per_query[system_b][measure])
        ax.set_xlabel(f"{measure}: {_label(data, system_a)}")
        ax.set_ylabel(f"{measure}: {_label(data, system_b)}")
    return fig


def _check_family(data: ReportData, family: str) -> None:
    if family not in data.depth:
        raise InputError(
            f"no {family}@k curves in this report (have: {', '.join(data.depth)}); Coverage needs "
            "nugget judgments"
        )


def _draw_depth(ax: Any, data: ReportData, family: str) -> None:
    for name, curve in data.depth[family].items():
        ax.plot(data.depth_k, curve, lw=1.2, label=_label(data, name))
    ax.set_xscale("log")
    kmax = max(data.depth_k)
    ax.set_xticks([k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if k <= kmax])
    ax.xaxis.set_major_formatter(_plt().ScalarFormatter())
    ax.xaxis.set_minor_formatter(_plt().NullFormatter())
    ax.set_xlabel("k (log scale)")
    ax.set_ylabel(f"mean {family}@k")
    top = max(float(np.nanmax(c)) for c in data.depth[family].values())
    ax.set_ylim(0, max(1.0, top) * 1.02)  # profiles that scale by 100 (birco) go above 1
    ax.grid(alpha=0.3, lw=0.4)


def depth_figure(data: ReportData, family: str = "R", *, wide: bool = False) -> Any:
    """Mean ``{family}@k`` against ``k`` (``data.depth_k``) per system, the legend below the
    axes; *family* is ``"R"`` or ``"Coverage"`` (the latter only with nugget judgments). Raises
    :class:`InputError` otherwise."""
    _check_family(data, family)
    plt = _plt()
    with plt.rc_context(_STYLE):
        cols = 3 if wide else 1  # 22-character labels: one column fits 3.5 inches
        rows = -(-len(data.systems) // cols)
        fig, ax = _figure(wide, height=COLUMN[1] + 0.14 * rows)
        _draw_depth(ax, data, family)
        fig.legend(loc="outside lower center", ncols=cols, frameon=False)
    return fig


def _draw_means(ax: Any, data: ReportData, measure: str, labels: bool = True) -> bool:
    """Means with their CI (from the comparison) on *measure*; returns whether CIs were drawn."""
    est = {
        e["system"]: e
        for e in (data.comparison or {}).get("estimates", [])
        if e["measure"] == measure
    }
    # a count measure's comparison is of totals (compare.core._scale_to_totals): its point is
    # the comparison's total, so that point and interval share one aggregate
    total = measure in (data.comparison or {}).get("totals", ())
    means = [
        float(est[s]["mean"])
        if total and s in est
        else float(np.nanmean(data.per_query[s][measure]))
        for s in data.systems
    ]
    # an interval that could not be computed (a measure of fewer than two queries): no bar
    low = [_finite((est.get(s) or {}).get("ci_low")) for s in data.systems]
    high = [_finite((est.get(s) or {}).get("ci_high")) for s in data.systems]
    lo = [max(0.0, m - v) if v is not None else 0 for m, v in zip(means, low)]
    hi = [max(0.0, v - m) if v is not None else 0 for m, v in zip(means, high)]
    y = np.arange(len(data.systems))[::-1]
    ax.errorbar(means, y, xerr=[lo, hi], fmt="o", ms=3, capsize=2, color="#1f5f9f")
    ax.set_yticks(y, [_label(data, s) for s in data.systems] if labels else [])
    ax.set_ylim(-0.6, len(data.systems) - 0.4)
    ax.grid(axis="x", alpha=0.3, lw=0.4)
    ax.xaxis.set_major_locator(_plt().MaxNLocator(4))
    return any(v is not None for v in low)


def _finite(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _ci_label(data: ReportData, measure: str, with_ci: bool) -> str:
    level = round(100 * (data.comparison or {}).get("ci", 0.95))
    what = "total" if measure in (data.comparison or {}).get("totals", ()) else "mean"
    return f"{what} {measure}\n({level}% bootstrap CI)" if with_ci else f"mean {measure}"


def means_figure(data: ReportData, measure: str) -> Any:
    """Each system's mean *measure* with its bootstrap CI (from the comparison; without one, no
    interval). Raises :class:`InputError` for an unknown measure."""
    _check(data, data.systems[0], measure)
    plt = _plt()
    with plt.rc_context(_STYLE):
        fig, ax = _figure(height=0.7 + 0.2 * len(data.systems))
        ax.set_xlabel(_ci_label(data, measure, _draw_means(ax, data, measure)))
    return fig


def _grid(rows: int, cols: int, height: float, **kw: Any) -> tuple[Any, Any]:
    plt = _plt()
    fig, axes = plt.subplots(
        rows, cols, figsize=(WIDE, height), squeeze=False, layout="constrained", **kw
    )
    return fig, axes


def panel_figure(data: ReportData, kind: str) -> Any:
    """One multi-panel figure, the full text width (7.16 inches), of *kind*:

    - ``means``: a panel per measure (means and CIs), system labels on the first column;
    - ``delta`` / ``scatter``: a row per system against the baseline, a column per measure;
    - ``depth``: a panel per curve family (``R``, ``Coverage``), one legend below.

    Raises:
        InputError: an unknown kind, or ``delta``/``scatter`` with one system.
    """
    plt = _plt()
    ms, others = data.measures, [s for s in data.systems if s != data.baseline]
    with plt.rc_context(_STYLE):
        if kind == "means":
            cols = min(len(ms), 4)
            rows = -(-len(ms) // cols)
            fig, axes = _grid(rows, cols, rows * (0.75 + 0.17 * len(data.systems)))
            for i, ax in enumerate(axes.flat):
                if i >= len(ms):
                    ax.set_visible(False)
                    continue
                ax.set_xlabel(_ci_label(data, ms[i], _draw_means(ax, data, ms[i], i % cols == 0)))
        elif kind in ("delta", "scatter") and others:
            side = WIDE / max(len(ms), 1)
            height = len(others) * (min(side, 1.9) if kind == "scatter" else 1.2) + 0.5
            fig, axes = _grid(len(others), len(ms), height)
            for r, s in enumerate(others):
                for c, m in enumerate(ms):
                    _panel_pair(data, axes[r][c], kind, m, s, r == len(others) - 1, c == 0)
            _key_legend(fig, data)
        elif kind == "depth":
            fams = list(data.depth)
            fig, axes = _grid(1, len(fams), COLUMN[1] + 0.14 * -(-len(data.systems) // 3))
            for ax, fam in zip(axes[0], fams):
                _draw_depth(ax, data, fam)
            fig.legend(
                *axes[0][0].get_legend_handles_labels(),
                loc="outside lower center",
                ncols=min(3, len(data.systems)),
                frameon=False,
            )
        else:
            raise InputError(
                f"unknown figure kind {kind!r} (means, delta, scatter, depth; delta and scatter "
                "need two systems)"
            )
    return fig


def _panel_pair(data: ReportData, ax: Any, kind: str, m: str, s: str, last: bool, first: bool):
    """One panel of the delta or scatter grid: system *s* against the baseline on *m*."""
    base = data.baseline
    key = dict(zip(data.systems, data.payload["keys"]))
    if kind == "delta":
        w, t, lo = _draw_delta(ax, _deltas(data, m, s, base))
        ax.set_title(f"{m}  (W/T/L {w}/{t}/{lo})", fontsize=7)
        ax.set_xticks([])
        if last:
            ax.set_xlabel("queries by \u0394")
        if first:
            ax.set_ylabel(f"\u0394 {key[s]} \u2212 {key[base]}")
        return
    _draw_scatter(ax, data.per_query[base][m], data.per_query[s][m])
    ax.set_title(m, fontsize=7)
    if last:
        ax.set_xlabel(f"{key[base]} (baseline)")
    if first:
        ax.set_ylabel(key[s])


def _key_legend(fig: Any, data: ReportData) -> None:
    """The systems' keys and short labels, below the panels (a legend without handles)."""
    plt = _plt()
    labels = [f"{k}: {_label(data, s)}" for k, s in zip(data.payload["keys"], data.systems)]
    handles = [plt.Line2D([], [], lw=0) for _ in labels]
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=3,
        frameon=False,
        handlelength=0,
        handletextpad=0,
        columnspacing=1.5,
    )


def figure_svg(fig: Any) -> str:
    """The figure as an SVG string (``<svg ...>`` without the XML prolog), then closed."""
    plt = _plt()
    buf = io.StringIO()
    with plt.rc_context(_STYLE):
        fig.savefig(buf, format="svg", dpi=150)
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def figures(data: ReportData) -> dict[str, Any]:
    """The paper figures of a report, by file stem, one per measure set: ``means`` (a panel per
    measure), ``deltas`` and ``scatter`` (a row per system against the baseline, a column per
    measure; with two systems or more) and ``depth`` (a panel per curve family; not when the
    report has no depth curves: numbers only)."""
    out: dict[str, Any] = {"means": lambda: panel_figure(data, "means")}
    if len(data.systems) > 1:
        out["deltas"] = lambda: panel_figure(data, "delta")
        out["scatter"] = lambda: panel_figure(data, "scatter")
    if data.depth:  # numbers only (no runs or dataset): no depth curves
        out["depth"] = lambda: panel_figure(data, "depth")
    return out


def write_plots(data: ReportData, folder: str | Path) -> list[Path]:
    """Save every figure of :func:`figures` as ``<stem>.png`` (300 dpi), ``<stem>.pdf`` and
    ``<stem>.svg`` in *folder* (created), each written atomically with a tight bounding box (no
    label cut). Returns the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    written = []
    for stem, make in figures(data).items():
        fig = make()
        with plt.rc_context(_STYLE):
            for ext in FORMATS:
                path = folder / f"{stem}.{ext}"
                with atomic_write(path, mode="wb") as fh:
                    fig.savefig(fh, format=ext, dpi=300, bbox_inches="tight", pad_inches=0.03)
                written.append(path)
        plt.close(fig)
    return written
