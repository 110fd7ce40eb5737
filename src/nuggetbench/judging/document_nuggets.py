"""Nuggets from judged documents: ``nuggetbench nuggets DATASET --model M -o nuggets.jsonl``.

AutoNuggetizer's first two steps (Pradeep et al., 2024, arXiv 2411.09607; castorini/nuggetizer
``models/nuggetizer.py: create``), so that any dataset with graded qrels (BEIR, BIRCO...) gets
nuggets that ``nuggetbench answers`` can score answers against:

1. **Creation.** A query's relevant documents (grade >= ``rel_level``, highest grade first, then
   doc id) go to the model in windows of ``window`` (10) documents; each request shows the nuggets
   so far and asks for the updated list (``llm/templates/create.v1.txt``, our words), which
   replaces it, cut to ``max_nuggets`` (30). The windows of one query are sequential; the same
   step of every query is sent together.
2. **Importance.** The final nuggets go to the model in windows of 10 and each gets ``vital`` or
   ``okay`` (``importance.v1.txt``).

Answers are JSON, validated and re-asked in the same conversation
(:func:`~nuggetbench.llm.asking.ask_validated`, as the builder's nugget stage does). Unlike
nuggetizer (which keeps the previous list when a window keeps failing, and marks unscored nuggets
``okay``), a query whose creation or rating fails after the repairs is reported in ``failed`` and
gets no row: nothing is filled in silently. Every call is cached, resumable and costed by the LLM
layer. Output rows are nuggetizer's JSONL: ``{"qid", "query", "nuggets": [{"text",
"importance"}]}``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from nuggetbench.datasets import Dataset
from nuggetbench.errors import InputError
from nuggetbench.judging.grading import cut_words
from nuggetbench.judging.holes import text_lookups, write_rows
from nuggetbench.llm.asking import ask_validated
from nuggetbench.llm.client import ChatRequest, LLMClient
from nuggetbench.llm.jsonout import InvalidAnswer, extract_json, validate_nuggets
from nuggetbench.llm.prompts import chat_request, load_prompt
from nuggetbench.progress import expect

__all__ = ["NuggetCreation", "create_nuggets", "relevant_documents", "validate_importance"]


def relevant_documents(qrels_of_query: dict[str, int], rel_level: int) -> list[str]:
    """The documents of grade >= *rel_level*, highest grade first, then by doc id."""
    docs = [(d, g) for d, g in qrels_of_query.items() if g >= rel_level]
    return [d for d, _ in sorted(docs, key=lambda t: (-t[1], t[0]))]


def validate_importance(text: str, *, n: int) -> list[str]:
    """The *n* labels (``vital`` / ``okay``) of an importance answer ``{"importance": [...]}``.

    Raises:
        InvalidAnswer: no such object, a label other than vital/okay, or not *n* labels.
    """
    items = extract_json(text, "importance")["importance"]
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise InvalidAnswer("'importance' must be a list of strings")
    labels = [v.strip().lower() for v in items]
    if any(v not in ("vital", "okay") for v in labels):
        raise InvalidAnswer("every label must be 'vital' or 'okay'")
    if len(labels) != n:
        raise InvalidAnswer(f"{len(labels)} labels for {n} nuggets; give exactly one per nugget")
    return labels


def _request(name: str, **values: str) -> ChatRequest:
    return chat_request(load_prompt(name), values, stage=name, temperature=0.0, max_tokens=2048)


@dataclass
class NuggetCreation:
    """Nuggets per query (``rows``, nuggetizer's JSONL), the queries that failed and why, the
    requests (creation windows, importance windows) and the ledger's usage."""

    rows: list[dict[str, Any]]
    failed: dict[str, str]
    creation_windows: int
    importance_windows: int
    sent: int
    usage: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries": len(self.rows),
            "nuggets": sum(len(r["nuggets"]) for r in self.rows),
            "vital": sum(n["importance"] == "vital" for r in self.rows for n in r["nuggets"]),
            "failed": self.failed,
            "creation_windows": self.creation_windows,
            "importance_windows": self.importance_windows,
            "requests_sent": self.sent,
            "usage": self.usage,
        }


def _create(client, plans, query_text, doc_text, *, max_nuggets, max_words, max_repairs, progress):
    current: dict[str, list[str]] = {q: [] for q in plans}
    failed: dict[str, str] = {}
    windows = 0
    for step in range(max((len(p) for p in plans.values()), default=0)):
        todo = [q for q in plans if step < len(plans[q]) and q not in failed]
        requests = [
            _request(
                "create",
                query=" ".join(query_text(q).split()),
                nuggets="\n".join(f"- {n}" for n in current[q]) or "(none yet)",
                documents="\n\n".join(
                    f"[{i}] {cut_words(doc_text(d), max_words)}"
                    for i, d in enumerate(plans[q][step], 1)
                ),
                max_nuggets=str(max_nuggets),
            )
            for q in todo
        ]
        windows += len(requests)
        values, errors = ask_validated(
            client,
            requests,
            partial(validate_nuggets, max_nuggets=max_nuggets),
            max_repairs=max_repairs,
            expected='{"nuggets": ["fact", ...]}',
            progress=progress,
        )
        for q, value, error in zip(todo, values, errors):
            if value is None:
                failed[q] = f"creation window {step + 1}: {error}"
                if progress is not None and len(plans[q]) > step + 1:
                    progress(len(plans[q]) - step - 1)  # its later windows are never sent
            else:
                current[q] = value
    return current, failed, windows


