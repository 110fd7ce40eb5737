"""Nugget generation: the atomic facts of each accepted answer, asked of an LLM.

The prompt (``prompts/nuggets.v1.txt``) is FreshStack's "grading notes" style: the question and its
accepted answer, and a request for the facts a correct answer must contain, as JSON
(:data:`~.jsonout.NUGGETS_SCHEMA`). Answers that are not valid JSON are re-asked in the same
conversation (:func:`~.asking.ask_validated`); a question whose answer stays invalid gets no nuggets
and is reported. Temperature 0.1 by default (the paper's setting is not stated; low for stability).
Nugget ids are ``<question id>_<i>`` (0-based, in the model's order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from nuggetbench.llm.asking import ask_validated
from nuggetbench.llm.client import ChatRequest, LLMClient
from nuggetbench.llm.jsonout import validate_nuggets
from nuggetbench.llm.prompts import chat_request, load_prompt, sampling

STAGE = "nuggets"


class AnsweredQuestion(Protocol):
    """What nuggets are asked from: a question with its accepted answer (the builder's
    :class:`~nuggetbench.builder.screening.Question` is one)."""

    question_id: str
    title: str
    body: str
    answer: str


@dataclass(frozen=True)
class NuggetOptions:
    """``max_nuggets`` per question, sampling ``temperature`` and ``max_tokens``, prompt version,
    and repair rounds for invalid answers."""

    max_nuggets: int = 10
    temperature: float = 0.1
    max_tokens: int = 1024
    prompt_version: str = "v1"
    max_repairs: int = 2


@dataclass
class NuggetResult:
    """Nuggets per question (``{qid: [text, ...]}``) and the questions whose answers stayed invalid."""

    nuggets: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def nugget_ids(self, qid: str) -> list[str]:
        return [f"{qid}_{i}" for i in range(len(self.nuggets.get(qid, [])))]

    def as_rows(self) -> list[dict[str, Any]]:
        rows = [
            {"query_id": q, "nuggets": [{"_id": f"{q}_{i}", "text": t} for i, t in enumerate(ns)]}
            for q, ns in self.nuggets.items()
        ]
        rows += [{"query_id": q, "nuggets": [], "error": e} for q, e in self.failed.items()]
        return rows

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]]) -> NuggetResult:
        out = cls()
        for row in rows:
            if row.get("error"):
                out.failed[row["query_id"]] = row["error"]
            else:
                out.nuggets[row["query_id"]] = [n["text"] for n in row["nuggets"]]
        return out


def nugget_request(question: AnsweredQuestion, options: NuggetOptions) -> ChatRequest:
    """The chat request asking for one question's nuggets."""
    values = {
        "question_title": question.title,
        "question_body": question.body,
        "answer": question.answer,
        "max_nuggets": str(options.max_nuggets),
    }
    return chat_request(load_prompt(STAGE, options.prompt_version), values, **sampling(options))


def generate_nuggets(
    client: LLMClient,
    questions: Sequence[AnsweredQuestion],
    options: NuggetOptions = NuggetOptions(),
    *,
    progress: Callable[[int], None] | None = None,
) -> NuggetResult:
    """Ask the model for the nuggets of every question.

    Returns:
        :class:`NuggetResult`, questions in input order.

    Raises:
        LLMError / BudgetError: from the client (answers so far are cached).
    """
    requests = [nugget_request(q, options) for q in questions]
    values, errors = ask_validated(
        client,
        requests,
        partial(validate_nuggets, max_nuggets=options.max_nuggets),
        max_repairs=options.max_repairs,
        expected='{"nuggets": ["fact", ...]}',
        progress=progress,
    )
    result = NuggetResult()
    for q, value, error in zip(questions, values, errors):
        if value is None:
            result.failed[q.question_id] = error or "no answer"
        else:
            result.nuggets[q.question_id] = value
    return result


__all__ = ["NuggetOptions", "NuggetResult", "generate_nuggets", "nugget_request", "STAGE"]
