"""Reproductions and recipe listings as text: the terminal table, markdown, csv records, JSON.

Every function returns a string (or records) for ``nuggetbench reproduce`` to print: the tables
stay inside *width* columns (long conditions become group headings, long reasons footnotes
wrapped to the width), and the last line of a reproduction is always
``n of m values reproduced, k skipped``.
"""

from __future__ import annotations

import csv
import io
import textwrap
from collections.abc import Sequence
from functools import partial
from typing import Any

from nuggetbench.reproduce.needs import readiness
from nuggetbench.reproduce.outcome import (
    NOT_REPRODUCED,
    REPRODUCED,
    Reproduction,
    ValueCheck,
    merge_counts,
)
from nuggetbench.reproduce.recipe import Recipe

__all__ = [
    "listing_csv",
    "listing_records",
    "listing_text",
    "results_csv",
    "results_markdown",
    "results_records",
    "results_table",
    "source_text",
]

MARKS = {REPRODUCED: "OK", NOT_REPRODUCED: "FAIL"}
#: Wrapping that never splits a word, a path or a URL (they stay copy-pasteable).
_wrap = partial(textwrap.wrap, break_on_hyphens=False, break_long_words=False)


def _num(value: float | None, digits: int, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _digits(check: ValueCheck) -> int:
    """Decimals for obtained values and differences: two more than the source prints."""
    return min(check.precision + 2, 8)


def source_text(recipe: Recipe) -> str:
    """One line naming the source: kind, name and version (its file, table and URL are in the
    recipe, the page and ``docs/reproductions.md``)."""
    s = recipe.source
    return f"{s.kind}: {s.name}" + (f", {s.version}" if s.version else "")


class _Notes:
    """Footnotes numbered in order of first use."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def ref(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1

    def lines(self, width: int) -> list[str]:
        out = []
        for i, text in enumerate(self.texts, 1):
            head = f"[{i}] "
            out += _wrap(text, width, initial_indent=head, subsequent_indent=" " * len(head)) or [
                head
            ]
        return out


def _rows(rep: Reproduction, notes: _Notes) -> list[tuple[str, list[str]]]:
    """``(condition, cells)`` per value: dataset, measure, expected, obtained, diff, mark."""
    rows = []
    for c in rep.checks:
        mark = MARKS.get(c.verdict, "skipped")
        if c.reason:
            mark += f" [{notes.ref(c.reason)}]"
        if c.note:
            mark += f" [{notes.ref(c.note)}]"
        cells = [
            c.dataset,
            c.measure,
            _num(c.expected, c.precision),
            _num(c.obtained, _digits(c)),
            _num(c.difference, _digits(c), sign=True),
            mark,
        ]
        rows.append((c.condition, cells))
    return rows


HEADER = ["dataset", "measure", "expected", "obtained", "difference", "mark"]


def _grid(rows: list[tuple[str, list[str]]], titles: dict[str, str]) -> list[str]:
    widths = [max(len(h), *(len(r[1][i]) for r in rows)) for i, h in enumerate(HEADER)]

    def line(cells: list[str]) -> str:
        out = [
            cell.rjust(w) if 2 <= i <= 4 else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths))
        ]
        return "  ".join(out).rstrip()

    lines = [line(HEADER), line(["-" * w for w in widths])]
    current = None
    for cond, cells in rows:
        if cond != current:
            current = cond
            title = titles.get(cond, "")
            lines.append(f"{cond}" + (f": {title}" if title and title != cond else ""))
        lines.append(line(cells))
    return lines


def results_table(reproductions: Sequence[Reproduction], width: int = 80) -> str:
    """The terminal table of each reproduction (title, source, values grouped by condition,
    footnotes for reasons and notes, wall time), then the summary line as the last line."""
    out: list[str] = []
    for rep in reproductions:
        notes = _Notes()
        r = rep.recipe
        out += _wrap(f"{r.name}: {r.title}", width)
        out += _wrap(f"source: {source_text(r)}", width, subsequent_indent="  ")
        out.append("")
        titles = {c.name: c.title for c in r.conditions}
        out += _grid(_rows(rep, notes), titles)
        footnotes = notes.lines(width)
        out += [""] + footnotes if footnotes else []
        if not rep.dry_run:
            out.append(f"wall time {rep.wall_seconds:.1f} s")
        if len(reproductions) > 1:
            out.append(rep.summary_line())
        out.append("")
    out.append(merge_counts(list(reproductions)))
    return "\n".join(out) + "\n"


def results_records(reproductions: Sequence[Reproduction]) -> list[dict[str, Any]]:
    """One flat record per value: recipe, condition, dataset, measure, expected, obtained,
    difference, tolerance, verdict, reason, note."""
    return [{"recipe": rep.recipe.name, **c.to_dict()} for rep in reproductions for c in rep.checks]


def results_csv(reproductions: Sequence[Reproduction]) -> str:
    """:func:`results_records` as CSV with a header (empty cells for missing values)."""
    records = results_records(reproductions)
    buf = io.StringIO()
    fields = ["recipe", *ValueCheck("", "", "", 0.0, 0.0, 0).to_dict()]
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for rec in records:
        writer.writerow({k: "" if v is None else v for k, v in rec.items()})
    return buf.getvalue()


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def results_markdown(reproductions: Sequence[Reproduction]) -> str:
    """One markdown table per reproduction (reasons and notes in a last column), then the
    summary line."""
    out: list[str] = []
    for rep in reproductions:
        out += [f"### {rep.recipe.name}: {_md(rep.recipe.title)}", ""]
        out += [
            "| condition | dataset | measure | expected | obtained | difference | verdict | why |",
            "|---|---|---|---:|---:|---:|---|---|",
        ]
        for c in rep.checks:
            d = _digits(c)
            why = "; ".join(t for t in (c.reason, c.note) if t)
            out.append(
                f"| {c.condition} | {c.dataset} | {_md(c.measure)} | "
                f"{_num(c.expected, c.precision)} | {_num(c.obtained, d)} | "
                f"{_num(c.difference, d, sign=True)} | {c.verdict} | {_md(why)} |"
            )
        out += ["", rep.summary_line(), ""]
    out.append(merge_counts(list(reproductions)))
    return "\n".join(out) + "\n"


# --- listing -------------------------------------------------------------------------------
def _states(recipe: Recipe) -> dict[str, list[tuple[str, str, str]]]:
    """``{state: [(condition, dataset, reason)]}`` over the pairs that have expected values."""
    out: dict[str, list[tuple[str, str, str]]] = {"ready": [], "download": [], "blocked": []}
    for e in recipe.expected:
        r = readiness(recipe, recipe.condition(e.condition), e.dataset)
        out[r.state].append((e.condition, e.dataset, r.reason))
    return out


def _some(items: list[str], limit: int = 3) -> str:
    items = list(dict.fromkeys(items))
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _here(recipe: Recipe) -> str:
    """Whether the recipe can run here: yes / partly / no, with what is missing (a few named)."""
    states = _states(recipe)
    total = sum(len(v) for v in states.values())
    ready, later, blocked = (states[k] for k in ("ready", "download", "blocked"))
    if len(ready) == total:
        return "yes: everything is on disk"
    fetched = f"{len(later)} after a download ({_some([d for _, d, _ in later])})" if later else ""
    if not blocked:
        return f"yes: {len(ready)} of {total} on disk" + (f", {fetched}" if fetched else "")
    reasons = [r for _, _, r in blocked]
    why = reasons[0] + (f" (and {len(set(reasons)) - 1} more)" if len(set(reasons)) > 1 else "")
    if ready or later:
        can = f"{len(ready)} on disk" + (f", {fetched}" if fetched else "")
        return (
            f"partly: {len(ready) + len(later)} of {total} can run ({can}); not the others: {why}"
        )
    return f"no: {why}"


def listing_records(recipes: Sequence[Recipe]) -> list[dict[str, Any]]:
    """One record per recipe: name, title, source, conditions, datasets, measures, values,
    needs and whether it can run here (with why not)."""
    out = []
    for r in recipes:
        measures = list(dict.fromkeys(m for c in r.conditions for m in c.measures))
        n = r.needs
        out.append(
            {
                "name": r.name,
                "title": r.title,
                "source": source_text(r),
                "url": r.source.url,
                "conditions": [c.name for c in r.conditions],
                "datasets": [d.id for d in r.datasets],
                "measures": measures,
                "values": r.n_values(),
                "needs": {
                    "extras": list(n.extras),
                    "gpu": n.gpu,
                    "llm": n.llm,
                    "download": n.download,
                    "runtime": n.runtime,
                },
                "here": _here(r),
            }
        )
    return out


def listing_csv(recipes: Sequence[Recipe]) -> str:
    """:func:`listing_records` as CSV (lists joined with ``; ``, needs as ``key=value``)."""
    buf = io.StringIO()
    rows = []
    for rec in listing_records(recipes):
        row = {k: "; ".join(map(str, v)) if isinstance(v, list) else v for k, v in rec.items()}
        row["needs"] = "; ".join(f"{k}={v}" for k, v in rec["needs"].items() if v)
        rows.append(row)
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _needs_text(rec: dict[str, Any]) -> str:
    n = rec["needs"]
    parts = [f"extras {', '.join(n['extras'])}"] if n["extras"] else []
    parts += ["a GPU"] * n["gpu"] + ["an LLM endpoint"] * n["llm"]
    parts += [f"download {n['download']}"] if n["download"] else []
    parts += [f"run time {n['runtime']}"] if n["runtime"] else []
    return "; ".join(parts) or "nothing beyond the base install"


def _items(values: list[str], limit: int = 6) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def listing_text(recipes: Sequence[Recipe], width: int = 80) -> str:
    """``reproduce --list``: each recipe's title, source, conditions, datasets, measures, needs
    and whether it can run here, wrapped to *width* columns."""
    out: list[str] = []
    for rec in listing_records(recipes):
        out += _wrap(f"{rec['name']}: {rec['title']}", width, subsequent_indent="    ")
        fields = [
            ("source", rec["source"]),
            ("conditions", _items(rec["conditions"])),
            ("datasets", _items(rec["datasets"])),
            ("measures", ", ".join(rec["measures"]) + f" ({rec['values']} values)"),
            ("needs", _needs_text(rec)),
            ("runs here", rec["here"]),
        ]
        for name, text in fields:
            head = f"  {name:<11}"
            out += _wrap(text, width, initial_indent=head, subsequent_indent=" " * len(head))
        out.append("")
    out.append(f"{len(recipes)} recipes; run one with: nuggetbench reproduce NAME")
    return "\n".join(out) + "\n"
