"""Questions with accepted answers, from a Stack Exchange ``Posts.xml`` dump or a JSONL file.

**Posts.xml** (the Stack Exchange data dump): one ``<row .../>`` per line with ``Id``,
``PostTypeId`` (1 question, 2 answer), ``AcceptedAnswerId``, ``ParentId``, ``CreationDate``,
``Score``, ``Title``, ``Body`` (HTML) and ``Tags`` in either format (``&lt;a&gt;&lt;b&gt;`` in
older dumps, ``|a|b|`` in newer ones). The file is streamed row by row, each row parsed on its own
with ``xml.etree.ElementTree`` so that a malformed row can be reported (line and column) and skipped
(``on_error="skip"``) or raised (``on_error="raise"``); ``iterparse`` cannot resume after an error,
so it is used only for a dump that is not one row per line. Accepted answers are joined in the same
pass; answers that come before their question in the file are fetched by a second pass over answer
rows only.

**JSONL**: one object per line, ``{"id", "title", "body", "answer", "tags", "date"}`` (optional
``score``); ``body`` and ``answer`` may be HTML or text.

Questions are kept when they have an accepted answer and pass the tag, date and score filters;
HTML is turned into text with code blocks fenced (:func:`~.htmltext.html_to_text`). The tags that
co-occur with the filter tags are counted (FreshStack picks the repositories to index from the
top 25).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

from nuggetbench.builder.posts_xml import read_posts_xml
from nuggetbench.builder.screening import (
    Question,
    QuestionFilter,
    QuestionReport,
    _int,
    _malformed,
    _screen,
    _text,
    parse_date,
    parse_tags,
)
from nuggetbench.errors import InputError

log = logging.getLogger(__name__)


def read_questions_jsonl(
    path: str | Path,
    filt: QuestionFilter | None = None,
    *,
    on_error: str = "skip",
    top_k: int = 25,
) -> tuple[list[Question], QuestionReport]:
    """Read ``{id, title, body, answer, tags, date[, score]}`` lines (see :func:`.posts_xml.read_posts_xml`).

    A line without an ``answer`` counts as a question without an accepted answer.

    Raises:
        FormatError: a line that is not a JSON object or lacks ``id`` with ``on_error="raise"``.
        InputError: the file does not exist.
    """
    filt = filt or QuestionFilter()
    path = Path(path)
    if not path.is_file():
        raise InputError(f"questions file {path} does not exist")
    report = QuestionReport(str(path))
    out: list[Question] = []
    cooc: Counter[str] = Counter()
    seen: set[str] = set()
    with open(path, encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            report.rows += 1
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict) or obj.get("id") is None:
                    raise ValueError("expected an object with 'id'")
            except ValueError as exc:
                _malformed(path, report, on_error, lineno, 1, f"not a question object ({exc})")
                continue
            qid = str(obj["id"])
            if qid in seen:
                _malformed(path, report, on_error, lineno, 1, f"question id {qid!r} occurs twice")
                continue
            seen.add(qid)
            tags = parse_tags(obj.get("tags"))
            date = str(obj.get("date") or "")
            score = _int(obj.get("score"))
            answer = obj.get("answer")
            report.answers += bool(answer)
            if not _screen(filt, report, cooc, tags, date, score, bool(answer)):
                continue
            if filt.limit is not None and len(out) >= filt.limit:
                continue
            out.append(
                Question(
                    qid,
                    _text(obj.get("title")),
                    _text(obj.get("body")),
                    _text(answer),
                    tags,
                    date,
                    score,
                    str(obj.get("answer_id") or ""),
                )
            )
    report.kept = len(out)
    report.top_tags = cooc.most_common(top_k)
    return out, report


def read_questions(
    path: str | Path,
    filt: QuestionFilter | None = None,
    *,
    format: str = "auto",
    on_error: str = "skip",
    top_k: int = 25,
) -> tuple[list[Question], QuestionReport]:
    """Read questions from a ``Posts.xml`` (``format="posts-xml"``) or JSONL (``"jsonl"``);
    ``"auto"`` decides by the file suffix (``.xml`` or ``.jsonl``/``.json``)."""
    filt = filt or QuestionFilter()
    path = Path(path)
    if format == "auto":
        suffix = path.suffix.lower()
        format = (
            "posts-xml" if suffix == ".xml" else "jsonl" if suffix in (".jsonl", ".json") else ""
        )
        if not format:
            raise InputError(
                f"{path}: cannot tell the format from the suffix; set [questions] format "
                "to 'posts-xml' or 'jsonl'"
            )
    if format == "posts-xml":
        return read_posts_xml(path, filt, on_error=on_error, top_k=top_k)
    if format == "jsonl":
        return read_questions_jsonl(path, filt, on_error=on_error, top_k=top_k)
    raise InputError(f"unknown questions format {format!r}: use 'posts-xml', 'jsonl' or 'auto'")


__all__ = [
    "Question",
    "QuestionReport",
    "QuestionFilter",
    "read_questions",
    "read_questions_jsonl",
    "parse_tags",
    "parse_date",
]
