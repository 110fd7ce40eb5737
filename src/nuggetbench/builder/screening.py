"""Question values and the screening both question readers share: :class:`Question`,
:class:`QuestionFilter` (tags, dates, score), :class:`QuestionReport`, tag and date parsing.

The readers are :mod:`.questions` (JSONL, and the format-detecting :func:`~.questions.read_questions`)
and :mod:`.posts_xml` (Stack Exchange ``Posts.xml``).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from nuggetbench.builder.htmltext import html_to_text, looks_like_html
from nuggetbench.errors import FormatError, InputError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Question:
    """A question with its accepted answer (texts with code blocks fenced)."""

    question_id: str
    title: str
    body: str
    answer: str
    tags: tuple[str, ...] = ()
    date: str = ""
    score: int = 0
    answer_id: str = ""

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tags"] = list(self.tags)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Question:
        return cls(
            str(d["question_id"]),
            d.get("title", ""),
            d.get("body", ""),
            d.get("answer", ""),
            tuple(d.get("tags") or ()),
            d.get("date", ""),
            int(d.get("score") or 0),
            str(d.get("answer_id") or ""),
        )


@dataclass
class QuestionReport:
    """What reading a source found: counts per outcome, malformed rows, co-occurring tags."""

    source: str
    rows: int = 0
    questions: int = 0
    answers: int = 0
    with_accepted: int = 0
    dropped_by_tags: int = 0
    dropped_by_date: int = 0
    dropped_by_score: int = 0
    accepted_answer_missing: int = 0
    kept: int = 0
    malformed: list[dict] = field(default_factory=list)
    top_tags: list[tuple[str, int]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["top_tags"] = [list(t) for t in self.top_tags]
        return d


def parse_tags(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"<a><b>"``, ``"&lt;a&gt;&lt;b&gt;"`` or ``"|a|b|"`` (or a list) -> ``("a", "b")``."""
    if value is None:
        return ()
    if not isinstance(value, str):
        return tuple(str(t).strip() for t in value if str(t).strip())
    value = value.strip()
    if "&lt;" in value:
        import html

        value = html.unescape(value)
    if value.startswith("<"):
        return tuple(t.strip() for t in re.findall(r"<([^<>]+)>", value) if t.strip())
    if "|" in value:
        return tuple(t.strip() for t in value.split("|") if t.strip())
    return tuple(t for t in re.split(r"[\s,;]+", value) if t)


def parse_date(text: str, *, what: str = "date") -> datetime:
    """ISO date or date-time (``2023-01-31``, ``2023-01-31T20:09:32.720``) -> naive datetime.

    Raises:
        InputError: not an ISO date.
    """
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise InputError(f"{what} {text!r} is not an ISO date (write e.g. 2023-01-31)") from None
    return value.replace(tzinfo=None)


@dataclass(frozen=True)
class QuestionFilter:
    """Which questions to keep.

    Attributes:
        tags: keep questions with any (``tags_mode="any"``) or all (``"all"``) of these tags;
            empty: no tag filter.
        since, until: keep questions created on or after *since* and before *until* (ISO dates).
        min_score: keep questions scoring at least this.
        limit: keep at most this many (in file order).
    """

    tags: tuple[str, ...] = ()
    tags_mode: str = "any"
    since: str | None = None
    until: str | None = None
    min_score: int | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.tags_mode not in ("any", "all"):
            raise InputError(f"tags_mode must be 'any' or 'all', got {self.tags_mode!r}")
        for what in ("since", "until"):
            if getattr(self, what):
                parse_date(getattr(self, what), what=what)

    def tag_ok(self, tags: Sequence[str]) -> bool:
        if not self.tags:
            return True
        have = {t.lower() for t in tags}
        want = [t.lower() for t in self.tags]
        return (
            all(t in have for t in want)
            if self.tags_mode == "all"
            else any(t in have for t in want)
        )

    def date_ok(self, date: str) -> bool:
        if not (self.since or self.until):
            return True
        try:
            when = parse_date(date)
        except InputError:
            return False
        if self.since and when < parse_date(self.since):
            return False
        return not (self.until and when >= parse_date(self.until))


def _malformed(
    path: Path, report: QuestionReport, on_error: str, line: int, col: int, message: str
) -> None:
    if on_error == "raise":
        raise FormatError(
            path,
            line,
            f"column {col}: {message}; fix the row, or read with "
            "on_error='skip' to skip malformed rows",
        )
    report.malformed.append({"line": line, "column": col, "error": message})
    log.warning("%s, line %d, column %d: %s (row skipped)", path, line, col, message)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _text(value: Any) -> str:
    value = "" if value is None else str(value)
    return html_to_text(value) if looks_like_html(value) else value.strip()


def _screen(
    filt: QuestionFilter,
    report: QuestionReport,
    cooc: Counter[str],
    tags: tuple[str, ...],
    date: str,
    score: int,
    accepted: bool,
) -> bool:
    """Count one question in *report* (its tags in *cooc* when in the tag and date scope); True
    when it has an accepted answer and passes the tag, date and score filters."""
    report.questions += 1
    if filt.tag_ok(tags) and filt.date_ok(date):
        cooc.update(t for t in tags if t.lower() not in {x.lower() for x in filt.tags})
    if not accepted:
        return False
    report.with_accepted += 1
    if not filt.tag_ok(tags):
        report.dropped_by_tags += 1
        return False
    if not filt.date_ok(date):
        report.dropped_by_date += 1
        return False
    if filt.min_score is not None and score < filt.min_score:
        report.dropped_by_score += 1
        return False
    return True


__all__ = ["Question", "QuestionFilter", "QuestionReport", "parse_date", "parse_tags"]
