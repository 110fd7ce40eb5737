"""trec_eval's preference judgments: ``-R prefs`` and ``-R qrels_prefs`` (``get_prefs.c``,
``get_qrels_prefs.c``).

* ``prefs``: lines ``query_id judgment_group judgment_subgroup doc_id rel_level``. Within one
  sub-group every document is preferred to each document of a lower ``rel_level`` (a
  non-negative number; only the order matters, except that 0 marks a non-relevant document).
  A judgment group (one user's information need) is the union of its sub-groups, closed under
  transitivity; different groups may disagree.
* ``qrels_prefs``: an ordinary qrels file (``query_id judgment_group doc_id rel_level``) read as
  preferences: each group has a single sub-group, so every higher grade is preferred to every
  lower one.

The file is read through the reading layer (:mod:`nuggetbench.data.lines`): a ``.gz`` file or a
pipe too, a byte-order mark dropped, ids byte-exact, fields split at ASCII white space; blank
lines and lines whose first character is ``#`` are skipped (trec_eval 10.0).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from nuggetbench.data.lines import field_lines, layout_error, parse_real, read_text, text_lines
from nuggetbench.errors import FormatError

__all__ = ["PrefJudgment", "read_prefs", "read_qrels_prefs"]


class PrefJudgment(NamedTuple):
    """One line of a preference file: *doc* has *rel_level* in sub-group *subgroup* of group
    *group*."""

    group: str
    subgroup: str
    doc: str
    rel_level: float


def read_prefs(path: str | Path) -> dict[str, list[PrefJudgment]]:
    """Read a ``prefs`` file into ``{query_id: [PrefJudgment, ...]}`` (queries sorted, lines in
    file order).

    Raises:
        InputError: the file does not exist.
        FormatError: a line has not 5 fields or its rel_level is not a finite number (file,
            line and value named); the file holds no judgment.
    """
    return _read(Path(path), 5, "query_id judgment_group judgment_subgroup doc_id rel_level")


def read_qrels_prefs(path: str | Path) -> dict[str, list[PrefJudgment]]:
    """Read a qrels file as preferences (``-R qrels_prefs``): ``{query_id: [PrefJudgment]}``,
    every line's sub-group ``"0"``.

    Raises:
        InputError: the file does not exist.
        FormatError: a line has not 4 fields or its relevance is not a finite number (file,
            line and value named); the file holds no judgment.
    """
    return _read(Path(path), 4, "query_id judgment_group doc_id rel_level")


def _read(path: Path, ncols: int, layout: str) -> dict[str, list[PrefJudgment]]:
    by_query: dict[str, list[PrefJudgment]] = {}
    for number, fields in field_lines(text_lines(read_text(path, what="preferences"))):
        if len(fields) != ncols:
            raise layout_error(path, number, layout, fields)
        level = parse_real(fields[-1], path, number, "rel_level")
        group, subgroup = (fields[1], fields[2]) if ncols == 5 else (fields[1], "0")
        judgment = PrefJudgment(group, subgroup, fields[-2], level)
        by_query.setdefault(fields[0], []).append(judgment)
    if not by_query:
        raise FormatError(path, None, "no judgment found: the file is empty")
    return {q: by_query[q] for q in sorted(by_query)}
