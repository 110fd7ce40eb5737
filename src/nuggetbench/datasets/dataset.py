"""``Dataset``: a corpus, queries and judgments, with the evaluation policy they come with.

A dataset declares its policies instead of applying them silently: which measures and profile it
is scored with by default, whether each query is restricted to candidate documents
(``doc_filter``), and whether a retrieved document whose id equals the query id is dropped from
runs (``remove_self_hits``; BEIR does it for ArguAna and Quora, where queries are themselves
corpus documents).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nuggetbench.data import Corpus, Qrels, Queries, Run
from nuggetbench.data.subset import QuerySubset

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
        query_subset: ``None`` for every query of the split, else the record of the subset
            kept (:meth:`subset`; ``QuerySubset.record``: how it was chosen and the ids), which
            ``nuggetbench run`` saves as ``provenance["queries"]``.
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
    query_subset: dict[str, Any] | None = None

    def subset(self, subset: QuerySubset | None) -> Dataset:
        """The dataset restricted to the queries *subset* chooses among its queries (in their
        order): its queries, qrels (and their nuggets) and candidate pools; the corpus is the
        same. ``None`` returns the dataset itself. Subsets do not nest: a subset of a subset
        chooses among the queries kept, and records the dataset's whole query count.

        Raises:
            InputError: ids that are not queries of this dataset (named), or more queries asked
                for than it has.
        """
        if subset is None:
            return self
        split = f" (split {self.split})" if self.split else ""
        chosen = subset.select(list(self.queries), what=f"{self.id}{split}")
        of = (self.query_subset or {}).get("of") or len(self.queries)
        kept = set(chosen)
        pools = self.doc_filter
        return dataclasses.replace(
            self,
            queries=self.queries.subset(chosen),
            qrels=restrict_qrels(self.qrels, chosen),
            doc_filter={q: d for q, d in pools.items() if q in kept} if pools else pools,
            notes=list(self.notes),
            metadata=dict(self.metadata),
            options=dict(self.options),
            query_subset=subset.record(chosen, of),
        )

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


def restrict_qrels(qrels: Any, query_ids: Collection[str]) -> Any:
    """*qrels* (document qrels, with their nuggets, or nugget qrels) restricted to *query_ids*."""
    kept = qrels.filter_queries(query_ids)
    nuggets = getattr(kept, "nuggets", None)
    if nuggets is not None and nuggets is not kept:
        kept.nuggets = nuggets.filter_queries(query_ids)
    return kept


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
