"""Streaming a Stack Exchange data dump's ``Posts.xml`` (see :mod:`.questions` for the format).

Each ``<row .../>`` line is parsed on its own with ``xml.etree.ElementTree`` so that a malformed
row is reported with its line and column and skipped (``on_error="skip"``) or raised
(``on_error="raise"``): ``iterparse`` cannot resume after an error, so it is used only for a dump
that is not one row per line (then a malformed row stops the read). A row split over several lines
is joined first. Accepted answers are joined in the same pass; answers listed before their question
are fetched by a second pass over the answer rows only, so memory holds just the kept questions.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nuggetbench.builder.htmltext import html_to_text
from nuggetbench.builder.screening import (
    Question,
    QuestionFilter,
    QuestionReport,
    _int,
    _malformed,
    _screen,
    _text,
    parse_tags,
)
from nuggetbench.errors import FormatError, InputError

log = logging.getLogger(__name__)


def _iter_rows(path: Path, report: QuestionReport, on_error: str) -> Iterator[dict[str, str]]:
    """Yield the attributes of each ``<row>`` (see the module docstring for error handling)."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        buffer, start_line, indent = "", 0, 0
        for lineno, line in enumerate(fh, start=1):
            text = line.strip()
            if not buffer:
                if not text.startswith("<row"):
                    if text.count("<row") >= 1:  # not one row per line: strict streaming parse
                        yield from _iterparse(path, report)
                        return
                    continue
                start_line, indent = lineno, len(line) - len(line.lstrip())
            buffer = (buffer + "\n" + text) if buffer else text
            if not buffer.endswith("/>") and not buffer.endswith("</row>"):
                continue
            row, buffer = buffer, ""
            report.rows += 1
            try:
                elem = ET.fromstring(row)
            except ET.ParseError as exc:
                rline, rcol = exc.position
                line_no = start_line + rline - 1
                col = rcol + 1 + (indent if rline == 1 else 0)
                _malformed(
                    path,
                    report,
                    on_error,
                    line_no,
                    col,
                    f"not well-formed XML ({str(exc).split(':')[0]})",
                )
                continue
            attrs = dict(elem.attrib)
            if "Id" not in attrs or "PostTypeId" not in attrs:
                _malformed(path, report, on_error, start_line, 1, "row without Id or PostTypeId")
                continue
            attrs["_line"] = str(start_line)
            yield attrs
        if buffer:
            _malformed(
                path, report, on_error, start_line, 1, "unterminated <row> at the end of the file"
            )


def _iterparse(path: Path, report: QuestionReport) -> Iterator[dict[str, str]]:
    try:
        for _, elem in ET.iterparse(path, events=("end",)):
            if elem.tag == "row":
                report.rows += 1
                attrs = dict(elem.attrib)
                elem.clear()
                if "Id" in attrs and "PostTypeId" in attrs:
                    yield attrs
    except ET.ParseError as exc:
        line, col = exc.position
        raise FormatError(
            path,
            line,
            f"column {col + 1}: not well-formed XML ({exc}); a dump that is not "
            "one <row/> per line cannot skip bad rows: repair the file",
        ) from None


def read_posts_xml(
    path: str | Path,
    filt: QuestionFilter | None = None,
    *,
    on_error: str = "skip",
    top_k: int = 25,
) -> tuple[list[Question], QuestionReport]:
    """Read questions with accepted answers from a Stack Exchange ``Posts.xml``.

    Args:
        path: the dump file.
        filt: tag / date / score filters and a limit (default: none).
        on_error: ``"skip"`` (report malformed rows in ``report.malformed``) or ``"raise"``.
        top_k: how many co-occurring tags to keep in ``report.top_tags``.

    Returns:
        ``(questions, report)``; questions in file order.

    Raises:
        FormatError: a malformed row with ``on_error="raise"`` (line and column named).
        InputError: the file does not exist.
    """
    filt = filt if filt is not None else QuestionFilter()
    path = Path(path)
    if not path.is_file():
        raise InputError(f"questions file {path} does not exist")
    if on_error not in ("skip", "raise"):
        raise InputError(f"on_error must be 'skip' or 'raise', got {on_error!r}")
    report = QuestionReport(str(path))
    pending: dict[str, dict[str, Any]] = {}  # question id -> fields, waiting for the answer
    answers: dict[str, str] = {}  # accepted answer id -> HTML body
    wanted: dict[str, str] = {}  # accepted answer id -> question id
    order: list[str] = []
    cooc: Counter[str] = Counter()
    for row in _iter_rows(path, report, on_error):
        kind = row.get("PostTypeId")
        if kind == "2":
            report.answers += 1
            if row["Id"] in wanted:
                answers[row["Id"]] = row.get("Body", "")
            continue
        if kind != "1":
            continue
        tags = parse_tags(row.get("Tags"))
        date = row.get("CreationDate", "")
        score = _int(row.get("Score"))
        accepted = row.get("AcceptedAnswerId")
        if not _screen(filt, report, cooc, tags, date, score, bool(accepted)):
            continue
        qid = row["Id"]
        pending[qid] = {
            "title": row.get("Title", ""),
            "body": row.get("Body", ""),
            "tags": tags,
            "date": date,
            "score": score,
            "answer_id": accepted,
        }
        wanted[accepted] = qid
        order.append(qid)
    _answers_before_questions(path, wanted, answers)
    out = _questions(order, pending, answers, filt, report)
    report.kept = len(out)
    report.top_tags = cooc.most_common(top_k)
    return out, report


def _answers_before_questions(path: Path, wanted: dict[str, str], answers: dict[str, str]) -> None:
    """The accepted answers listed before their question, from a second pass over the answer
    rows only, into *answers*."""
    missing = {a for a in wanted if a not in answers}
    if not missing:
        return
    log.info(
        "%s: second pass for %d accepted answers listed before their question", path, len(missing)
    )
    quiet = QuestionReport(str(path))
    for row in _iter_rows(path, quiet, "skip"):
        if row.get("PostTypeId") == "2" and row["Id"] in missing:
            answers[row["Id"]] = row.get("Body", "")


def _questions(
    order: list[str],
    pending: dict[str, dict[str, Any]],
    answers: dict[str, str],
    filt: QuestionFilter,
    report: QuestionReport,
) -> list[Question]:
    """The kept questions in file order, with their accepted answers' text, up to the limit."""
    out: list[Question] = []
    for qid in order:
        f = pending[qid]
        if f["answer_id"] not in answers:
            report.accepted_answer_missing += 1
            continue
        if filt.limit is not None and len(out) >= filt.limit:
            break
        out.append(
            Question(
                qid,
                _text(f["title"]),
                html_to_text(f["body"]),
                html_to_text(answers[f["answer_id"]]),
                f["tags"],
                f["date"],
                f["score"],
                f["answer_id"],
            )
        )
    return out


__all__ = ["read_posts_xml"]
