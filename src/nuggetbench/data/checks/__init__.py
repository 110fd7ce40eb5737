"""Evaluation-time trap checks: the mistakes that silently give wrong scores.

The sparse-retrieval evaluation recipe (BEIR, MIRACL, mMARCO) names these traps:

* **wrong split / wrong queries**: few or none of the evaluated queries have judgments;
* **ids that differ only by type or whitespace**: ``"1"`` vs ``"01"`` vs ``"1.0"``, ``" 3"``,
  ``"Q1"`` vs ``"q1"``: the same item on both sides, never matched;
* **a truncated corpus**: relevant judged documents are missing from the corpus (they can never
  be retrieved), or a subset kept them all (the task became easier than the published one);
* **document ids of another format** (``doc123`` vs ``123``): every measure is 0 with no other
  sign; warned when (almost) no retrieved document is judged and, with a known corpus, when
  retrieved ids are not in the corpus ("Document ID Type Mismatch: all metrics are 0");
* **an order the scores do not carry**: a TREC file's rank column contradicts its scores, or
  ranks documents that all have one score; trec_eval (and nuggetbench) rank by score, so such a
  system is not evaluated on its order. The arrival order of a dict, a frame or a file's lines
  carries no meaning and is never warned about.

Each check returns :class:`Finding` values and logs them (``logging``, warnings at WARNING);
:func:`check_run_against_qrels` runs them all and returns printable lines. Nothing here changes a
run or the scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nuggetbench._runtime import trim_heap
from nuggetbench.data.checks.coverage import (
    CORPUS_SAMPLE,
    FEW_JUDGED,
    check_corpus_coverage,
    check_judged_overlap,
    check_run_in_corpus,
)
from nuggetbench.data.checks.findings import SEVERITIES, Finding, unlogged
from nuggetbench.data.checks.ids import TINY_OVERLAP, check_id_formats, check_query_overlap
from nuggetbench.data.checks.ranking import check_run_sorted
from nuggetbench.data.corpus import Corpus
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.run import Run

__all__ = [
    "Finding",
    "unlogged",
    "SEVERITIES",
    "check_run_against_qrels",
    "check_findings",
    "check_query_overlap",
    "check_id_formats",
    "check_corpus_coverage",
    "check_judged_overlap",
    "check_run_in_corpus",
    "check_run_sorted",
    "TINY_OVERLAP",
    "FEW_JUDGED",
    "CORPUS_SAMPLE",
]


def check_findings(
    qrels: Qrels,
    run: Run,
    corpus: Corpus | None = None,
    *,
    metadata: Mapping[str, Any] | None = None,
    tiny: float = TINY_OVERLAP,
) -> list[Finding]:
    """Every check: query overlap, id formats, judged overlap, corpus coverage and retrieved ids
    in the corpus (when *corpus* is given), sortedness.

    Args:
        qrels: :class:`~nuggetbench.data.Qrels`.
        run: :class:`~nuggetbench.data.Run`.
        corpus: optional corpus the run was retrieved from.
        metadata: optional dataset metadata (for subset information).
        tiny: see :func:`check_query_overlap`.

    Returns:
        The findings, the overlap ``info`` first.
    """
    out = check_query_overlap(qrels, run, tiny=tiny)
    out += check_id_formats(qrels, run)
    trim_heap()  # each check's temporaries handed back before the next: see nuggetbench._runtime
    out += check_judged_overlap(qrels, run)
    trim_heap()
    if corpus is not None:
        out += check_corpus_coverage(qrels, corpus, metadata=metadata)
        out += check_run_in_corpus(run, corpus)
    out += check_run_sorted(run)
    return out


def check_run_against_qrels(
    qrels: Qrels,
    run: Run,
    corpus: Corpus | None = None,
    *,
    metadata: Mapping[str, Any] | None = None,
) -> list[str]:
    """The trap checks as printable lines (``[info] ...``, ``[warning] ...``); see :func:`check_findings`.

    The first line always gives the query overlap; the others are warnings. Each is also logged.
    """
    return [str(f) for f in check_findings(qrels, run, corpus, metadata=metadata)]
