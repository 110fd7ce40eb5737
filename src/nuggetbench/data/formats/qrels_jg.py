"""trec_eval's ``qrels_jg`` format: qrels with several judgment groups per query.

Lines are ``query_id judgment_group doc_id relevance`` (trec_eval ``-R qrels_jg``,
``get_qrels_jg.c``): the second column, ignored in plain qrels, names the group (one assessor,
one judgment set). Each group is an ordinary :class:`~nuggetbench.data.Qrels`.
"""

from __future__ import annotations

from pathlib import Path

from nuggetbench.data.qrels import Qrels
from nuggetbench.errors import FormatError

__all__ = ["read_qrels_jg"]


def read_qrels_jg(path: str | Path) -> dict[str, Qrels]:
    """Read a ``qrels_jg`` file into ``{group: Qrels}``, groups in the order first seen.

    Raises:
        FormatError: a line has not 4 fields or its relevance is not an integer (file and
            line named); the file holds no judgment.
        DuplicateError: a group judges a (query, doc) pair twice with different grades.
    """
    path = Path(path)
    columns: dict[str, tuple[list[str], list[str], list[int]]] = {}
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) != 4:
                raise FormatError(
                    path,
                    number,
                    f"expected 'query_id judgment_group doc_id relevance', got {len(fields)} "
                    f"fields: {line.strip()!r}",
                )
            qid, group, doc, rel = fields
            try:
                grade = int(rel)
            except ValueError:
                raise FormatError(
                    path, number, f"relevance must be an integer, got {rel!r}"
                ) from None
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
