"""One ``--format`` for every command that prints scores: the same choices, the same information.

``table`` (rich, for people), ``markdown`` and ``latex`` (for papers) print a wide table;
``json`` prints exactly one JSON object; ``jsonl``, ``csv`` and ``tsv`` print one record per line
with a header (csv/tsv) so that pandas, spreadsheets and ``awk`` read them. Values keep full
precision in the machine formats and fixed decimals per measure in the human ones.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import click

from nuggetbench.errors import NuggetbenchError
from nuggetbench.measures import get_family, parse_measure

FORMATS = ("table", "json", "jsonl", "csv", "tsv", "markdown", "latex")


def format_option(*extra: str, help: str = ""):
    """``--format`` with the shared choices (plus *extra*, e.g. ``trec_eval`` where it applies)."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice([*FORMATS, *extra]),
        default="table",
        show_default=True,
        help=help
        or "table (terminal), json (one object), jsonl/csv/tsv (one record per line), "
        "markdown or latex (tables for papers); every format carries the same values.",
    )


def records_text(fmt: str, records: Sequence[Mapping[str, Any]]) -> str:
    """*records* (flat dicts, same keys) as ``jsonl``, ``csv`` or ``tsv`` text (with a header)."""
    if fmt == "jsonl":
        return "".join(json.dumps(_clean(dict(r)), ensure_ascii=False) + "\n" for r in records)
    buf = io.StringIO()
    fields = list(records[0]) if records else []
    writer = csv.DictWriter(
        buf, fieldnames=fields, lineterminator="\n", delimiter="\t" if fmt == "tsv" else ","
    )
    writer.writeheader()
    for r in records:
        writer.writerow({k: "" if _missing(v) else v for k, v in r.items()})
    return buf.getvalue()


def wide_text(
    fmt: str,
    first: str,
    rows: Mapping[str, Mapping[str, Any]],
    columns: Sequence[str],
    *,
    digits: Mapping[str, int] | None = None,
    caption: str = "",
    total: Mapping[str, Any] | None = None,
) -> str:
    """A ``markdown`` or ``latex`` table: one row per key of *rows*, one column per *columns*;
    numbers with ``digits[column]`` decimals (4 by default). *total* (the mean) is a last row
    labelled in bold, ``**mean**`` / ``\\textbf{mean}``, which no escaped row name can spell
    (a query named ``all`` or ``mean`` keeps its own row)."""
    digits = digits or {}
    cells = {
        name: [_cell(values.get(c), digits.get(c, 4)) for c in columns]
        for name, values in rows.items()
    }
    last = [_cell(total.get(c), digits.get(c, 4)) for c in columns] if total is not None else None
    if fmt == "markdown":
        lines = ["| " + " | ".join([first, *columns]) + " |", "|---|" + "---:|" * len(columns)]
        lines += [
            "| " + " | ".join([name.replace("|", "\\|").replace("*", "\\*"), *vals]) + " |"
            for name, vals in cells.items()
        ]
        lines += ["| " + " | ".join(["**mean**", *last]) + " |"] if last is not None else []
        return "\n".join(lines) + ("\n\n" + caption if caption else "") + "\n"
    lines = [
        r"\begin{tabular}{l" + "r" * len(columns) + "}",
        r"\toprule",
        " & ".join(tex([first, *columns])) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(tex([name, *vals])) + r" \\" for name, vals in cells.items()]
    if last is not None:
        lines += [r"\midrule", " & ".join([r"\textbf{mean}", *tex(last)]) + r" \\"]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append("% " + " ".join(tex([caption])))
    return "\n".join(lines) + "\n"


def measure_digits(measure: str, default: int = 4) -> int:
    """Decimals for one measure's column, the same on every row (so ``1`` never sits beside
    ``0.0000``): 0 for count families (``NumRet``, summed over queries), else *default*."""
    try:
        family = get_family(parse_measure(measure).family)
    except NuggetbenchError:
        return default
    return 0 if family.aggregate == "sum" else default


def tex(items: Sequence[str]) -> list[str]:
    """LaTeX-escaped cells."""
    table = str.maketrans(
        {
            "\\": r"\textbackslash{}",
            "&": r"\&",
            "%": r"\%",
            "$": r"\$",
            "#": r"\#",
            "_": r"\_",
            "{": r"\{",
            "}": r"\}",
            "~": r"\textasciitilde{}",
            "^": r"\^{}",
        }
    )
    return [str(i).translate(table) for i in items]


def _cell(value: Any, digits: int) -> str:
    if _missing(value):
        return "nan" if isinstance(value, float) else ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.{digits}f}"
    return str(value)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def _checked_cells(ctx: click.Context, param: click.Parameter, value):
    """``--cells`` read as the command line is read (an unknown part fails before any work)."""
    from nuggetbench.compare import parse_cells  # lazy: scipy's statistics, only with --cells

    try:
        return parse_cells(value)
    except NuggetbenchError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


#: ``--cells``: what a markdown or latex comparison cell holds.
cells_option = click.option(
    "--cells",
    default=None,
    metavar="PARTS",
    callback=_checked_cells,
    help="markdown/latex: what each cell holds, comma-separated from mean, ci, dagger, diff, p, "
    "wtl (default: all; 'mean,dagger' fits a paper's column). The best mean of each measure "
    "is in bold.",
)
