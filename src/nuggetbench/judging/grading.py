"""Graded relevance judgments by an LLM on UMBRELA's 0-3 scale, through the LLM layer.

UMBRELA (Upadhyay et al., 2024, "UMBRELA: UMbrela is the (Open-Source Reproduction of the) Bing
RELevance Assessor", arXiv 2406.06519; castorini/umbrela) asks the model for a grade from 0 to 3
with a final line ``##final score: G``. Our prompt (``llm/templates/umbrela.v1.txt``) is written in
our own words with the same four levels and the same final line.

Parsing (:func:`parse_final_score`) is at least as tolerant as UMBRELA's
(``umbrela/utils/common_utils.py: parse_fewshot_response``): the *last* ``##final score: G`` line
first, then UMBRELA's fallback patterns (``"final score": G``, ``"score": G``, ``relevance category
G``, a grade alone on a line...). Unlike UMBRELA, an answer holding no grade is never read as 0:
it is re-asked (a repair turn naming the problem) up to ``max_repairs`` times, then recorded as a
failure (``grade = None``, ``error`` set) and left out of the qrels.

Every request goes through :class:`~nuggetbench.llm.client.LLMClient`: answers cached by content
(a pair is never sent twice; a re-run sends 0 requests; a killed run resumes), retries on 429 /
5xx / timeouts, bounded concurrency, token usage and cost in its ledger. The answers of a pair
whose every round failed are removed from the cache (as :func:`~nuggetbench.llm.asking.
ask_validated` does), so a later run asks again rather than replaying an unusable answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nuggetbench.llm.asking import ask
from nuggetbench.llm.client import ChatRequest, LLMClient
from nuggetbench.llm.jsonout import InvalidAnswer
from nuggetbench.llm.prompts import chat_request, load_prompt
from nuggetbench.progress import expect

__all__ = [
    "GRADES",
    "JUDGE_PROMPT",
    "Judgment",
    "judge_pairs",
    "judge_request",
    "parse_final_score",
    "cut_words",
]

#: UMBRELA's scale.
GRADES = (0, 1, 2, 3)
#: The prompt file (``llm/templates/umbrela.v1.txt``).
JUDGE_PROMPT = "umbrela"

_FINAL = re.compile(r"#+\s*final\s*score\s*[:=]?\s*\**\s*([0-3])\b", re.I)
# UMBRELA's fallbacks, in its order (applied to the lower-cased answer), each anchored: a key
# starts a word and the grade ends one, so "step two: 3 facts" or a numbered list "1. ..." is not
# a grade; such an answer is re-asked
_W = r"(?<![a-z0-9_])"
_FALLBACKS = [
    r'"o": ([0-3])\b',
    r"'o': ([0-3])\b",
    _W + r"o: ([0-3])\b(?![.,]?\s*[a-z0-9])",
    r'"overall_score": ([0-3])\b',
    r'"overall": ([0-3])\b',
    r'"overall score": ([0-3])\b',
    r'"final score": ([0-3])\b',
    r'"final_score": ([0-3])\b',
    r'"score": ([0-3])\b',
    r'"o_score": ([0-3])\b',
    _W + r"relevance category: ?([0-3])\b",
    _W + r"relevance category is ([0-3])\b",
    r"(?:^|\n)[ \t*]*([0-3])[ \t*.]*(?:\n|$)",  # a grade alone on its line
    _W + r"it falls into the category ([0-3])\b",
    _W + r"category ([0-3])\b(?!\s*(?:and|or|to|-)\s*\d)",
    _W + r"relevance category for this passage would be ([0-3])\b",
    _W + r"the relevance category would be ([0-3])\b",
    _W + r"final score:? ?([0-3])\b",
]


def parse_final_score(text: str) -> int:
    """The grade (0-3) of a judge's answer.

    The last ``##final score: G`` (any number of ``#``, any case, optional bold marks), else the
    first of UMBRELA's fallback patterns that matches; text up to a closing ``</think>`` is
    ignored.

    Raises:
        InvalidAnswer: no grade from 0 to 3 can be read (never read as 0).
    """
    if "</think>" in text:
        text = text.split("</think>")[-1]
    finals = _FINAL.findall(text)
    if finals:
        return int(finals[-1])
    low = text.strip().lower()
    if re.fullmatch(r"[0-3]", low):
        return int(low)
    for pattern in _FALLBACKS:
        m = re.search(pattern, low, re.M | re.S)
        if m:
            return int(m.group(1))
    raise InvalidAnswer("the reply has no final line '##final score: G' with G from 0 to 3")


def cut_words(text: str, max_words: int) -> str:
    """*text* with runs of white space made single spaces, cut after *max_words* words."""
    words = text.split()
    return " ".join(words[:max_words])


def judge_request(
    query: str, passage: str, *, temperature: float = 0.0, max_tokens: int = 512
) -> ChatRequest:
    """The request asking for the 0-3 grade of *passage* for *query* (stage ``judge``)."""
    prompt = load_prompt(JUDGE_PROMPT)
    values = {"query": " ".join(query.split()), "passage": passage}
    return chat_request(
        prompt, values, stage="judge", temperature=temperature, max_tokens=max_tokens
    )


@dataclass(frozen=True)
class Judgment:
    """One judged (query, document) pair.

    Attributes:
        query_id, doc_id: the pair.
        grade: the model's grade 0-3, ``None`` when every round failed.
        human_grade: the human judgment, when one exists.
        reply: the raw text of the last answer (a reply cut at ``max_reply_chars``: its first
            characters and a note of its length).
        attempts: requests made for the pair (1 + repair turns).
        error: why the last answer could not be used (``None`` when parsed).
        cached: the first answer came from the cache.
        reply_chars: the last answer's full length when it was cut, else ``None``.
    """

    query_id: str
    doc_id: str
    grade: int | None
    human_grade: int | None
    reply: str
    attempts: int
    error: str | None = None
    cached: bool = False
    reply_chars: int | None = None

    def record(self, model: str, prompt_version: str) -> dict:
        """The row written to ``judgments.jsonl``."""
        row = {
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "grade": self.grade,
            "human_grade": self.human_grade,
            "reply": self.reply,
            "model": model,
            "prompt": prompt_version,
            "attempts": self.attempts,
        }
        if self.error is not None:
            row["error"] = self.error
        if self.reply_chars is not None:
            row["reply_chars"] = self.reply_chars
        return row


#: The repair turn's request after an answer holding no grade.
REPAIR_INSTRUCTION = "End your reply with one line '##final score: G' where G is 0, 1, 2 or 3."


def judge_pairs(
    client: LLMClient,
    pairs: Sequence[tuple[str, str]],
    query_text: Callable[[str], str],
    doc_text: Callable[[str], str],
    *,
    human: Callable[[str, str], int | None] = lambda q, d: None,
    max_repairs: int = 2,
    max_words: int = 400,
    progress: Callable[[int], None] | None = None,
) -> list[Judgment]:
    """Grade every (query id, doc id) pair of *pairs* on the 0-3 scale, one request per pair.

    Args:
        client: the LLM client (cache, retries, concurrency, usage).
        pairs: the pairs to judge, in order; repeated pairs are sent once.
        query_text: ``query id -> text``; doc_text: ``doc id -> text`` (cut to *max_words*).
        human: ``(query id, doc id) -> human grade or None`` for the records.
        max_repairs: repair turns after an answer holding no grade.
        progress: advanced once per first-round answer as it arrives; told the number of
            pairs first (:func:`nuggetbench.progress.expect`).

    Returns:
        One :class:`Judgment` per pair, in the order of *pairs*.

    Raises:
        LLMError / BudgetError: from the client (answers so far are cached);
        KeyError: a document or query is unknown.
    """
    requests = [judge_request(query_text(q), cut_words(doc_text(d), max_words)) for q, d in pairs]
    expect(progress, len(requests))
    asked = ask(
        client,
        requests,
        parse_final_score,
        max_repairs=max_repairs,
        instruction=REPAIR_INSTRUCTION,
        progress=progress,
        progress_on="sent",
    )
    return [
        Judgment(q, d, a.value, human(q, d), a.reply, a.attempts, a.error, a.cached, a.reply_chars)
        for (q, d), a in zip(pairs, asked)
    ]
