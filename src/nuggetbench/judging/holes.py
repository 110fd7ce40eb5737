"""Fill the holes of runs with LLM judgments: ``nuggetbench judge DATASET RUN... --depth k``.

A *hole* is a document in the top ``k`` of a run's ranking for a query that the dataset's qrels do
not judge. Rankings are trec_eval's (score descending, doc id descending on ties:
:func:`nuggetbench.data.ranking.rank_order`, applied when a :class:`~nuggetbench.data.Run` is
built; the rank column of a TREC file is ignored). Each hole is judged once
(:func:`~.grading.judge_pairs`); the output folder gets

* ``qrels.txt``: TREC qrels (``query_id iteration doc_id grade``): every human judgment untouched
  (iteration ``0``), plus the model's grade of each hole, marked by the iteration :data:`LLM_MARK`
  (``llm``): ``q1 llm doc7 2``. trec_eval, pytrec_eval, ir_measures, ranx and nuggetbench read
  the iteration column and ignore it, so the file scores as plain qrels, while ``awk '$2 ==
  "llm"'`` (or ``!=``) separates the model's grades from the human ones. A human judgment always
  wins; a failed judgment is left out;
* ``judgments.jsonl``: one row per judged pair (``query_id``, ``doc_id``, ``grade``,
  ``human_grade``, ``reply``, ``model``, ``prompt``, ``attempts``, ``error`` when failed,
  ``reply_chars`` when the reply was cut at ``max_reply_chars``: ``reply`` then holds its
  beginning);
* ``judge.json``: the summary (holes, requests sent, failures, model grades added and their mark,
  Judged@k before and after per run, token usage and cost; the endpoint's key is never written).

The folder is locked for the whole judging and refused when it holds another kind of output
(:func:`nuggetbench._outfolder.writing`); the three files replace the old ones together.

Judged@k is ir_measures' judgment rate (the ``Judged`` family) under the ``trec_eval`` profile
(averaged over the queries of both the run and the qrels).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nuggetbench._atomic import atomic_write
from nuggetbench._outfolder import writing
from nuggetbench.data import Qrels, Run
from nuggetbench.data.formats.trec import write_qrels
from nuggetbench.datasets import Dataset
from nuggetbench.errors import InputError
from nuggetbench.jsonl import json_text
from nuggetbench.judging.grading import JUDGE_PROMPT, Judgment, judge_pairs
from nuggetbench.llm.client import LLMClient
from nuggetbench.llm.prompts import load_prompt
from nuggetbench.measures import score

__all__ = [
    "LLM_MARK",
    "JudgeOutcome",
    "text_lookups",
    "write_json",
    "find_holes",
    "judged_at",
    "merge_qrels",
    "judge_holes",
    "write_rows",
]


#: The iteration column of the model's grades in ``qrels.txt`` (the dataset's keep ``0``).
LLM_MARK = "llm"


def find_holes(qrels: Qrels, runs: Mapping[str, Run], depth: int) -> list[tuple[str, str]]:
    """The unjudged ``(query id, doc id)`` pairs in the top *depth* of each run, each once.

    Order: runs in the given order, queries in each run's (sorted) order, documents by rank;
    a pair already found in an earlier run is not repeated.

    Raises:
        InputError: *depth* < 1.
    """
    if depth < 1:
        raise InputError(f"--depth must be at least 1, got {depth}")
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for run in runs.values():
        for q in run.query_ids:
            q = str(q)
            judged = qrels.get(q, {})
            for d in run.doc_ids(q)[:depth]:
                pair = (q, str(d))
                if pair[1] not in judged and pair not in seen:
                    seen.add(pair)
                    out.append(pair)
    return out


def judged_at(qrels: Qrels, run: Run, depth: int) -> float:
    """Judged@*depth* of *run* (ir_measures' ``Judged@k``, profile ``trec_eval``), in [0, 1]."""
    return float(
        score(qrels, run, [f"Judged@{depth}"], profile="trec_eval").mean(f"Judged@{depth}")
    )


def merge_qrels(human: Qrels, judgments: Sequence[Judgment], *, name: str | None = None) -> Qrels:
    """*human* plus the model's grade of every judged pair it does not judge (human wins);
    failed judgments (``grade is None``) are left out."""
    data = human.to_dict()
    for j in judgments:
        if j.grade is None:
            continue
        data.setdefault(j.query_id, {}).setdefault(j.doc_id, int(j.grade))
    q = [qid for qid, docs in data.items() for _ in docs]
    d = [doc for docs in data.values() for doc in docs]
    g = [grade for docs in data.values() for grade in docs.values()]
    return Qrels(q, d, g, name=name)


def write_rows(path: Path, rows: Sequence[dict]) -> Path:
    """Write *rows* as JSON lines, atomically."""
    with atomic_write(path, "w") as fh:
        for row in rows:
            fh.write(json_text(row, ensure_ascii=False) + "\n")
    return path


def write_json(path: Path, obj: Any) -> Path:
    """Write *obj* as indented JSON, atomically; NaN and infinities as ``null``, noted
    (:func:`nuggetbench.jsonl.json_text`)."""
    with atomic_write(path, "w") as fh:
        fh.write(json_text(obj, note=True, indent=2, ensure_ascii=False) + "\n")
    return path


@dataclass
class JudgeOutcome:
    """What ``judge`` did.

    Attributes:
        depth: the ``k`` of the top k.
        holes: unjudged pairs found (each judged once).
        sent: requests sent to the endpoint by this process (0 when every answer was cached).
        failures: pairs whose every round failed (left out of ``qrels.txt``).
        judged_before, judged_after: ``{run name: Judged@k}`` under the human qrels and under
            the merged ones.
        usage: the ledger's totals (requests, tokens, cost).
        judgments: one per hole.
        files: the files written.
        llm_grades: the model's grades added to ``qrels.txt`` (marked :data:`LLM_MARK`).
        queries: the query subset judged (``Dataset.query_subset``), ``None`` for all.
    """

    depth: int
    holes: int
    sent: int
    failures: int
    judged_before: dict[str, float]
    judged_after: dict[str, float]
    usage: dict[str, Any]
    judgments: list[Judgment] = field(repr=False)
    files: dict[str, str] = field(default_factory=dict)
    llm_grades: int = 0
    queries: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        subset = {"queries": self.queries} if self.queries is not None else {}
        return {
            "depth": self.depth,
            "holes": self.holes,
            "requests_sent": self.sent,
            "failures": self.failures,
            "llm_grades": self.llm_grades,
            "llm_mark": LLM_MARK,
            "judged_before": self.judged_before,
            "judged_after": self.judged_after,
            "usage": self.usage,
            "files": self.files,
            **subset,
        }


def text_lookups(dataset: Dataset):
    if dataset.corpus is None or dataset.queries is None:
        raise InputError(
            f"{dataset.id}: judging needs the dataset's corpus and queries; give a dataset id or "
            "folder, not a qrels file"
        )
    corpus, queries = dataset.corpus, dataset.queries

    def doc_text(doc_id: str) -> str:
        try:
            return corpus.texts([doc_id])[0]
        except KeyError:
            raise InputError(
                f"{dataset.id}: a run retrieved document {doc_id!r}, which is not in the corpus; "
                "judge runs made on this dataset"
            ) from None

    def query_text(qid: str) -> str:
        if qid not in queries:
            raise InputError(f"{dataset.id}: a run has query {qid!r}, which the dataset lacks")
        return queries[qid]

    return query_text, doc_text


def judge_holes(
    dataset: Dataset,
    runs: Mapping[str, Run],
    depth: int,
    client: LLMClient,
    out_dir: str | Path,
    *,
    max_repairs: int = 2,
    max_words: int = 400,
    progress=None,
) -> JudgeOutcome:
    """Judge the holes of *runs* in their top *depth* and write ``out_dir`` (see module docstring).

    Args:
        dataset: the dataset (its qrels, corpus and queries).
        runs: ``{name: run}``.
        depth: top k inspected per query.
        client: the LLM client.
        out_dir: output folder (created).
        max_repairs: repair turns for an answer holding no grade.
        max_words: passages are cut after this many words.

    Returns:
        A :class:`JudgeOutcome`.

    Raises:
        InputError: no runs, a bad depth, a run document missing from the corpus.
        LLMError / BudgetError: from the client (answers so far are cached: run again to resume).
    """
    if not runs:
        raise InputError("judge: give at least one RUN file whose holes to fill")
    with writing(out_dir, "judge", "nuggetbench judge -o") as stage:  # refused before any request
        qrels = dataset.qrels
        holes = find_holes(qrels, runs, depth)
        query_text, doc_text = text_lookups(dataset)
        paid_before = client.ledger.paid()[0]
        judgments = judge_pairs(
            client,
            holes,
            query_text,
            doc_text,
            max_repairs=max_repairs,
            max_words=max_words,
            progress=progress,
        )
        merged = merge_qrels(qrels, judgments, name=f"{qrels.name or dataset.id}+llm")
        version = load_prompt(JUDGE_PROMPT).version
        model = client.settings.model
        marks = {
            (j.query_id, j.doc_id): LLM_MARK
            for j in judgments
            if j.grade is not None and j.doc_id not in qrels.get(j.query_id, {})
        }
        write_qrels(merged, stage / "qrels.txt", marks)
        write_rows(stage / "judgments.jsonl", [j.record(model, version) for j in judgments])
        outcome = JudgeOutcome(
            depth=depth,
            holes=len(holes),
            sent=client.ledger.paid()[0] - paid_before,
            failures=sum(j.grade is None for j in judgments),
            judged_before={n: judged_at(qrels, r, depth) for n, r in runs.items()},
            judged_after={n: judged_at(merged, r, depth) for n, r in runs.items()},
            usage={"model": model, "prompt": version, **client.ledger.totals()},
            judgments=judgments,
            llm_grades=len(marks),
            queries=dataset.query_subset,
        )
        out = Path(out_dir)
        outcome.files = {
            "qrels": str(out / "qrels.txt"),
            "judgments": str(out / "judgments.jsonl"),
            "summary": str(out / "judge.json"),
        }
        write_json(stage / "judge.json", outcome.to_dict())
    return outcome
