"""The self-contained HTML page: a jinja2 template, inline CSS, JS, data and SVG figures.

:func:`render_page` fills ``templates/report.html.j2`` from a
:class:`~nuggetbench.report.data.ReportData`: the summary table and provenance, the win/tie/loss
counts, the charts (inline SVG drawn by :mod:`nuggetbench.report.svg`, so the page needs no
matplotlib) and the depth tables are rendered by the template; the
per-query table, the query view and the nuggets list are drawn by a small vanilla script
(``templates/report.js``) from the JSON block the page carries, so the file stays small at tens of
thousands of queries. Nothing is fetched: the page opens from disk with no network.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from nuggetbench._outfolder import incomplete_note
from nuggetbench._version import __version__
from nuggetbench.compare.missing import MISSING_MARK
from nuggetbench.compare.reporting import MARK
from nuggetbench.measures.depth import DEPTH_MARK, shallow
from nuggetbench.report.data import ReportData, system_keys
from nuggetbench.report.svg import delta_svg, depth_svg, scatter_svg

__all__ = ["render_page", "DEPTH_SHOWN"]

#: The cutoffs listed in the depth tables, those the deepest run reaches (the curves have more).
DEPTH_SHOWN = (1, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000)


def _template_text(name: str) -> str:
    return resources.files("nuggetbench.report").joinpath("templates", name).read_text("utf-8")


def _num(x: float | None, digits: int = 4) -> str:
    return "\u2013" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _cells(data: ReportData) -> dict[str, dict[str, dict[str, Any]]]:
    """Summary cells: mean, CI, difference to the baseline, p-value, significance class."""
    comp = data.comparison or {}
    est = {(e["system"], e["measure"]): e for e in comp.get("estimates", [])}
    dif = {(d["system"], d["measure"]): d for d in comp.get("differences", [])}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for s in data.systems:
        out[s] = {}
        cut = shallow(data.results["systems"][s], data.measures)
        for m in data.measures:
            mean = data.results["systems"][s]["means"][m]
            e, d = est.get((s, m)), dif.get((s, m))
            text = _num(mean) + DEPTH_MARK * (m in cut)  # a cutoff beyond the system's depth
            cell: dict[str, Any] = {"mean": mean, "mean_text": text, "ci": "", "diff": ""}
            cell.update(p="", sig="", mark=MARK)
            if e:
                cell["ci"] = f"{_num(e['ci_low'])}, {_num(e['ci_high'])}"
            if d:  # None: not computed (a measure of fewer than two queries)
                cell["diff"] = "\u2013" if d["diff"] is None else f"{d['diff']:+.4f}"
                cell["p"] = "n/a" if d["p_adjusted"] is None else f"{d['p_adjusted']:.3g}"
                if d["significant"] and d["diff"] is not None:
                    cell["sig"] = "better" if d["diff"] > 0 else "worse"
                    cell["mark"] = MISSING_MARK if d.get("rests_on_missing") else MARK
            out[s][m] = cell
    return out


def _method(data: ReportData) -> str:
    """The comparison's method and what its marks mean (the averaging, missing queries,
    depths)."""
    c = data.comparison
    depths = {s: data.results["systems"][s].get("depth") for s in data.systems}
    cut = {s: shallow(data.results["systems"][s], data.measures) for s in data.systems}
    deep = "".join(
        f" {DEPTH_MARK} {', '.join(ms)}: cutoff beyond the depth of {s} ({depths[s]} documents "
        "a query), not comparable."
        for s, ms in cut.items()
        if ms
    )
    if not c:
        return "One system: no paired test." + deep
    averaged = c.get("averaging") or f"{c['n_queries']} queries"
    resting = (
        f" {MISSING_MARK}: significant only with the missing queries scored 0."
        if any(d.get("rests_on_missing") for d in c.get("differences", []))
        else ""
    )
    return (
        f"{averaged}; [{round(100 * c['ci'])}% bootstrap CI, {c['n_resamples']} "
        f"resamples, seed {c['seed']}]; {c['test_method']} against {c['baseline']!r}, correction "
        f"{c['correction']}; \u2020 and colour: significant at alpha = {c['alpha']} "
        f"(green better, red worse).{resting}{deep}"
    )


def _superscripts(data: ReportData) -> dict[str, dict[str, list[str]]]:
    """Per system and measure: the keys of the systems it is significantly better than (ranx's
    superscripts; empty for none)."""
    keys = dict(zip(data.systems, system_keys(len(data.systems))))
    pw = data.pairwise
    return {
        s: {m: [keys[o] for o in pw.better[s][m]] if pw else [] for m in data.measures}
        for s in data.systems
    }


def _pairwise_note(data: ReportData) -> str:
    """What the superscripts mean (empty with one system)."""
    pw = data.pairwise
    if pw is None:
        return ""
    n = len(data.systems)
    pairs = n * (n - 1) // 2
    test = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test"}.get(pw.test, pw.test)
    text = (
        f"Superscripts: the keys of the systems a mean is significantly better than ({test} "
        f"between every two systems, {pairs} pair{'s' if pairs != 1 else ''} per measure, "
        f"correction {pw.correction} over them; alpha = {pw.alpha})."
    )
    if pw.correction != "none" and n > 2:
        text += (
            f" The baseline comparison corrects over its {n - 1} pairs only, so a \u2020 may "
            "stand where no superscript does."
        )
    return text


def _depth_rows(data: ReportData) -> tuple[list[int], dict[str, list[tuple[str, list[str]]]]]:
    """The depth tables' cutoffs (:data:`DEPTH_SHOWN` up to the deepest curve) and, per curve
    family, each system's means there (``–`` beyond the system's depth)."""
    where = {k: i for i, k in enumerate(data.depth_k)}
    shown = [k for k in DEPTH_SHOWN if k in where]
    rows = {
        fam: [(s, [_num(float(c[where[k]])) for k in shown]) for s, c in curves.items()]
        for fam, curves in data.depth.items()
    }
    return shown, rows


def _value(v: Any) -> str:
    """A provenance value as text: mappings as ``key=value`` pairs, lists joined, None as –."""
    if v is None:
        return "\u2013"
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={_value(x)}" for k, x in v.items()) or "\u2013"
    if isinstance(v, (list, tuple)):
        return ", ".join(_value(x) for x in v) or "\u2013"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _provenance(data: ReportData, source: str) -> list[tuple[str, str]]:
    """The experiment's provenance as ``(key, text)`` rows, each key once (the systems' specs
    are in the systems' tables)."""
    r = data.results
    prov = {k: v for k, v in (r.get("provenance") or {}).items() if k not in ("systems", "k")}
    rows = {"dataset": r["dataset"], **dict(data.facts), **prov}
    rows.update(measures=", ".join(r["measures"]), profile=r["profile"], depth=r.get("k"))
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rows.update(
        {"report built from": source, "report built": f"{now} by nuggetbench {__version__}"}
    )
    return [(k, _value(v)) for k, v in rows.items() if v not in (None, "")]


