"""The page's charts as inline SVG drawn from the numbers (no matplotlib: the base install).

Each function returns one ``<svg>`` element (a string, ``viewBox`` so it scales with the page,
text in CSS pixels at 13 px) with every label inside its canvas: the axes leave margins for the
tick labels and titles, and legends sit beside the plot, off the data. Text is escaped.

- :func:`delta_svg`: sorted per-query differences as filled steps (green above zero, red below),
  the win/tie/loss counts in the title; beyond ``MAX_STEPS`` queries, evenly spaced samples of
  the sorted values (the same curve at this size).
- :func:`scatter_svg`: per-query values of two systems with the diagonal; points falling on the
  same pixel are drawn once, darker with their count, so thousands of queries stay small.
- :func:`depth_svg`: mean ``R@k`` / ``Coverage@k`` against ``k`` (log scale), legend on the right.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape

import numpy as np

__all__ = ["delta_svg", "scatter_svg", "depth_svg", "PALETTE"]

#: Line colours of the systems, in results order (Okabe-Ito, readable by colour-blind readers).
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442")
_W, _H = 480, 300
#: At most this many steps in a delta chart (evenly spaced samples of the sorted differences).
MAX_STEPS = 800
_L, _R, _T, _B = 56, 12, 40, 40  # margins: left, right, top, bottom


def _text(x: float, y: float, s: str, anchor: str = "middle", **attrs: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{escape(s)}</text>'


def _svg(body: list[str], width: int = _W, height: int = _H, label: str = "") -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" font-family="system-ui,sans-serif" font-size="13" '
        f'role="img" aria-label="{escape(label)}">'
        f'<rect width="{width}" height="{height}" fill="#fff"/>' + "".join(body) + "</svg>"
    )


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 2.5, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _fmt(v: float) -> str:
    return f"{v:g}" if abs(v) >= 1e-9 else "0"


def _axes(box: tuple, xr: tuple, yr: tuple, xlabel: str, ylabel: str, xticks=None) -> list[str]:
    """Frame, ticks and axis labels of the plot area *box* (x0, y0, x1, y1) for ranges xr, yr."""
    x0, y0, x1, y1 = box
    out = [
        f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" fill="none" stroke="#444"/>'
    ]
    for v in _ticks(*yr):
        y = y1 - (v - yr[0]) / ((yr[1] - yr[0]) or 1) * (y1 - y0)
        out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(_text(x0 - 4, y + 4, _fmt(v), "end"))
    for v, x in (
        xticks
        if xticks is not None
        else [(v, x0 + (v - xr[0]) / ((xr[1] - xr[0]) or 1) * (x1 - x0)) for v in _ticks(*xr)]
    ):
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y1}" y2="{y1 + 4}" stroke="#444"/>')
        out.append(_text(x, y1 + 16, _fmt(v)))
    out.append(_text((x0 + x1) / 2, y1 + 32, xlabel))
    cy = (y0 + y1) / 2
    out.append(_text(14, cy, ylabel, transform=f"rotate(-90 14 {cy:.1f})"))
    return out


def delta_svg(deltas: np.ndarray, measure: str, system: str, baseline: str) -> str:
    """Per-query ``system - baseline`` on *measure* (NaN left out), sorted, as filled steps.

    Args:
        deltas: float array, one value per query.
        measure, system, baseline: shown in the title and axis label (short labels).
    """
    d = np.asarray(deltas, dtype=np.float64)
    d = np.sort(d[~np.isnan(d)])[::-1]
    n = len(d)
    wins, losses = int((d > 1e-9).sum()), int((d < -1e-9).sum())
    top = max(float(np.abs(d).max()) if n else 0.0, 1e-6)
    box = (_L, _T, _W - _R, _H - _B)
    x0, y0, x1, y1 = box
    if n > MAX_STEPS:  # sorted values: evenly spaced samples draw the same curve at this size
        d = d[np.linspace(0, n - 1, MAX_STEPS).round().astype(int)]
    sx = (x1 - x0) / max(len(d), 1)
    y = lambda v: y0 + (top - v) / (2 * top) * (y1 - y0)  # noqa: E731
    body = []
    for colour, keep in (("#2a7d2a", d > 0), ("#b22222", d < 0)):
        pts = [
            f"{x0 + i * sx:.1f},{y(0):.1f} {x0 + i * sx:.1f},{y(v):.1f} "
            f"{x0 + (i + 1) * sx:.1f},{y(v):.1f} {x0 + (i + 1) * sx:.1f},{y(0):.1f}"
            for i, v in enumerate(d)
            if keep[i]
        ]
        if pts:
            body.append(
                f'<polygon fill="{colour}" points="{" ".join(pts)}"/>'
                if len(pts) < 2
                else f'<path fill="{colour}" d="{" ".join("M" + p + "Z" for p in pts)}"/>'
            )
    body.append(f'<line x1="{x0}" x2="{x1}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#000"/>')
    title = [
        _text(_W / 2, 15, f"{system} \u2212 {baseline}", font_weight="600"),
        _text(_W / 2, 31, f"{wins} wins, {n - wins - losses} ties, {losses} losses"),
    ]
    axes = _axes(
        box, (0, max(n, 1)), (-top, top), "queries, sorted by difference", f"\u0394 {measure}"
    )
    return _svg(title + axes + body, label=f"sorted differences of {measure}")


def scatter_svg(x: np.ndarray, y: np.ndarray, measure: str, name_x: str, name_y: str) -> str:
    """Per-query *measure* of system *name_x* (x axis) against *name_y* (y axis), with ``y = x``;
    NaN pairs left out, identical points drawn once with an opacity that grows with their count."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    lo = min(0.0, float(x.min(initial=0)), float(y.min(initial=0)))
    hi = max(1.0, float(x.max(initial=1)), float(y.max(initial=1)))
    side = _H - _T - _B
    box = (_L + 40, _T, _L + 40 + side, _T + side)
    x0, y0, x1, y1 = box
    px = lambda v: x0 + (v - lo) / (hi - lo) * (x1 - x0)  # noqa: E731
    py = lambda v: y1 - (v - lo) / (hi - lo) * (y1 - y0)  # noqa: E731
    # one dot per pixel of the plot: thousands of queries stay a few thousand circles at most
    points = Counter(zip(np.round(px(x)).tolist(), np.round(py(y)).tolist()))
    dots = [
        f'<circle cx="{a:.0f}" cy="{b:.0f}" r="3" fill-opacity="'
        f'{min(1.0, 0.35 + 0.15 * (c - 1)):.2f}"/>'
        for (a, b), c in points.items()
    ]
    body = [
        f'<line x1="{px(lo):.1f}" y1="{py(lo):.1f}" x2="{px(hi):.1f}" y2="{py(hi):.1f}" '
        'stroke="#888" stroke-dasharray="4 3"/>',
        '<g fill="#1f5f9f">',
        *dots,
        "</g>",
    ]
    title = [
        _text((x0 + x1) / 2, 15, f"{measure} per query", font_weight="600"),
        _text((x0 + x1) / 2, 31, f"{len(x)} queries; above the diagonal: y wins"),
    ]
    axes = _axes(box, (lo, hi), (lo, hi), f"x: {name_x}", f"y: {name_y}")
    return _svg(title + axes + body, label=f"{measure}: {name_x} against {name_y}")


