"""``Dataset``: a corpus, queries and judgments, with the evaluation policy they come with.

A dataset declares its policies instead of applying them silently: which measures and profile it
is scored with by default, whether each query is restricted to candidate documents
(``doc_filter``), and whether a retrieved document whose id equals the query id is dropped from
runs (``remove_self_hits``; BEIR does it for ArguAna and Quora, where queries are themselves
corpus documents).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np

from nuggetbench.data import Corpus, Qrels, Queries, Run

log = logging.getLogger(__name__)


@dataclass
class Dataset:
    """One evaluation dataset, as returned by :func:`nuggetbench.datasets.load_dataset`.

    Attributes:
        id: the registry id (``beir/scifact``) or the folder path it was loaded from.
        corpus: ``doc_id -> Document``.
        queries: ``query_id -> text`` (restricted to the judged queries of the split).
        qrels: the judgments of the split.
        split: the split name (``test``, ``dev``...) or ``None`` when the dataset has one.
        default_measures: measure strings scored when none are asked for
            (ir_measures spelling, e.g. ``["nDCG@10", "R@100"]``).
        default_profile: the evaluation profile name (``"trec_eval -c"``).
        doc_filter: optional ``{query_id: collection of doc_ids}``: each listed query may only
            retrieve among its candidates (BIRCO pools, fastbook chapters); queries not listed
            are unrestricted. Pass it to ``Index.search(..., doc_filter=...)``.
        remove_self_hits: when true, :meth:`postprocess_run` drops every retrieved document
            whose id equals the query id (BEIR's policy for ArguAna and Quora).
        objective: an optional task instruction (BIRCO's objectives), ``None`` when none.
        metadata: provenance (source folder, download URL, checksums, notes).
        notes: lines to show people with the results (fastbook's chunking ceiling).
        options: the loader options it was loaded with (``{"chunker": "paragraphs"}``; those
            given to :func:`~nuggetbench.datasets.load_dataset`, typed; empty for defaults).
            ``nuggetbench run`` records them, so its output folder can be scored and reported
            on the same data again.
    """

    id: str
    corpus: Corpus
    queries: Queries
    qrels: Qrels
    split: str | None
    default_measures: list[str]
    default_profile: str = "trec_eval -c"
    doc_filter: Mapping[str, Collection[str]] | None = None
    remove_self_hits: bool = False
    objective: str | None = None
    metadata: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    options: dict = field(default_factory=dict)

    def fingerprint(self) -> str:
        """SHA-256 (16 hex chars) of the corpus, queries and qrels fingerprints (and the split)."""
        h = hashlib.sha256()
        for part in (
            self.corpus.fingerprint(),
            self.queries.fingerprint(),
            self.qrels.fingerprint(),
            self.split or "",
        ):
            h.update(part.encode() + b"\x1f")
        return h.hexdigest()[:16]

    def postprocess_run(self, run: Run) -> Run:
        """Apply the dataset's declared run policies (today: self-hit removal) to *run*.

        Returns the run unchanged when no policy applies; otherwise a new run whose metadata
        records ``self_hits_removed`` (the number of entries dropped).
        """
        if not self.remove_self_hits:
            return run
        return remove_self_hits(run)

    def __repr__(self) -> str:
        split = f" split={self.split}" if self.split else ""
        return (
            f"<Dataset {self.id}{split}: {len(self.corpus)} documents, {len(self.queries)} queries, "
            f"{self.qrels.n_judgments} judgments>"
        )


def remove_self_hits(run: Run) -> Run:
    """Drop every entry whose doc id equals its query id (BEIR's ``ignore_identical_ids``).

    Args:
        run: any run.

    Returns:
        A new run without those entries (the order of the others is kept), whose metadata holds
        ``self_hits_removed``: the number of entries dropped (added to any earlier count).
        Queries left empty are kept, with zero entries.
    """
    qids, _, docids, _ = run.arrays()
    entry_q = np.repeat(qids, run.lengths())
    self_hit = entry_q == docids if len(docids) else np.zeros(0, dtype=bool)
    n = int(np.count_nonzero(self_hit))
    previous = int(run.metadata.get("self_hits_removed", 0))
    kept = run.filter_entries(~self_hit) if n else run
    if n:
        log.info("removed %d self hits (doc id == query id) from run %s", n, run.name or "")
    return kept.with_name(run.name, {**run.metadata, "self_hits_removed": previous + n})
