"""Score generated answers by the nuggets they support: ``nuggetbench answers NUGGETS ANSWERS...``.

AutoNuggetizer's assignment and scores (Pradeep et al., 2024, "Initial Nugget Evaluation Results
for the TREC 2024 RAG Track with the AutoNuggetizer Framework", arXiv 2411.09607;
castorini/nuggetizer ``models/nuggetizer.py: assign`` and ``core/metrics.py``):

* the nuggets of a question go to the model in windows of at most 10 (in their order), each window
  with the question and the whole answer; the model replies with a list of labels in the order the
  nuggets were given: ``support``, ``partial_support`` or ``not_support`` (our prompt,
  ``llm/templates/assign.v1.txt``, is in our own words). A reply that is not a list of exactly
  that many known labels is re-asked ``max_repairs`` times; then each nugget of the window is
  labelled ``failed`` (as nuggetizer does after its trials), which counts as not supported, and
  the failure is counted and reported;
* per answer, with ``V`` the vital nuggets and ``A`` all nuggets (``core/metrics.py:
  calculate_nugget_scores``)::

      vital_score        = (#support in V + 0.5 * #partial_support in V) / |V|
      strict_vital_score = #support in V / |V|
      all_score          = (#support in A + 0.5 * #partial_support in A) / |A|
      strict_all_score   = #support in A / |A|

  a score whose denominator is empty is 0;
* a system's score is the unweighted mean over the questions of the nuggets file
  (``calculate_global_metrics``). As in nuggetizer, a question the system did not answer is
  scored on an empty answer; we send no request for it (an empty answer supports nothing) and
  label its nuggets ``not_support``, and count such questions (``missing``).

The answer text of a TREC 2024 RAG record is its sentences' texts joined by single spaces
(nuggetizer's ``" ".join(a["text"] for a in answer)``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from nuggetbench.data.formats.freshstack import read_freshstack_queries
from nuggetbench.datasets.fastbook import read_benchmark
from nuggetbench.errors import FormatError, InputError
from nuggetbench.jsonl import iter_jsonl
from nuggetbench.llm.asking import ask
from nuggetbench.llm.client import ChatRequest, LLMClient
from nuggetbench.llm.jsonout import InvalidAnswer
from nuggetbench.llm.prompts import chat_request, load_prompt
from nuggetbench.progress import expect

__all__ = [
    "LABELS",
    "SCORES",
    "WINDOW",
    "AnswerNugget",
    "NuggetSet",
    "AnswersOutcome",
    "nugget_scores",
    "parse_labels",
    "assign_request",
    "read_nuggets",
    "read_answers",
    "assign_answers",
]

#: The assignment labels (nuggetizer's 3-grade assigner).
LABELS = ("support", "partial_support", "not_support")
#: The scores, in nuggetizer's names.
SCORES = ("vital_score", "strict_vital_score", "all_score", "strict_all_score")
#: Nuggets per request (nuggetizer's ``assigner_window_size``).
WINDOW = 10
ASSIGN_PROMPT = "assign"


@dataclass(frozen=True)
class AnswerNugget:
    """A nugget to look for in answers: its text and ``importance`` (``vital`` or ``okay``)."""

    text: str
    importance: str = "vital"


@dataclass(frozen=True)
class NuggetSet:
    """The nuggets of one question."""

    qid: str
    query: str
    nuggets: tuple[AnswerNugget, ...]


def nugget_scores(labels: Sequence[str], importances: Sequence[str]) -> dict[str, float]:
    """The four scores of one answer (see module docstring; nuggetizer's
    ``calculate_nugget_scores``). Labels other than ``support`` / ``partial_support`` (e.g.
    ``failed``) count as not supported."""
    vital = [lab for lab, imp in zip(labels, importances) if imp == "vital"]

    def full(ls):
        return sum(lab == "support" for lab in ls)

    def part(ls):
        return full(ls) + 0.5 * sum(lab == "partial_support" for lab in ls)

    return {
        "vital_score": part(vital) / len(vital) if vital else 0.0,
        "strict_vital_score": full(vital) / len(vital) if vital else 0.0,
        "all_score": part(labels) / len(labels) if labels else 0.0,
        "strict_all_score": full(labels) / len(labels) if labels else 0.0,
    }


def parse_labels(text: str, n: int) -> list[str]:
    """The *n* labels of an assignment reply: the last ``[...]`` list in it (code fences and text
    up to ``</think>`` ignored), read as JSON or a Python literal (nuggetizer uses
    ``ast.literal_eval``); labels lower-cased, spaces and hyphens made ``_``.

    Raises:
        InvalidAnswer: no list, a label not in :data:`LABELS`, or not exactly *n* labels.
    """
    if "</think>" in text:
        text = text.split("</think>")[-1]
    text = text.replace("```python", "").replace("```json", "").replace("```", "")
    lists = re.findall(r"\[[^\[\]]*\]", text, re.S)
    if not lists:
        raise InvalidAnswer(f"the reply holds no list of {n} labels")
    raw = lists[-1]
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            raise InvalidAnswer("the list of labels is neither JSON nor a Python list") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidAnswer("the labels must be a list of strings")
    labels = [re.sub(r"[\s\-]+", "_", v.strip().lower()) for v in value]
    bad = [v for v in labels if v not in LABELS]
    if bad:
        raise InvalidAnswer(f"unknown label {bad[0]!r}; use one of {', '.join(LABELS)}")
    if len(labels) != n:
        raise InvalidAnswer(f"{len(labels)} labels for {n} nuggets; give exactly one per nugget")
    return labels


def assign_request(question: str, answer: str, nuggets: Sequence[AnswerNugget]) -> ChatRequest:
    """The request labelling *nuggets* (one window) against *answer* (stage ``assign``)."""
    prompt = load_prompt(ASSIGN_PROMPT)
    values = {
        "question": " ".join(question.split()),
        "answer": answer.strip(),
        "count": str(len(nuggets)),
        "nuggets": "\n".join(f"{i}. {' '.join(n.text.split())}" for i, n in enumerate(nuggets, 1)),
    }
    return chat_request(prompt, values, stage="assign", temperature=0.0, max_tokens=400)


# --- reading ------------------------------------------------------------------------------
def _nuggetizer_rows(path: Path) -> dict[str, NuggetSet]:
    out: dict[str, NuggetSet] = {}
    for line, row in iter_jsonl(path):
        where = (path, line)
        if (
            not isinstance(row, dict)
            or "qid" not in row
            or not isinstance(row.get("nuggets"), list)
        ):
            raise FormatError(*where, "expected {'qid', 'query', 'nuggets': [...]}")
        nuggets = []
        for i, n in enumerate(row["nuggets"]):
            if not isinstance(n, dict) or not isinstance(n.get("text"), str):
                raise FormatError(*where, f"nugget {i} needs a 'text' string")
            imp = str(n.get("importance", "vital")).lower()
            if imp not in ("vital", "okay"):
                raise FormatError(*where, f"nugget {i} has importance {imp!r}; use vital or okay")
            nuggets.append(AnswerNugget(n["text"], imp))
        qid = str(row["qid"])
        if qid in out:
            raise FormatError(*where, f"question {qid!r} appears twice")
        out[qid] = NuggetSet(qid, str(row.get("query", "")), tuple(nuggets))
    return out


def read_nuggets(path: str | Path) -> dict[str, NuggetSet]:
    """The nuggets of each question, from nuggetizer's JSONL (``{"qid", "query", "nuggets":
    [{"text", "importance"}]}``), a FreshStack queries file (every nugget vital) or a
    fastbook-benchmark JSON file (its answer components, every one vital).

    Raises:
        InputError: no such file; FormatError: a malformed record (file and line named).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such nuggets file")
    with open(path, encoding="utf-8-sig") as fh:
        head = fh.read(1 << 16).lstrip()
    if head.startswith("[") or (head.startswith("{") and path.suffix == ".json"):
        queries, nuggets = read_benchmark(path)
        return {
            q: NuggetSet(
                q, queries[q], tuple(AnswerNugget(n.text) for n in nuggets if n.query_id == q)
            )
            for q in queries
        }
    first = json.loads(head.split("\n", 1)[0]) if head else {}
    if isinstance(first, dict) and "query_id" in first and "qid" not in first:
        queries, nq = read_freshstack_queries(path)
        return {
            q: NuggetSet(q, queries[q], tuple(AnswerNugget(n.text) for n in nq.nuggets_of(q)))
            for q in queries
        }
    return _nuggetizer_rows(path)


