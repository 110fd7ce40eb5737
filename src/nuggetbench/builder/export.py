"""Filtering and export in the FreshStack layout.

Filters (FreshStack's; the paper reports 11.8% and 34.2% of questions removed on average):

1. drop questions with no supported nugget (no pooled chunk supports any nugget), and questions
   whose nugget generation failed;
2. optionally (``drop_any_unsupported``, default on) drop questions with any nugget that no pooled
   chunk supports.

The benchmark folder then holds, written atomically:

* ``queries.jsonl``: ``{"query_id", "query_title", "query_text", "answer_text", "nuggets": [{"_id",
  "text", "relevant_corpus_ids", "non_relevant_corpus_ids"}]}`` per kept question (the field names of
  the ``freshstack/queries-oct-2024`` hub rows);
* ``corpus.jsonl``: ``{"_id", "title", "text"}`` per chunk (the hub's corpus fields);
* ``corpus_metadata.jsonl``: ``{"_id", "repo", "path", "start_byte", "end_byte", "commit", "url",
  "chunker", "tokens"}`` per chunk;
* ``manifest.json``: sources with commits, the plan, prompt versions, model, counts and cost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench.builder.questions import Question
from nuggetbench.data import Document
from nuggetbench.judging.answer_nuggets import NuggetResult
from nuggetbench.judging.support import JudgeResult


@dataclass(frozen=True)
class FilterOptions:
    """``drop_no_support`` (filter 1) and ``drop_any_unsupported`` (filter 2)."""

    drop_no_support: bool = True
    drop_any_unsupported: bool = True


def nugget_support(
    nuggets: NuggetResult, judgments: JudgeResult, qid: str
) -> list[tuple[str, str, list[str], list[str]]]:
    """``[(nugget_id, text, relevant doc ids, non-relevant doc ids)]`` of one question."""
    verdicts = judgments.verdicts.get(qid, {})
    out = []
    for nid, text in zip(nuggets.nugget_ids(qid), nuggets.nuggets.get(qid, [])):
        rel = [d for (n, d), (s, _) in verdicts.items() if n == nid and s]
        non = [d for (n, d), (s, _) in verdicts.items() if n == nid and not s]
        out.append((nid, text, rel, non))
    return out


def filter_questions(
    questions: Sequence[Question],
    nuggets: NuggetResult,
    judgments: JudgeResult,
    options: FilterOptions = FilterOptions(),
) -> tuple[list[Question], dict[str, Any]]:
    """Apply the filters in order; return the kept questions and how many each filter removed.

    The report holds ``questions``, ``no_nuggets``, ``no_supported_nugget``,
    ``any_unsupported_nugget``, ``kept``, and the removed shares (of the questions entering each
    filter) as ``share_no_supported`` / ``share_any_unsupported``.
    """
    report: dict[str, Any] = {
        "questions": len(questions),
        "no_nuggets": 0,
        "no_supported_nugget": 0,
        "any_unsupported_nugget": 0,
    }
    kept = []
    entering_1 = entering_2 = 0
    for q in questions:
        support = nugget_support(nuggets, judgments, q.question_id)
        if not support:
            report["no_nuggets"] += 1
            continue
        entering_1 += 1
        if options.drop_no_support and not any(rel for _, _, rel, _ in support):
            report["no_supported_nugget"] += 1
            continue
        entering_2 += 1
        if options.drop_any_unsupported and not all(rel for _, _, rel, _ in support):
            report["any_unsupported_nugget"] += 1
            continue
        kept.append(q)
    report["kept"] = len(kept)
    report["share_no_supported"] = (
        round(report["no_supported_nugget"] / entering_1, 4) if entering_1 else 0.0
    )
    report["share_any_unsupported"] = (
        round(report["any_unsupported_nugget"] / entering_2, 4) if entering_2 else 0.0
    )
    report["filters"] = {
        "drop_no_support": options.drop_no_support,
        "drop_any_unsupported": options.drop_any_unsupported,
    }
    return kept, report


def query_rows(
    questions: Iterable[Question], nuggets: NuggetResult, judgments: JudgeResult
) -> list[dict[str, Any]]:
    """The ``queries.jsonl`` rows of *questions* (see the module docstring)."""
    rows = []
    for q in questions:
        rows.append(
            {
                "query_id": q.question_id,
                "query_title": q.title,
                "query_text": q.body,
                "answer_text": q.answer,
                "nuggets": [
                    {
                        "_id": nid,
                        "text": text,
                        "relevant_corpus_ids": rel,
                        "non_relevant_corpus_ids": non,
                    }
                    for nid, text, rel, non in nugget_support(nuggets, judgments, q.question_id)
                ],
            }
        )
    return rows


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=False)


def write_benchmark(
    folder: str | Path,
    rows: Sequence[dict[str, Any]],
    corpus: Iterable[Document],
    manifest: dict[str, Any],
) -> dict[str, Path]:
    """Write ``queries.jsonl``, ``corpus.jsonl``, ``corpus_metadata.jsonl`` and ``manifest.json``
    into *folder* (each file atomically; the manifest last). Returns the paths."""
    folder = Path(folder)
    paths = {
        name: folder / name
        for name in ("queries.jsonl", "corpus.jsonl", "corpus_metadata.jsonl", "manifest.json")
    }
    with atomic_write(paths["queries.jsonl"]) as fh:
        for row in rows:
            fh.write(_dump(row) + "\n")
    n_docs = 0
    with (
        atomic_write(paths["corpus.jsonl"]) as fc,
        atomic_write(paths["corpus_metadata.jsonl"]) as fm,
    ):
        for doc in corpus:
            fc.write(_dump({"_id": doc.doc_id, "title": doc.title, "text": doc.text}) + "\n")
            meta = {
                k: doc.metadata.get(k)
                for k in (
                    "repo",
                    "path",
                    "start_byte",
                    "end_byte",
                    "commit",
                    "url",
                    "chunker",
                    "tokens",
                )
            }
            fm.write(_dump({"_id": doc.doc_id, **meta}) + "\n")
            n_docs += 1
    manifest = {
        **manifest,
        "files": {
            "queries": "queries.jsonl",
            "corpus": "corpus.jsonl",
            "corpus_metadata": "corpus_metadata.jsonl",
        },
        "exported": {
            "queries": len(rows),
            "nuggets": sum(len(r["nuggets"]) for r in rows),
            "corpus": n_docs,
        },
    }
    with atomic_write(paths["manifest.json"]) as fh:
        fh.write(json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n")
    return paths


__all__ = ["FilterOptions", "filter_questions", "query_rows", "write_benchmark", "nugget_support"]
