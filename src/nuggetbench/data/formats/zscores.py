"""trec_eval's z-score file (``trec_eval -Z zscores_file``, ``get_zscores.c``).

Lines are ``query_id measure_name mean stddev`` separated by white space: the mean and standard
deviation of each measure on each query over a reference set of runs. ``measure_name`` is
trec_eval's output name (``map``, ``P_10``, ``iprec_at_recall_0.10``). The file is read through
the reading layer (:mod:`nuggetbench.data.lines`): a byte-order mark dropped, ids byte-exact,
ASCII white space only. Blank lines and lines whose first character is ``#`` are skipped
(trec_eval 10.0 calls a blank line malformed and reads a ``#`` line as a query id that no
query has; neither can change a value).
"""

from __future__ import annotations

from pathlib import Path

from nuggetbench.data.lines import field_lines, layout_error, parse_real, read_text, text_lines
from nuggetbench.errors import FormatError

__all__ = ["read_zscores"]


def read_zscores(path: str | Path) -> dict[str, dict[str, tuple[float, float]]]:
    """Read a z-score file into ``{query_id: {measure_name: (mean, stddev)}}``.

    Args:
        path: the file (``.gz`` or a pipe too).

    Returns:
        The table, queries and measures in the order first seen; a repeated (query, measure)
        keeps its last line (trec_eval keeps one of them, whichever its sort puts first).

    Raises:
        InputError: the file does not exist.
        FormatError: a line has not 4 fields, or its mean / stddev is not a finite number
            (file, line and value named); the file holds no line.
    """
    path = Path(path)
    table: dict[str, dict[str, tuple[float, float]]] = {}
    for number, fields in field_lines(text_lines(read_text(path, what="z-score"))):
        if len(fields) != 4:
            raise layout_error(path, number, "query_id measure_name mean stddev", fields)
        qid, name, mean, stddev = fields
        table.setdefault(qid, {})[name] = (
            parse_real(mean, path, number, "the mean"),
            parse_real(stddev, path, number, "the stddev"),
        )
    if not table:
        raise FormatError(path, None, "no z-score line found: the file is empty")
    return table
