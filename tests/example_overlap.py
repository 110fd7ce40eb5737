"""A retriever added the way docs/contributing.md shows: this module plus one registry line
(``register_retriever("overlap", "example_overlap:TermOverlap")``).

Term overlap: a document's score is the number of distinct query terms it contains (white-space
tokens, optionally lower-cased); documents sharing no term are not returned, ties go by the run's
ranking rule (doc id descending).
"""

from __future__ import annotations

from dataclasses import dataclass

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.retrieval import Composable, check_k
from nuggetbench.spec import Options, option


@dataclass(frozen=True, kw_only=True)
class OverlapOptions(Options):
    WHERE = "overlap"

    lowercase: bool = option(True, "compare terms case-insensitively")
    min_terms: int = option(1, "shared query terms a document needs to be returned", minimum=1)


class TermOverlap(Composable):
    """Score = distinct query terms in the document (spec ``overlap[:lowercase=false]``)."""

    OPTIONS = OverlapOptions

    def __init__(self, options: OverlapOptions | None = None, /, **kwargs):
        self.options = options if options is not None else OverlapOptions(**kwargs)
        changed = self.options.changed()
        self.name = "overlap" + (
            ":" + ",".join(f"{k}={v}" for k, v in changed.items()) if changed else ""
        )
        self.params = self.options.as_dict()  # what the run cache keys on

    def terms(self, text: str) -> set[str]:
        return set((text.lower() if self.options.lowercase else text).split())

    def index(self, corpus: Corpus, *, show_progress: bool = False) -> OverlapIndex:
        docs = {d.doc_id: self.terms(d.full_text) for d in corpus.iter_documents()}
        return OverlapIndex(self, docs)


class OverlapIndex:
    def __init__(self, retriever: TermOverlap, docs: dict[str, set[str]]):
        self.retriever = retriever
        self.docs = docs
        self.name = retriever.name

    def search(self, queries: Queries, k, *, doc_filter=None, show_progress=False, objective=None):
        k = check_k(k)
        q_col, d_col, s_col = [], [], []
        for qid in queries:
            terms = self.retriever.terms(queries[qid])
            pool = doc_filter.get(qid, self.docs) if doc_filter else self.docs
            # score descending, ties by doc id descending (the ranking rule of every Run)
            scored = sorted(
                ((len(terms & self.docs[d]), d) for d in pool if d in self.docs), reverse=True
            )
            for score, doc in scored[:k]:
                if score >= self.retriever.options.min_terms:
                    q_col.append(qid)
                    d_col.append(doc)
                    s_col.append(float(score))
        return Run(q_col, d_col, s_col, name=self.name)