def create_nuggets(
    dataset: Dataset,
    client: LLMClient,
    *,
    rel_level: int = 1,
    window: int = 10,
    max_nuggets: int = 30,
    max_docs: int | None = None,
    max_words: int = 400,
    max_repairs: int = 2,
    queries: Sequence[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> NuggetCreation:
    """Create and rate the nuggets of every query of *dataset* with relevant documents.

    Args:
        dataset: qrels, corpus and queries.
        client: the LLM client.
        rel_level: the grade a document needs to be used.
        window: documents per creation request and nuggets per importance request (10).
        max_nuggets: nuggets kept per query (30).
        max_docs: relevant documents used per query (default all).
        max_words: documents are cut after this many words.
        queries: only these query ids (default every judged query).
        progress: advanced as each window's first answer arrives (creation, then importance);
            told the number of creation windows first, then of importance windows once they are
            known (:func:`nuggetbench.progress.expect`).

    Raises:
        InputError: no query has a relevant document; LLMError / BudgetError: from the client.
    """
    query_text, doc_text = text_lookups(dataset)
    qids = [str(q) for q in (queries if queries is not None else dataset.qrels)]
    plans = {}
    for q in qids:
        docs = relevant_documents(dataset.qrels.get(q, {}), rel_level)[:max_docs]
        if docs:
            plans[q] = [docs[i : i + window] for i in range(0, len(docs), window)]
    if not plans:
        raise InputError(f"{dataset.id}: no query has a document of grade >= {rel_level}")
    paid = client.ledger.paid()[0]
    expect(progress, sum(len(p) for p in plans.values()))
    current, failed, n_create = _create(
        client,
        plans,
        query_text,
        doc_text,
        max_nuggets=max_nuggets,
        max_words=max_words,
        max_repairs=max_repairs,
        progress=progress,
    )
    items = [(q, s) for q in plans if q not in failed for s in range(0, len(current[q]), window)]
    expect(progress, len(items))
    labels = _importance(client, items, current, query_text, failed, window, max_repairs, progress)
    rows = [
        {
            "qid": q,
            "query": query_text(q),
            "nuggets": [
                {"text": t, "importance": i} for t, i in zip(current[q], labels.get(q, []))
            ],
        }
        for q in plans
        if q not in failed
    ]
    return NuggetCreation(
        rows=rows,
        failed=failed,
        creation_windows=n_create,
        importance_windows=len(items),
        sent=client.ledger.paid()[0] - paid,
        usage={"model": client.settings.model, **client.ledger.totals()},
    )


def _importance(
    client: LLMClient,
    items: list[tuple[str, int]],
    current: dict[str, list[str]],
    query_text: Any,
    failed: dict[str, str],
    window: int,
    max_repairs: int,
    progress: Callable[[int], None] | None = None,
) -> dict[str, list[str]]:
    """AutoNuggetizer's vital/okay labels of each query's nuggets, window by window (*items*:
    ``(query, first nugget)``); a query whose labels stay unusable is added to *failed*."""
    requests = [
        _request(
            "importance",
            query=" ".join(query_text(q).split()),
            count=str(len(current[q][s : s + window])),
            nuggets="\n".join(f"{i}. {n}" for i, n in enumerate(current[q][s : s + window], 1)),
        )
        for q, s in items
    ]
    labels: dict[str, list[str]] = {q: [] for q, _ in items}
    values: list[list[str] | None] = [None] * len(items)
    errors: list[str | None] = [None] * len(items)
    sizes = [len(current[q][s : s + window]) for q, s in items]
    for n in sorted(set(sizes)):  # one batch per window size (the validator checks the count)
        idx = [i for i, size in enumerate(sizes) if size == n]
        got, why = ask_validated(
            client,
            [requests[i] for i in idx],
            partial(validate_importance, n=n),
            max_repairs=max_repairs,
            expected='{"importance": ["vital", "okay", ...]}',
            progress=progress,
        )
        for i, v, e in zip(idx, got, why):
            values[i], errors[i] = v, e
    for (q, _), value, error in zip(items, values, errors):
        if value is None:
            failed.setdefault(q, f"importance: {error}")
        else:
            labels[q] += value
    return labels


def create_nuggets_file(
    dataset: Dataset, client: LLMClient, out: str | Path, **kwargs: Any
) -> NuggetCreation:
    """:func:`create_nuggets`, its rows written to *out* (JSONL, atomically)."""
    result = create_nuggets(dataset, client, **kwargs)
    write_rows(Path(out), result.rows)
    return result
