"""trec_eval's ``qrels_jg`` format: qrels with several judgment groups per query.

Lines are ``query_id judgment_group doc_id relevance`` (trec_eval ``-R qrels_jg``,
``get_qrels_jg.c``): the second column, ignored in plain qrels, names the group (one assessor,
one judgment set). Each group is an ordinary :class:`~nuggetbench.data.Qrels`. The file is read
through the reading layer (:mod:`nuggetbench.data.lines`), as plain qrels are: a byte-order mark
dropped, ids byte-exact, ASCII white space only, ``#`` comment lines skipped, grades exact
integers.
"""

from __future__ import annotations

from pathlib import Path

from nuggetbench.data.lines import field_lines, layout_error, read_text, text_lines
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.source import INT64_MAX, INT64_MIN, parse_grade, short
from nuggetbench.errors import FormatError

__all__ = ["read_qrels_jg"]


def read_qrels_jg(path: str | Path) -> dict[str, Qrels]:
    """Read a ``qrels_jg`` file into ``{group: Qrels}``, groups in the order first seen.

    Raises:
        InputError: the file does not exist.
        FormatError: a line has not 4 fields or its relevance is not an integer in the 64-bit
            range (file, line and value named); the file holds no judgment.
        DuplicateError: a group judges a (query, doc) pair twice with different grades.
    """
    path = Path(path)
    columns: dict[str, tuple[list[str], list[str], list[int]]] = {}
    for number, fields in field_lines(text_lines(read_text(path, what="qrels"))):
        if len(fields) != 4:
            raise layout_error(path, number, "query_id judgment_group doc_id relevance", fields)
        qid, group, doc, rel = fields
        grade = parse_grade(rel)
        if grade is None or not INT64_MIN <= grade <= INT64_MAX:
            raise FormatError(
                path, number, f"relevance must be an integer in the 64-bit range, got {short(rel)}"
            )
        q, d, r = columns.setdefault(group, ([], [], []))
        q.append(qid)
        d.append(doc)
        r.append(grade)
    if not columns:
        raise FormatError(path, None, "no judgment found: the file is empty")
    return {
        group: Qrels(q, d, r, name=f"{path.name}[{group}]", source=str(path))
        for group, (q, d, r) in columns.items()
    }