def _answer_text(value: Any, where: tuple) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(
        isinstance(a, dict) and isinstance(a.get("text"), str) for a in value
    ):
        return " ".join(a["text"] for a in value)
    raise FormatError(*where, "'answer' must be a string or a list of {'text', 'citations'}")


def read_answers(path: str | Path) -> dict[str, str]:
    """``{question id: answer text}`` of one system's file: TREC 2024 RAG records (``topic_id``,
    ``answer: [{"text", "citations"}]``) or ``{"query_id", "answer"}`` lines (a string or the same
    list).

    Raises:
        InputError: no such file; FormatError: a record without a question id or answer, or a
            question answered twice (file and line named).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such answers file")
    out: dict[str, str] = {}
    for line, row in iter_jsonl(path):
        where = (path, line)
        if not isinstance(row, dict):
            raise FormatError(*where, "expected a JSON object")
        qid = row.get("topic_id", row.get("query_id", row.get("qid")))
        if qid is None or "answer" not in row:
            raise FormatError(*where, "expected 'topic_id' (or 'query_id') and 'answer'")
        if str(qid) in out:
            raise FormatError(*where, f"question {qid!r} is answered twice")
        out[str(qid)] = _answer_text(row["answer"], where)
    return out


# --- assigning and scoring -----------------------------------------------------------------
@dataclass
class AnswersOutcome:
    """What ``answers`` computed.

    Attributes:
        results: ``{system: {score: mean over the questions}}``.
        per_query: ``{system: {score: {question id: value}}}``.
        windows: requests needed (one per window of at most 10 nuggets per answered question).
        sent: requests sent to the endpoint by this process (repairs included).
        failures: ``{system: windows whose every round failed}``.
        missing: ``{system: questions it did not answer}``.
        assignments: one row per (system, question, nugget).
        usage: the ledger's totals.
        files: ``{"assignments": path, "summary": path}`` of the files written (empty when
            none were).
        queries: the question subset scored (``QuerySubset.record``), ``None`` for all.
    """

    results: dict[str, dict[str, float]]
    per_query: dict[str, dict[str, dict[str, float]]]
    windows: int
    sent: int
    failures: dict[str, int]
    missing: dict[str, int]
    assignments: list[dict] = field(repr=False)
    usage: dict[str, Any] = field(default_factory=dict)
    comparison: Any = None
    files: dict[str, str] = field(default_factory=dict)
    average_over: str = "qrels"
    averaged: int | None = None
    queries: dict[str, Any] | None = None

    def averaging(self) -> str:
        """Which questions the means average, and how the unanswered ones count."""
        n = len(next(iter(self.per_query.values()))[SCORES[0]]) if self.per_query else 0
        lacks = {s: k for s, k in self.missing.items() if k}
        if self.average_over == "common":
            return (
                f"mean over the {self.averaged} questions every system answered; "
                f"{n - (self.averaged or 0)} left out"
            )
        listed = ", ".join(f"{s} {k}" for s, k in lacks.items())
        return f"mean over {n} questions" + (
            f"; unanswered, scored 0 (an empty answer): {listed}" if lacks else ""
        )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "results": self.results,
            "average_over": self.average_over,
            "averaging": self.averaging(),
            "windows": self.windows,
            "requests_sent": self.sent,
            "failures": self.failures,
            "missing": self.missing,
            "usage": self.usage,
        }
        if self.comparison is not None:
            out["comparison"] = self.comparison.to_dict()
        if self.files:
            out["files"] = self.files
        if self.queries is not None:
            out["queries"] = self.queries
        return out


def _ask(
    client: LLMClient, items: list[tuple], max_repairs: int, progress: Callable[[int], None] | None
) -> list[list[str] | None]:
    """Labels of each ``(request, n)`` item, re-asking bad replies; ``None`` after the repairs."""
    asked = ask(
        client,
        [req for req, _ in items],
        [partial(parse_labels, n=n) for _, n in items],
        max_repairs=max_repairs,
        instruction=[
            f"Reply with only a JSON list of exactly {n} labels (support, partial_support or "
            "not_support)."
            for _, n in items
        ],
        progress=progress,
        progress_on="sent",
    )
    return [a.value for a in asked]


def _score(
    systems: Mapping[str, Mapping[str, str]],
    nuggets: Mapping[str, Any],
    got: Mapping[tuple[str, str, int], list[str] | None],
    window: int,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, dict[str, float]]]]:
    """``(assignment rows, {system: {score: {query: value}}})`` from the windows' labels
    (*got*): a question a system did not answer is ``not_support``, a window whose answers
    stayed unusable ``failed``."""
    rows: list[dict[str, Any]] = []
    per_query: dict[str, dict[str, dict[str, float]]] = {
        s: {m: {} for m in SCORES} for s in systems
    }
    for s in systems:
        for q, ns in nuggets.items():
            labs: list[str] = []
            for start in range(0, len(ns.nuggets), window):
                n = len(ns.nuggets[start : start + window])
                if q not in systems[s]:
                    labs += ["not_support"] * n
                else:
                    labs += got[(s, q, start)] or ["failed"] * n
            for nug, lab in zip(ns.nuggets, labs):
                rows.append(
                    {
                        "system": s,
                        "qid": q,
                        "nugget": nug.text,
                        "importance": nug.importance,
                        "assignment": lab,
                    }
                )
            for m, v in nugget_scores(labs, [n.importance for n in ns.nuggets]).items():
                per_query[s][m][q] = v
    return rows, per_query


def assign_answers(
    nuggets: Mapping[str, NuggetSet],
    systems: Mapping[str, Mapping[str, str]],
    client: LLMClient,
    *,
    window: int = WINDOW,
    max_repairs: int = 2,
    progress: Callable[[int], None] | None = None,
) -> AnswersOutcome:
    """Label every nugget of every question against each system's answer and score the answers.

    Args:
        nuggets: ``{question id: NuggetSet}`` (the questions scored).
        systems: ``{system name: {question id: answer text}}``.
        client: the LLM client.
        window: nuggets per request (nuggetizer: 10).
        max_repairs: re-asks of a reply that is not a list of the right labels.
        progress: advanced once per first-round answer (a window of nuggets) as it arrives;
            told the number of windows first (:func:`nuggetbench.progress.expect`).

    Raises:
        InputError: no nuggets, no system, or a system answering none of the questions.
        LLMError / BudgetError: from the client (answers so far are cached).
    """
    if not nuggets:
        raise InputError("the nuggets file holds no question")
    if not systems:
        raise InputError("give at least one ANSWERS file")
    items, where = [], []
    missing = {s: 0 for s in systems}
    for s, answers in systems.items():
        if not set(answers) & set(nuggets):
            raise InputError(f"system {s!r} answers none of the questions of the nuggets file")
        for q, ns in nuggets.items():
            if q not in answers:
                missing[s] += 1
                continue
            for start in range(0, len(ns.nuggets), window):
                chunk = ns.nuggets[start : start + window]
                items.append((assign_request(ns.query, answers[q], chunk), len(chunk)))
                where.append((s, q, start))
    paid = client.ledger.paid()[0]
    expect(progress, len(items))
    labels = _ask(client, items, max_repairs, progress)
    got = {key: lab for key, lab in zip(where, labels)}
    failures = {s: sum(lab is None for (s2, _, _), lab in got.items() if s2 == s) for s in systems}
    rows, per_query = _score(systems, nuggets, got, window)
    results = {s: {m: sum(v.values()) / len(v) for m, v in per_query[s].items()} for s in systems}
    return AnswersOutcome(
        results=results,
        per_query=per_query,
        windows=len(items),
        sent=client.ledger.paid()[0] - paid,
        failures=failures,
        missing=missing,
        assignments=rows,
        usage={
            "model": client.settings.model,
            "prompt": load_prompt(ASSIGN_PROMPT).version,
            **client.ledger.totals(),
        },
    )
