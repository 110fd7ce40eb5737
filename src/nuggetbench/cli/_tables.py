"""Terminal tables that never hide anything.

A table of labelled rows (systems, queries) and named columns (measures) is printed whole when it
fits the console; otherwise it is turned (measures as rows) when that fits, else split into
several tables of as many columns as fit, each repeating the label column. Every column is as wide
as its widest cell, no cell is ever folded or cut (an id or label is never split inside), and a
label too long for the width is abbreviated (:func:`nuggetbench.spec.short_label`) with a legend
line giving the full text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nuggetbench.spec import short_label

__all__ = ["Grid", "table_width", "layout", "print_grid"]

#: Labels longer than this (or than a third of a narrow console) are abbreviated, with a legend.
LABEL_WIDTH = 24


@dataclass(frozen=True)
class Grid:
    """A table's text: *head* over the label column, *columns* (headers), and *rows*
    ``{label: [cell per column]}``; every cell already formatted. *right*: right-justify data."""

    head: str
    columns: list[str]
    rows: dict[str, list[str]]
    right: bool = True

    def turned(self, head: str = "measure") -> Grid:
        """The same cells with the columns as rows (and the row labels as columns)."""
        labels = list(self.rows)
        rows = {c: [self.rows[r][i] for r in labels] for i, c in enumerate(self.columns)}
        return Grid(head, labels, rows, self.right)

    def widths(self) -> list[int]:
        """Width of the label column, then of each data column (widest line of header or cell)."""
        first = max([_w(self.head), *(_w(r) for r in self.rows)])
        return [first] + [
            max([_w(c), *(_w(cells[i]) for cells in self.rows.values())])
            for i, c in enumerate(self.columns)
        ]


def table_width(widths: Sequence[int]) -> int:
    """Characters a rich :class:`~rich.table.Table` with the default box and padding needs for
    columns of these content *widths* (one space each side, one border between and around)."""
    return sum(widths) + 3 * len(widths) + 1


def layout(grid: Grid, width: int, *, turn_head: str = "measure") -> list[Grid]:
    """The tables to print for *grid* in *width* columns: ``[grid]`` when it fits, else
    ``[grid.turned()]`` when that fits, else *grid* split by columns (at least one column per
    table, so a column wider than the console still shows whole and the console folds it)."""
    if table_width(grid.widths()) <= width or not grid.columns:
        return [grid]
    turned = grid.turned(turn_head)
    if table_width(turned.widths()) <= width:
        return [turned]
    first, *rest = grid.widths()
    parts: list[Grid] = []
    start = 0
    while start < len(grid.columns):
        stop = start + 1
        while stop < len(grid.columns) and table_width([first, *rest[start : stop + 1]]) <= width:
            stop += 1
        rows = {label: cells[start:stop] for label, cells in grid.rows.items()}
        parts.append(Grid(grid.head, grid.columns[start:stop], rows, grid.right))
        start = stop
    return parts


def abbreviate(labels: Sequence[str], width: int) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """``{label: shown}`` with labels longer than :data:`LABEL_WIDTH` (or a third of *width*)
    shortened, and the legend ``(shown, label)`` of those that were."""
    limit = max(12, min(LABEL_WIDTH, width // 3))
    shown: dict[str, str] = {}
    legend: list[tuple[str, str]] = []
    for label in labels:
        short = short_label(label, limit) if len(label) > limit else label
        while short in shown.values() and short != label:  # two long labels, one abbreviation
            short = short[:-2] + "\u2026" + str(len(shown))
        shown[label] = short
        if short != label:
            legend.append((short, label))
    return shown, legend


def print_grid(console, title: str, grid: Grid, *, turn_head: str = "measure") -> None:
    """Print *title* and *grid* on *console* as :func:`layout` lays it out (long labels
    abbreviated, with their legend under the tables)."""
    from rich.table import Table

    shown, legend = abbreviate(list(grid.rows), console.width)
    grid = Grid(grid.head, grid.columns, {shown[k]: v for k, v in grid.rows.items()}, grid.right)
    parts = layout(grid, console.width, turn_head=turn_head)
    for i, part in enumerate(parts):
        label = title if len(parts) == 1 else f"{title} ({i + 1} of {len(parts)})"
        if label:
            console.print(label, markup=False, highlight=False)
        table = Table()
        table.add_column(part.head, no_wrap=True)
        for c in part.columns:
            table.add_column(c, justify="right" if part.right else "left", no_wrap=True)
        for name, cells in part.rows.items():
            table.add_row(name, *cells)
        console.print(table)
    for short, full in legend:
        lines = [f"{short} = {full}"]
        if len(lines[0]) > console.width:  # the full name on a line of its own
            lines = [f"{short} =", f"  {full}"]
        for line in lines:
            console.print(line, markup=False, highlight=False, overflow="fold")


def grid_of(
    head: str,
    rows: Mapping[str, Mapping[str, str]],
    columns: Sequence[str],
) -> Grid:
    """A :class:`Grid` from ``{label: {column: text}}`` (a missing cell is empty)."""
    return Grid(head, list(columns), {k: [v.get(c, "") for c in columns] for k, v in rows.items()})


def _w(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in str(text).split("\n")), default=0)


def entry_lines(
    name: str, description: str, params: Sequence[tuple[str, str]], width: int, *, indent: int = 2
) -> list[str]:
    """A plain listing entry for ``measures`` and ``retrievers``: *name* on its own line, the
    *description* wrapped under it (*indent*, 2 by default), then each ``(head, text)``
    parameter as ``head: text`` wrapped with a hanging indent (6). Words (ids,
    ``name=value``) are never broken; no line is longer than *width* unless one word is."""
    import textwrap

    def wrap(text: str, first: str, rest: str) -> list[str]:
        return textwrap.wrap(
            text,
            width=max(width, 20),
            initial_indent=first,
            subsequent_indent=rest,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [first.rstrip()]

    lines = [name]
    if description:
        lines += wrap(description, " " * indent, " " * indent)
    for head, text in params:
        lines += wrap(f"{head}: {text}" if text else head, "    ", "        ")
    return lines
