"""trec_eval's z-score file (``trec_eval -Z zscores_file``, ``get_zscores.c``).

Lines are ``query_id measure_name mean stddev`` separated by whitespace: the mean and standard
deviation of each measure on each query over a reference set of runs. ``measure_name`` is
trec_eval's output name (``map``, ``P_10``, ``iprec_at_recall_0.10``). Blank lines and lines whose
first character is ``#`` are skipped.
"""

from __future__ import annotations

import math
from pathlib import Path

from nuggetbench.errors import FormatError

__all__ = ["read_zscores"]


def read_zscores(path: str | Path) -> dict[str, dict[str, tuple[float, float]]]:
    """Read a z-score file into ``{query_id: {measure_name: (mean, stddev)}}``.

    Args:
        path: the file.

    Returns:
        The table, queries and measures in the order first seen; a repeated (query, measure)
        keeps its last line.

    Raises:
        FormatError: a line has not 4 fields, or its mean / stddev is not a finite number
            (file and line named); the file holds no line.
    """
    path = Path(path)
    table: dict[str, dict[str, tuple[float, float]]] = {}
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields or line.startswith("#"):
                continue
            if len(fields) != 4:
                raise FormatError(
                    path,
                    number,
                    f"expected 'query_id measure_name mean stddev', got {len(fields)} fields: "
                    f"{line.strip()!r}",
                )
            qid, name, mean, stddev = fields
            table.setdefault(qid, {})[name] = (
                _number(mean, path, number, "mean"),
                _number(stddev, path, number, "stddev"),
            )
    if not table:
        raise FormatError(path, None, "no z-score line found: the file is empty")
    return table


def _number(text: str, path: Path, number: int, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise FormatError(path, number, f"the {what} must be a finite number, got {text!r}")
    return value