def _systems(data: ReportData) -> list[dict[str, Any]]:
    """Per system: key letter, short label, full name and its run's provenance as key/value
    rows (the retriever's parameters, the run's metadata, the seconds per step)."""
    out = []
    keys = system_keys(len(data.systems))
    labels = dict(zip(data.systems, data.payload["labels"]))  # distinct (spec.short_labels)
    for key, s in zip(keys, data.systems):
        entry = data.results["systems"][s]
        meta = dict(entry.get("run_metadata") or {})
        rows = [("retriever", _value(meta.pop("retriever", s)))]
        rows += [(k, _value(v)) for k, v in meta.items()]
        secs = entry.get("seconds") or {}
        if secs:
            rows.append(("seconds", ", ".join(f"{k} {v:.2f} s" for k, v in secs.items())))
        if entry.get("run_file"):
            rows.append(("run file", str(entry["run_file"])))
        label = labels[s]
        out.append({"key": key, "name": s, "label": label, "rows": rows})
    return out


def _pq_figures(data: ReportData) -> list[dict[str, str]]:
    """Per measure and non-baseline system: the sorted deltas and the scatter, as inline SVG."""
    out = []
    label = dict(zip(data.systems, data.payload["labels"]))
    key = dict(zip(data.systems, data.payload["keys"]))
    base = data.baseline
    name = lambda s: f"{key[s]} {label[s]}"  # noqa: E731
    for m in data.measures:
        for s in data.systems:
            if s != base:
                pq = data.per_query
                delta = delta_svg(pq[s][m] - pq[base][m], m, name(s), name(base))
                scatter = scatter_svg(pq[base][m], pq[s][m], m, name(base), name(s))
                for kind, svg in (("delta", delta), ("scatter", scatter)):
                    out.append({"measure": m, "system": s, "kind": kind, "svg": svg})
    return out


