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

Blank lines and lines whose first character is ``#`` are skipped (trec_eval 10.0).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

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
        FormatError: a line has not 5 fields or its rel_level is not a finite number (file and
            line named); the file holds no judgment.
    """
    return _read(Path(path), 5, "query_id judgment_group judgment_subgroup doc_id rel_level")


def read_qrels_prefs(path: str | Path) -> dict[str, list[PrefJudgment]]:
    """Read a qrels file as preferences (``-R qrels_prefs``): ``{query_id: [PrefJudgment]}``,
    every line's sub-group ``"0"``.

    Raises:
        FormatError: a line has not 4 fields or its relevance is not a finite number (file and
            line named); the file holds no judgment.
    """
    return _read(Path(path), 4, "query_id judgment_group doc_id rel_level")


def _read(path: Path, ncols: int, layout: str) -> dict[str, list[PrefJudgment]]:
    by_query: dict[str, list[PrefJudgment]] = {}
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields or line.startswith("#"):
                continue
            if len(fields) != ncols:
                raise FormatError(
                    path, number, f"expected '{layout}', got {len(fields)} fields: {line.strip()!r}"
                )
            try:
                level = float(fields[-1])
            except ValueError:
                level = math.nan
            if not math.isfinite(level):
                raise FormatError(
                    path, number, f"rel_level must be a finite number, got {fields[-1]!r}"
                )
            group, subgroup = (fields[1], fields[2]) if ncols == 5 else (fields[1], "0")
            judgment = PrefJudgment(group, subgroup, fields[-2], level)
            by_query.setdefault(fields[0], []).append(judgment)
    if not by_query:
        raise FormatError(path, None, "no judgment found: the file is empty")
    return {q: by_query[q] for q in sorted(by_query)}
