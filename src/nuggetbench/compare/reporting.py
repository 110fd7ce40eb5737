"""``ComparisonReport``: the value :func:`nuggetbench.compare.compare` returns, and its renderings.

A report holds, for every system and measure, the mean with its bootstrap confidence interval and,
for every non-baseline system, the difference to the baseline with its interval, the paired test's
statistic and p-value, the corrected p-value, whether it is significant and an effect size. It
renders as a rich table (terminal), Markdown, LaTeX, CSV and JSON; significant differences are
marked with a dagger (and coloured in the terminal: green better, red worse).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from nuggetbench.compare.cells import finite_json, fixed, md_escape, p_eq, p_text, signed, tex
from nuggetbench.compare.missing import MISSING_MARK, averaging_line, extra_legend
from nuggetbench.errors import UnknownNameError, suggest
from nuggetbench.measures.depth import DEPTH_MARK
from nuggetbench.spec import short_label, short_labels

__all__ = ["Estimate", "Difference", "ComparisonReport", "FORMATS", "CELLS", "parse_cells"]

FORMATS = ("table", "json", "jsonl", "csv", "tsv", "markdown", "latex")
MARK = "\u2020"  # dagger
#: What a Markdown or LaTeX cell may hold, in the order it is written: the mean (in bold when it
#: is the best of its column), its interval, the significance dagger, the difference to the
#: baseline, the corrected p-value and wins/ties/losses. Every part by default.
CELLS = ("mean", "ci", "dagger", "diff", "p", "wtl")
#: Per-query differences this close to zero count as ties (floating-point noise, not a win).
TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Estimate:
    """Mean of one measure for one system over the compared queries, with its bootstrap interval."""

    system: str
    measure: str
    n_queries: int
    mean: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Difference:
    """``system - baseline`` on one measure: paired test, corrected p-value, interval, effect size.

    Attributes:
        diff: mean of the per-query differences (system minus baseline).
        ci_low, ci_high: percentile bootstrap interval of *diff* (paired resampling).
        statistic: the test statistic (see :class:`~nuggetbench.compare.stats.TestResult`).
        p_value: raw two-sided p-value.
        p_adjusted: p-value after the report's multiple-testing correction.
        significant: ``p_adjusted < alpha``.
        effect_size: Cohen's d_z of the per-query differences.
        wins, ties, losses: queries where *system* scores above, equal to (within
            :data:`TIE_TOLERANCE`) or below the baseline.
        missing: compared queries that *system* or the baseline lacks (scored 0).
        rests_on_missing: significant, but not on the queries both have (the same test and
            correction): the significance rests on the missing queries
            (:mod:`~nuggetbench.compare.missing`); marked with a double dagger.
    """

    system: str
    baseline: str
    measure: str
    diff: float
    ci_low: float
    ci_high: float
    statistic: float
    p_value: float
    p_adjusted: float
    significant: bool
    effect_size: float
    wins: int = 0
    ties: int = 0
    losses: int = 0
    missing: int = 0
    rests_on_missing: bool = False

    @property
    def wtl(self) -> str:
        """``"wins/ties/losses"``."""
        return f"{self.wins}/{self.ties}/{self.losses}"


@dataclass(repr=False)
class ComparisonReport:
    """Result of comparing systems over the same queries (see :func:`nuggetbench.compare.compare`).

    Attributes:
        systems: system names, baseline first.
        baseline: the baseline's name.
        measures: measure strings, in order.
        query_ids: the compared queries.
        estimates: one :class:`Estimate` per (system, measure).
        differences: one :class:`Difference` per (non-baseline system, measure).
        test, test_method: the test's short name and its description (e.g. exact or Monte Carlo).
        correction: multiple-testing correction; the family is every comparison with the baseline
            on one measure.
        alpha, ci, n_resamples, seed: significance level, confidence level, bootstrap resamples and
            random seed.
        deltas: ``{system: {measure: {query_id: system - baseline}}}`` for every non-baseline
            system, over the queries compared (see :meth:`delta_records`).
        totals: the count measures (a family aggregated by a sum: ``num_q``, ``num_rel``...)
            whose estimates' ``mean``, differences and intervals are totals over the compared
            queries (n times the means), as ``evaluate`` prints them; their tests, p-values and
            effect sizes are those of the per-query values, as for any measure.
        average_over: ``"qrels"`` (a query a system lacks scored 0) or ``"common"`` (the
            queries every system has); *missing*: ``{system: compared queries it lacks}``;
            *left_out*: queries left out under ``"common"``.
        depths: ``{system: most documents ranked for one query}`` (``None``: unknown);
            *beyond_depth*: ``{system: measures whose cutoff exceeds its depth}``, marked
            with :data:`~nuggetbench.measures.depth.DEPTH_MARK`.
    """

    systems: list[str]
    baseline: str
    measures: list[str]
    query_ids: list[str]
    estimates: list[Estimate]
    differences: list[Difference]
    test: str
    test_method: str
    correction: str
    alpha: float
    ci: float
    n_resamples: int
    seed: int | None
    notes: list[str] = field(default_factory=list)
    deltas: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    totals: list[str] = field(default_factory=list)
    average_over: str = "qrels"
    missing: dict[str, int] = field(default_factory=dict)
    left_out: int = 0
    depths: dict[str, int | None] = field(default_factory=dict)
    beyond_depth: dict[str, list[str]] = field(default_factory=dict)

    # --- lookup -------------------------------------------------------------------------
    def estimate(self, system: str, measure: str) -> Estimate:
        """The :class:`Estimate` of *system* on *measure* (KeyError when absent)."""
        for e in self.estimates:
            if e.system == system and e.measure == measure:
                return e
        raise KeyError((system, measure))

    def difference(self, system: str, measure: str) -> Difference:
        """The :class:`Difference` of *system* to the baseline on *measure* (KeyError when absent)."""
        for d in self.differences:
            if d.system == system and d.measure == measure:
                return d
        raise KeyError((system, measure))

    def _diff_or_none(self, system: str, measure: str) -> Difference | None:
        try:
            return self.difference(system, measure)
        except KeyError:
            return None

    def delta_records(self) -> list[dict[str, Any]]:
        """The per-query differences to the baseline as flat records ``system, query_id,
        measure, delta`` (long format, named as :meth:`nuggetbench.Results.to_pandas`)."""
        return [
            {"system": system, "query_id": q, "measure": m, "delta": d}
            for system, per in self.deltas.items()
            for m, values in per.items()
            for q, d in values.items()
        ]

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def legend(self, *, short: bool = False) -> str:
        """One line explaining intervals and the significance mark (*short*: the baseline's
        name shortened for a terminal table)."""
        baseline = self._short(self.baseline) if short else self.baseline
        corr = "" if self.correction == "none" else f", {self.correction}-corrected"
        totals = f"; {', '.join(self.totals)}: totals, not means" if self.totals else ""
        return (
            f"{averaging_line(self)}; [{self.ci:.0%} bootstrap CI, {self.n_resamples} resamples]; "
            f"{MARK} significant difference to {baseline!r} ({self.test_method}{corr}, p < {self.alpha:g}); "
            f"W/T/L: queries won/tied/lost against it{totals}{extra_legend(self)}"
        )

    def _marks(self, system: str, measure: str) -> tuple[str, str]:
        """``(mark after the mean, mark of the difference)``: the depth mark when the cutoff
        exceeds the system's depth; the dagger, or the double dagger when the significance
        rests on missing queries."""
        d = self._diff_or_none(system, measure)
        depth = DEPTH_MARK if measure in self.beyond_depth.get(system, ()) else ""
        if d is None or not d.significant:
            return depth, ""
        return depth, MISSING_MARK if d.rests_on_missing else MARK

    # --- records ------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """One flat record per (system, measure): the estimate plus the difference (``None`` for
        the baseline)."""
        out = []
        for system in self.systems:
            for measure in self.measures:
                e = self.estimate(system, measure)
                d = self._diff_or_none(system, measure)
                out.append(
                    {
                        "system": system,
                        "measure": measure,
                        "n_queries": e.n_queries,
                        "aggregate": "sum" if measure in self.totals else "mean",
                        "mean": e.mean,
                        "ci_low": e.ci_low,
                        "ci_high": e.ci_high,
                        "diff": d.diff if d else None,
                        "diff_ci_low": d.ci_low if d else None,
                        "diff_ci_high": d.ci_high if d else None,
                        "statistic": d.statistic if d else None,
                        "p_value": d.p_value if d else None,
                        "p_adjusted": d.p_adjusted if d else None,
                        "significant": d.significant if d else None,
                        "effect_size": d.effect_size if d else None,
                        "wins": d.wins if d else None,
                        "ties": d.ties if d else None,
                        "losses": d.losses if d else None,
                        "missing": self.missing.get(system, 0),
                        "rests_on_missing": d.rests_on_missing if d else None,
                        "beyond_depth": measure in self.beyond_depth.get(system, ()),
                    }
                )
        return out

    def to_dict(self) -> dict[str, Any]:
        """Settings, estimates and differences as plain JSON-ready values (inf/nan become None)."""
        return finite_json(
            {
                "baseline": self.baseline,
                "systems": list(self.systems),
                "measures": list(self.measures),
                "n_queries": len(self.query_ids),
                "test": self.test,
                "test_method": self.test_method,
                "correction": self.correction,
                "alpha": self.alpha,
                "ci": self.ci,
                "n_resamples": self.n_resamples,
                "seed": self.seed,
                "notes": list(self.notes),
                "estimates": [asdict(e) for e in self.estimates],
                "differences": [asdict(d) for d in self.differences],
                "deltas": self.deltas,
                "totals": list(self.totals),
                "average_over": self.average_over,
                "averaging": averaging_line(self),
                "missing": dict(self.missing),
                "left_out": self.left_out,
                "depths": dict(self.depths),
                "beyond_depth": {s: list(m) for s, m in self.beyond_depth.items()},
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_jsonl(self) -> str:
        """JSON Lines: one object per (system, measure), keys as in :meth:`rows`."""
        return "".join(json.dumps(finite_json(r), ensure_ascii=False) + "\n" for r in self.rows())

    def to_csv(self, delimiter: str = ",") -> str:
        """CSV text, one row per (system, measure), columns as in :meth:`rows` (*delimiter*
        ``"\\t"``: TSV)."""
        buf = io.StringIO()
        rows = self.rows()
        writer = csv.DictWriter(
            buf,
            fieldnames=list(rows[0]) if rows else ["system"],
            lineterminator="\n",
            delimiter=delimiter,
        )
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
        return buf.getvalue()

    def to_pandas(self):
        """A DataFrame of :meth:`rows`."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    # --- tables -------------------------------------------------------------------------
    def _digits(self, measure: str, digits: int | None) -> int:
        """*digits*, or automatically 0 for totals of counts (see ``totals``), 2 for
        percent-scaled measures (a mean above 1.5) else 4."""
        if digits is not None:
            return digits
        if measure in self.totals:
            return 0
        big = any(
            abs(e.mean) > 1.5
            for e in self.estimates
            if e.measure == measure and math.isfinite(e.mean)
        )
        return 2 if big else 4

    def _cell(
        self, system: str, measure: str, digits: int | None, cells=CELLS, *, latex: bool = False
    ) -> str:
        """One Markdown or LaTeX cell holding the *cells* parts (see :data:`CELLS`)."""
        k = self._digits(measure, digits)
        e = self.estimate(system, measure)
        d = self._diff_or_none(system, measure)
        text = fixed(e.mean, k)
        if self._is_best(system, measure, k):
            text = rf"\textbf{{{text}}}" if latex else f"**{text}**"
        depth, sig = self._marks(system, measure)
        text += (r"$^{\S}$" if latex else depth) if depth else ""
        if "dagger" in cells and sig:
            text += (r"$^{\ddagger}$" if sig == MISSING_MARK else r"$^{\dagger}$") if latex else sig
        extra = [f"[{fixed(e.ci_low, k)}, {fixed(e.ci_high, k)}]"] if "ci" in cells else []
        if d is not None:
            extra += [signed(d.diff, k)] if "diff" in cells else []
            inner = [f"$p{p_eq(d.p_adjusted)}$" if latex else f"p{p_eq(d.p_adjusted)}"]
            inner = (inner if "p" in cells else []) + ([f"W/T/L {d.wtl}"] if "wtl" in cells else [])
            extra += [f"({', '.join(inner)})"] if inner else []
        if not extra:
            return text
        joined = " ".join(extra)
        return f"{text} {{\\scriptsize {joined}}}" if latex else f"{text} {joined}"

    def _is_best(self, system: str, measure: str, digits: int) -> bool:
        """*system*'s mean is the highest of *measure*'s column as printed (ties: all bold;
        a single system: none)."""
        if len(self.systems) < 2:
            return False
        shown = {s: self.estimate(s, measure).mean for s in self.systems}
        finite = [round(v, digits) for v in shown.values() if math.isfinite(v)]
        mine = shown[system]
        return bool(finite) and math.isfinite(mine) and round(mine, digits) == max(finite)

    def _paper_legend(self, cells) -> str:
        parts = {"ci": "[interval]", "diff": "difference", "p": "p", "wtl": "W/T/L"}
        shown = ", ".join(parts[c] for c in cells if c in parts)
        text = self.legend() + "; bold: the best mean of each measure"
        return text + (f"; cells: mean {shown}" if shown else "")

    def to_markdown(self, digits: int | None = None, cells=CELLS) -> str:
        """A Markdown table (systems x measures) followed by the legend.

        *digits*: decimals (default: 4, or 2 for measures scaled to percent). *cells*: the parts
        each cell holds (:data:`CELLS`; :func:`parse_cells` reads ``"mean,dagger"``); the best
        mean of each column is in bold."""
        cells = parse_cells(cells)
        header = "| system | " + " | ".join(self.measures) + " |"
        lines = [header, "|---|" + "---:|" * len(self.measures)]
        for s in self.systems:
            label = f"{s} (baseline)" if s == self.baseline else s
            row = [self._cell(s, m, digits, cells) for m in self.measures]
            lines.append("| " + " | ".join([md_escape(label), *row]) + " |")
        return "\n".join(lines) + "\n\n" + self._paper_legend(cells) + "\n"

    def to_latex(self, digits: int | None = None, cells=CELLS) -> str:
        """A LaTeX ``tabular`` with booktabs rules (``\\usepackage{booktabs}``), the best mean of
        each column in bold and a dagger on significant differences; *cells* as
        :meth:`to_markdown` (``("mean", "dagger")`` fits a paper's column)."""
        cells = parse_cells(cells)
        cols = "l" + "r" * len(self.measures)
        lines = [
            r"% needs \usepackage{booktabs}",
            r"\begin{tabular}{" + cols + "}",
            r"\toprule",
            "System & " + " & ".join(tex(m) for m in self.measures) + r" \\",
            r"\midrule",
        ]
        for s in self.systems:
            row = [self._cell(s, m, digits, cells, latex=True) for m in self.measures]
            label = f"{s} (baseline)" if s == self.baseline else s
            lines.append(tex(label) + " & " + " & ".join(row) + r" \\")
        lines += [
            r"\bottomrule",
            r"\end{tabular}",
            "% "
            + tex(self._paper_legend(cells))
            .replace(MARK, "dagger:")
            .replace(MISSING_MARK, "double dagger:")
            .replace(DEPTH_MARK, "section sign:"),
        ]
        return "\n".join(lines) + "\n"

    def to_rich(self, digits: int | None = None, *, width: int | None = None):
        """A rich renderable (coloured: green significantly better, red significantly worse).

        Every cell line (the mean, its interval ``[low, high]``, the difference and p-value,
        ``W/T/L``) is kept whole. When *width* (the terminal's columns) is too narrow for one
        column per measure, the layout is stacked: one small table per measure, one row per
        system. ``width=None``: always the wide table.
        """
        cells = {(s, m): self._lines(s, m, digits) for s in self.systems for m in self.measures}
        # distinct short labels (full names: every other format)
        short = dict(zip(self.systems, short_labels(self.systems)))
        names = {
            s: f"{short[s]}\n(baseline)" if s == self.baseline else short[s] for s in self.systems
        }
        if width is None or width >= self._wide_width(cells, names):
            table = self._wide(cells, names)
            from rich.console import Group

            legend = self._full_names(short, width)
            return Group(table, *legend) if legend else table
        return self._stacked(cells, names, digits, width)

    def _full_names(self, short: dict[str, str], width: int | None, numbered: bool = False) -> list:
        """``label = full name`` per system whose label is not its name (*numbered*: ``S1``...,
        the baseline marked), the name on a line of its own when both do not fit *width*."""
        from rich.text import Text

        out = []
        for s in self.systems:
            if short[s] == s:
                continue
            mark = " (baseline)" if numbered and s == self.baseline else ""
            line = f"{short[s]} = {s}{mark}"
            if width is None or len(line) <= width:
                out.append(Text(line, overflow="fold"))
            else:
                out += [Text(f"{short[s]} ="), Text(f"  {s}{mark}", overflow="fold")]
        return out

    def _short(self, system: str) -> str:
        """*system*'s label in terminal tables (distinct from the other systems')."""
        return dict(zip(self.systems, short_labels(self.systems))).get(system, short_label(system))

    def _lines(self, s: str, m: str, digits: int | None) -> list[tuple[str, str]]:
        """``(text, style)`` lines of one cell: mean (with the mark), interval, difference and
        p-value, W/T/L."""
        k = self._digits(m, digits)
        e = self.estimate(s, m)
        d = self._diff_or_none(s, m)
        style = ""
        depth, mark = self._marks(s, m)
        if mark:
            style = "bold green" if d.diff > 0 else "bold red"
        lines = [
            (f"{fixed(e.mean, k)}{depth}{mark}", style),
            (f"[{fixed(e.ci_low, k)}, {fixed(e.ci_high, k)}]", "dim"),
        ]
        if d is not None:
            lines.append((f"{signed(d.diff, k)} p{p_eq(d.p_adjusted)}", "dim"))
            lines.append((f"W/T/L {d.wtl}", "dim"))
        return lines

    def _wide_width(self, cells: dict, names: dict) -> int:
        """Columns the wide table needs (padding and borders included)."""
        name_w = max(len(line) for n in names.values() for line in n.split("\n"))
        widths = [max(len("system"), name_w)]
        for m in self.measures:
            widths.append(max([len(m)] + [len(t) for s in self.systems for t, _ in cells[(s, m)]]))
        return sum(widths) + 3 * len(widths) + 1

    def _wide(self, cells: dict, names: dict):
        """The table, then its legend as a paragraph of its own: wrapped at the console's
        width, not the table's (a rich caption wraps at the table's)."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        table = Table(title=f"Comparison with {self._short(self.baseline)}", title_justify="left")
        table.add_column("system", no_wrap=True)
        for m in self.measures:
            table.add_column(m, justify="right", no_wrap=True)
        for s in self.systems:
            row = []
            for m in self.measures:
                text = Text()
                for i, (line, style) in enumerate(cells[(s, m)]):
                    text.append(("\n" if i else "") + line, style=style or None)
                row.append(text)
            table.add_row(names[s], *row)
        return Group(table, Text(self.legend(short=True)))

    def _stacked(self, cells: dict, names: dict, digits: int | None, width: int = 80):
        """One table per measure (rows: systems; columns: mean [CI], difference, p, W/T/L).

        A label is never split inside: its column is as wide as its longest word (the words
        wrap), or, when even that does not fit *width*, the systems are numbered ``S1``,
        ``S2``... with a legend naming each."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        parts: list = [Text(f"Comparison with {self._short(self.baseline)}")]
        wtl = max((len(d.wtl) for d in self.differences), default=5)  # same widths in every table
        head = f"mean [{self.ci:.0%} CI]"
        mean_w = max([len(head)] + [len(f"{c[0][0]} {c[1][0]}") for c in cells.values()])
        labels = {s: names[s].replace("\n", " ") for s in self.systems}
        word = max([len("system")] + [len(w) for label in labels.values() for w in label.split()])
        shown = dict(zip(self.systems, short_labels(self.systems)))  # what the legend explains
        numbered = word + mean_w + 7 + 6 + max(wtl, 5) + 16 > width
        if numbered:
            labels = shown = {s: f"S{i + 1}" for i, s in enumerate(self.systems)}
            word = len("system")
        for m in self.measures:
            title = f"{m} (total over the queries)" if m in self.totals else m
            table = Table(title=title, title_justify="left")
            table.add_column("system", overflow="fold", min_width=min(word, width // 2))
            table.add_column(head, justify="right", no_wrap=True)
            for col, least in (("diff", 7), ("p", 6), ("W/T/L", wtl)):
                table.add_column(col, justify="right", no_wrap=True, min_width=least)
            for s in self.systems:
                lines = cells[(s, m)]
                mean = Text(lines[0][0], style=lines[0][1] or None)
                mean.append(" " + lines[1][0], style="dim")
                d = self._diff_or_none(s, m)
                k = self._digits(m, digits)
                rest = (
                    [signed(d.diff, k), p_text(d.p_adjusted), d.wtl]
                    if d is not None
                    else ["", "", ""]
                )
                table.add_row(labels[s], mean, *rest)
            parts.append(table)
        parts += self._full_names(shown, width, numbered)  # S1... or shortened labels: full names
        parts.append(Text(self.legend(short=True)))
        return Group(*parts)

    def render(self, fmt: str = "table", digits: int | None = None, cells=CELLS) -> str:
        """Render as ``table`` (plain text of the rich table), ``json``, ``jsonl``, ``csv``, ``tsv``,
        ``markdown`` or ``latex``; every format carries the means, intervals, differences and
        (corrected) p-values (``markdown`` and ``latex``: the *cells* parts chosen)."""
        if fmt == "markdown":
            return self.to_markdown(digits, cells)
        if fmt == "latex":
            return self.to_latex(digits, cells)
        if fmt == "csv":
            return self.to_csv()
        if fmt == "tsv":
            return self.to_csv("\t")
        if fmt == "jsonl":
            return self.to_jsonl()
        if fmt == "json":
            return self.to_json()
        if fmt == "table":
            from rich.console import Console

            console = Console(file=io.StringIO(), width=200, color_system=None, highlight=False)
            console.print(self.to_rich(digits))
            return console.file.getvalue()  # type: ignore[attr-defined]

        raise UnknownNameError(
            f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}." + suggest(fmt, FORMATS)
        )

    def __str__(self) -> str:
        return self.render("table")

    def __repr__(self) -> str:
        sig = sum(bool(d.significant) for d in self.differences)
        return (
            f"<ComparisonReport {len(self.systems)} systems (baseline {self.baseline!r}) x "
            f"{len(self.measures)} measure(s) ({', '.join(self.measures[:4])}"
            f"{', ...' if len(self.measures) > 4 else ''}), {self.n_queries} queries, "
            f"{self.test_method}, correction {self.correction}: {sig} of {len(self.differences)} "
            "differences significant; print() it for the table>"
        )


def parse_cells(cells: str | Sequence[str] | None) -> tuple[str, ...]:
    """The parts of a table cell: ``"mean,ci,dagger"`` or a sequence of :data:`CELLS` names
    (``None``: all), in :data:`CELLS` order; ``mean`` is always kept.

    Raises:
        UnknownNameError: a part that is not one of :data:`CELLS` (the nearest is suggested).
    """
    if cells is None:
        return CELLS
    items = [c.strip().lower() for c in (cells.split(",") if isinstance(cells, str) else cells)]
    for item in items:
        if item not in CELLS:
            raise UnknownNameError(
                f"unknown cell part {item!r} in {','.join(items)!r}; choose from "
                f"{', '.join(CELLS)}.{suggest(item, CELLS)}"
            )
    return tuple(c for c in CELLS if c in items or c == "mean")