def _depth_figures(data: ReportData) -> list[str]:
    keys, labels = data.payload["keys"], data.payload["labels"]
    return [
        depth_svg(
            data.depth_k,
            {f"{keys[i]} {labels[i]}": curves[s] for i, s in enumerate(data.systems)},
            fam,
        )
        for fam, curves in data.depth.items()
    ]


def _incomplete(data: ReportData, source: str) -> str | None:
    """Why the experiment of the output folder *source* is incomplete, or ``None`` (complete,
    or not from a folder)."""
    if not source or source.startswith("<"):
        return None
    folder = Path(source)
    file = folder if folder.name == "results.json" else folder / "results.json"
    return incomplete_note(data.results, file)


def _json_for_script(payload: dict) -> str:
    """Compact JSON that cannot end its ``<script>`` element (``<`` escaped)."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_page(data: ReportData, *, source: str = "", figures: bool = True) -> str:
    """The report as one HTML string (UTF-8 text, everything inline).

    Args:
        data: from :func:`~nuggetbench.report.data.build_report_data`.
        source: where the results came from (shown in the provenance); for an output folder,
            a warning banner tops the page when its experiment is incomplete (an interrupted
            run: see :func:`nuggetbench._outfolder.incomplete_note`).
        figures: embed the SVG charts (per measure and system: sorted deltas and the scatter
            against the baseline; the depth curves), drawn without matplotlib.
    """
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.from_string(_template_text("report.html.j2"))
    shown, depth_rows = _depth_rows(data)
    return template.render(
        title=data.title,
        version=__version__,
        css=_template_text("report.css"),
        js=_template_text("report.js"),
        systems=data.systems,
        sys=_systems(data),
        baseline=data.baseline,
        measures=data.measures,
        cells=_cells(data),
        method=_method(data),
        notes=data.notes,
        sup=_superscripts(data),
        pairwise_note=_pairwise_note(data),
        run_depths=data.run_depths,
        rank_k=data.payload["rankK"],
        rbo_p=data.payload["rboP"],
        incomplete=_incomplete(data, source),
        missing=data.missing,
        summaries=[
            (
                t.title,
                [
                    (label, [_num(row.get(m), t.digits) for m in data.measures])
                    for label, row in t.rows.items()
                ],
            )
            for t in data.summaries
        ],
        provenance=_provenance(data, source),
        wtl=data.wtl,
        k=data.payload["k"],
        has_nuggets=bool(data.payload.get("nuggets")),
        pq_figures=_pq_figures(data) if figures and len(data.systems) > 1 else [],
        depth_figures=_depth_figures(data) if figures else [],
        depth_rows=depth_rows,
        depth_show=shown,
        data_json=_json_for_script(data.payload),
    )