def depth_svg(ks: Sequence[int], curves: Mapping[str, np.ndarray], family: str) -> str:
    """Mean ``{family}@k`` against ``k`` (log scale) per system; *curves* maps a (short) label to
    one value per ``k``. The legend sits right of the plot, never on the curves."""
    legend_w = 48 + round(7.6 * max((len(n) for n in curves), default=0))  # ~7.6 px a character
    width = _W + legend_w
    box = (_L, _T - 16, _W - _R, _H - _B)
    x0, y0, x1, y1 = box
    kmax = max(max(ks), 2)
    top = max(1.0, max((float(np.nanmax(c)) for c in curves.values()), default=1.0))
    px = lambda k: x0 + math.log10(k) / math.log10(kmax) * (x1 - x0)  # noqa: E731
    py = lambda v: y1 - v / top * (y1 - y0)  # noqa: E731
    xt = [(k, px(k)) for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if k <= kmax]
    body = _axes(box, (1, kmax), (0, top), "k (log scale)", f"mean {family}@k", xticks=xt)
    for i, (name, curve) in enumerate(curves.items()):
        colour = PALETTE[i % len(PALETTE)]
        pts = " ".join(f"{px(k):.1f},{py(v):.1f}" for k, v in zip(ks, curve) if not math.isnan(v))
        body.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="{pts}"/>')
        ly = y0 + 8 + 18 * i
        body.append(
            f'<line x1="{x1 + 12}" x2="{x1 + 32}" y1="{ly}" y2="{ly}" stroke="{colour}" '
            'stroke-width="2.5"/>'
        )
        body.append(_text(x1 + 37, ly + 4, name, "start"))
    return _svg(body, width=width, label=f"mean {family}@k against k")
