"""Small helpers shared by commands: consoles, argument loading, rendering."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

FORMATS = ("table", "json", "markdown", "tsv")


def console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def warn(message: str) -> None:
    """Print a warning to stderr (yellow)."""
    console(stderr=True).print(f"[yellow]warning:[/yellow] {message}", markup=True)


def info(message: str) -> None:
    console(stderr=True).print(message, markup=False)


def looks_like_path(text: str) -> bool:
    return (
        Path(text).exists()
        or "/" in text
        and Path(text).suffix != ""
        and not text.startswith(("beir/", "birco/", "freshstack/", "miracl/", "mmarco/"))
    )


def load_qrels_arg(text: str, *, split: str | None = None, **dataset_options: Any):
    """QRELS argument: a file (TREC qrels, BEIR tsv, JSON, diversity qrels, FreshStack queries
    file) or a dataset id.

    Returns:
        ``(qrels, defaults)``: *defaults* is the dataset (for an id or folder), a namespace with
        ``default_measures`` / ``default_profile`` for a FreshStack queries file (FreshStack's
        measures and profile), or ``None`` for plain qrels files.
    """
    path = Path(text)
    if path.is_file():
        return _load_qrels_file(path)
    from ..datasets import load_dataset

    options = dict(dataset_options)
    if split:
        options["split"] = split
    ds = load_dataset(str(path) if path.is_dir() else text, **options)
    return ds.qrels, ds


def _load_qrels_file(path: Path):
    """Sniff nugget-level formats first, then document qrels; ``(qrels, defaults_or_None)``."""
    from types import SimpleNamespace

    from ..data import load_qrels
    from ..data.diversity_io import load_nugget_qrels_file, sniff_nugget_qrels

    kind = sniff_nugget_qrels(path)
    if kind == "freshstack":
        from ..datasets.freshstack import DEFAULT_MEASURES, DEFAULT_PROFILE

        defaults = SimpleNamespace(
            default_measures=list(DEFAULT_MEASURES),
            default_profile=DEFAULT_PROFILE,
            corpus=None,
            metadata=None,
        )
        return load_nugget_qrels_file(path), defaults
    if kind:
        return load_nugget_qrels_file(path), None
    return load_qrels(path), None


def parse_dataset_options(items) -> dict:
    """``-O key=value`` pairs -> typed loader options (ints, floats, true/false, strings).

    Raises:
        click.BadParameter: an item without ``=``.
    """
    out: dict = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(
                f"{item!r}: expected KEY=VALUE (e.g. max_docs=100000)", param_hint="-O"
            )
        out[key.strip()] = _typed(value.strip())
    return out


def _typed(value: str):
    low = value.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def fmt_value(value: float, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    if float(value).is_integer() and abs(value) >= 1:
        return str(int(value))
    return f"{value:.{digits}f}"


def render_means_table(
    title: str,
    rows: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
    *,
    digits: int = 4,
    extra_columns: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """Print a rich table: one row per system, one column per measure."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("system", overflow="fold")
    for m in measures:
        table.add_column(m, justify="right")
    extra_names: list[str] = []
    if extra_columns:
        for cols in extra_columns.values():
            for c in cols:
                if c not in extra_names:
                    extra_names.append(c)
        for c in extra_names:
            table.add_column(c, justify="right")
    for name, means in rows.items():
        cells = [fmt_value(means.get(m, float("nan")), digits) for m in measures]
        if extra_columns:
            cells += [extra_columns.get(name, {}).get(c, "") for c in extra_names]
        table.add_row(name, *cells)
    console().print(table)


def markdown_table(
    rows: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
    *,
    digits: int = 4,
    first: str = "system",
) -> str:
    lines = ["| " + " | ".join([first, *measures]) + " |", "|" + "---|" * (len(measures) + 1)]
    for name, means in rows.items():
        lines.append(
            "| "
            + " | ".join([name, *(fmt_value(means.get(m, float("nan")), digits) for m in measures)])
            + " |"
        )
    return "\n".join(lines)


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default))


def _json_default(value: Any):
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
