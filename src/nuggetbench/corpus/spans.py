"""Evidence-span judging: span-judged nuggets + a passage corpus -> nugget-level qrels.

The rule is the fastbook-benchmark's (Bakshi, 2024, ``modified_mrr`` / ``modified_recall``): a
passage supports a nugget when it contains one of the nugget's evidence spans, after
``ftfy.fix_text`` on both sides (exact, case-sensitive substring). A nugget without spans (an
answer component with an empty ``context``) is supported by no passage. Empty or whitespace-only
spans are ignored (under the literal rule they would be contained in every passage).

Chunking limits what any retriever can reach: a span that crosses a passage boundary is in no
passage. :class:`ChunkingCeiling` counts that loss: spans found in a passage, spans split across
boundaries (present in the source text but in no passage), spans absent from the source text
(not verbatim in the notebooks), nuggets no passage supports, and the best Coverage and AC_MRR a
perfect ranking could reach.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from nuggetbench.data import Corpus, Nugget, NuggetQrels

_SEP = "\x00"
MAX_EXACT_COMBINATIONS = 200_000


def fix(text: str) -> str:
    """``ftfy.fix_text`` (mojibake, HTML entities, curly quotes left as they are by default)."""
    import ftfy

    return ftfy.fix_text(text)


class _Haystack:
    """Texts joined by NUL, to find every text containing a needle with ``str.find``."""

    def __init__(self, texts: Iterable[str]):
        fixed = [fix(t).replace(_SEP, " ") for t in texts]
        lengths = np.fromiter((len(t) + 1 for t in fixed), dtype=np.int64, count=len(fixed))
        self.starts = (
            np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(fixed) else np.zeros(0, np.int64)
        )
        self.text = _SEP.join(fixed)

    def containing(self, needle: str) -> list[int]:
        """Indices of the texts containing *needle* (sorted, unique)."""
        hits: list[int] = []
        if not needle or _SEP in needle:
            return hits
        pos = self.text.find(needle)
        while pos >= 0:
            i = int(np.searchsorted(self.starts, pos, side="right")) - 1
            hits.append(i)
            # continue after the end of text i: one hit per text is enough
            nxt = int(self.starts[i + 1]) if i + 1 < len(self.starts) else len(self.text)
            pos = self.text.find(needle, nxt)
        return hits


@dataclass(frozen=True)
class MissingSpan:
    """An evidence span that no passage contains; ``reason`` is ``split``, ``absent`` or ``unknown``."""

    query_id: str
    nugget_id: str
    span: str
    reason: str


@dataclass(frozen=True)
class ChunkingCeiling:
    """What a chunking lets a perfect ranking reach, with the counts behind it.

    Attributes:
        n_queries, n_nuggets, n_spans: totals (spans: non-empty evidence strings).
        n_spans_found: spans contained in at least one passage.
        n_spans_split: spans in a source text but in no passage (split across boundaries).
        n_spans_absent: spans in no source text either (not verbatim in the notebooks).
        n_spans_unknown: spans in no passage when no source texts were given.
        n_nuggets_empty: nuggets without any span (empty context).
        n_nuggets_unreachable: nuggets no passage supports (empty ones included).
        n_queries_complete: queries every nugget of which some passage supports.
        coverage: mean over queries of the fraction of nuggets some passage supports: the best
            Coverage@k (AC_Recall@k) for k large enough.
        mrr: mean over queries of ``1 / (fewest passages that together support every nugget)``,
            0 for incomplete queries: the best AC_MRR@k for k large enough.
        mrr_exact: False when a query's minimum cover was approximated greedily (a lower bound).
        missing: every span no passage contains, with its reason.
        per_query: ``{query_id: (n_nuggets, n_supported, min_cover)}`` (``min_cover`` 0 when
            incomplete).
    """

    n_queries: int
    n_nuggets: int
    n_spans: int
    n_spans_found: int
    n_spans_split: int
    n_spans_absent: int
    n_spans_unknown: int
    n_nuggets_empty: int
    n_nuggets_unreachable: int
    n_queries_complete: int
    coverage: float
    mrr: float
    mrr_exact: bool = True
    missing: tuple[MissingSpan, ...] = field(default=(), repr=False)
    per_query: dict = field(default_factory=dict, repr=False)

    def mrr_at(self, k: int) -> float:
        """Best AC_MRR@k: queries whose minimum cover exceeds *k* passages score 0."""
        if not self.per_query:
            return 0.0
        vals = [1.0 / c if 0 < c <= k else 0.0 for _, _, c in self.per_query.values()]
        return float(np.mean(vals))

    def as_dict(self) -> dict:
        """The counts and ceilings as a JSON-ready dict (without the missing spans)."""
        return {
            k: getattr(self, k)
            for k in (
                "n_queries",
                "n_nuggets",
                "n_spans",
                "n_spans_found",
                "n_spans_split",
                "n_spans_absent",
                "n_spans_unknown",
                "n_nuggets_empty",
                "n_nuggets_unreachable",
                "n_queries_complete",
                "coverage",
                "mrr",
                "mrr_exact",
            )
        }

    def __str__(self) -> str:
        lost = (
            f"{self.n_spans_split} split across passages, {self.n_spans_absent} not in the source"
        )
        if self.n_spans_unknown:
            lost += f", {self.n_spans_unknown} in no passage"
        return (
            f"chunking ceiling: {self.n_spans_found}/{self.n_spans} spans in a passage ({lost}); "
            f"{self.n_nuggets - self.n_nuggets_unreachable}/{self.n_nuggets} nuggets reachable "
            f"({self.n_nuggets_empty} with no span); {self.n_queries_complete}/{self.n_queries} "
            f"queries complete; best Coverage {self.coverage:.4f}, best AC_MRR {self.mrr:.4f}"
        )


@dataclass(frozen=True)
class SpanJudgments:
    """The result of :func:`judge_spans`: nugget qrels and the chunking ceiling."""

    qrels: NuggetQrels
    ceiling: ChunkingCeiling


def _min_cover(masks: list[int], full: int) -> tuple[int, bool]:
    """Fewest masks whose union is *full*: exact search by increasing size while the number of
    combinations stays under :data:`MAX_EXACT_COMBINATIONS`, else greedy; ``(size, exact)``."""
    from math import comb

    uniq = sorted({m for m in masks if m}, reverse=True)
    # a mask contained in another never helps a minimum cover
    uniq = [m for m in uniq if not any(o != m and (m | o) == o for o in uniq)]
    for size in range(1, bin(full).count("1") + 1):
        if comb(len(uniq), size) > MAX_EXACT_COMBINATIONS:
            break
        for combo in itertools.combinations(uniq, size):
            union = 0
            for m in combo:
                union |= m
            if union == full:
                return size, True
    left, size = full, 0
    while left:  # greedy fallback: an upper bound on the cover size
        best = max(uniq, key=lambda m: bin(m & left).count("1"))
        left &= ~best
        size += 1
    return size, False


def judge_spans(
    nuggets: Iterable[Nugget],
    corpus: Corpus,
    *,
    source_texts: Iterable[str] | None = None,
    doc_filter: Mapping[str, Collection[str]] | None = None,
    name: str | None = None,
) -> SpanJudgments:
    """Judge span-judged nuggets against a passage corpus.

    Args:
        nuggets: nuggets with evidence ``spans`` (e.g. fastbook answer components).
        corpus: the passages (their ``text`` is searched; titles are not).
        source_texts: the unchunked texts (e.g. each notebook's rendered text), to tell spans
            split across passages from spans absent altogether; ``None`` leaves that unknown.
        doc_filter: optional ``{query_id: allowed doc ids}``; a listed query is judged only
            against its allowed passages (fastbook's chapter restriction).
        name: the qrels name.

    Returns:
        :class:`SpanJudgments`: ``qrels`` holds every nugget and one judgment ``(query, nugget,
        doc, 1)`` per supporting passage; ``ceiling`` the counts described in the module docstring.
    """
    nuggets = list(nuggets)
    doc_ids: list[str] = []
    texts: list[str] = []
    for doc in corpus.iter_documents():
        doc_ids.append(doc.doc_id)
        texts.append(doc.text)
    search = _SpanSearch(doc_ids, texts, source_texts, doc_filter)
    jq: list[str] = []
    jn: list[str] = []
    jd: list[str] = []
    supporting: dict[str, set[int]] = {}
    for nug in nuggets:
        docs = search.supporting(nug)
        supporting[nug.nugget_id] = docs
        for i in sorted(docs):
            jq.append(nug.query_id)
            jn.append(nug.nugget_id)
            jd.append(doc_ids[i])
    qrels = NuggetQrels(nuggets, jq, jn, jd, np.ones(len(jd), dtype=np.int64), name=name)
    per_query, exact_all = _covers(nuggets, supporting)
    n_q = len(per_query)
    coverage = float(np.mean([s / n for n, s, _ in per_query.values()])) if n_q else 0.0
    mrr = float(np.mean([1.0 / c if c else 0.0 for _, _, c in per_query.values()])) if n_q else 0.0
    ceiling = ChunkingCeiling(
        n_queries=n_q,
        n_nuggets=len(nuggets),
        n_nuggets_unreachable=sum(1 for n in nuggets if not supporting[n.nugget_id]),
        n_queries_complete=sum(1 for _, s_, c in per_query.values() if c),
        coverage=coverage,
        mrr=mrr,
        mrr_exact=exact_all,
        missing=tuple(search.missing),
        per_query=per_query,
        **search.counts,
    )
    return SpanJudgments(qrels, ceiling)


class _SpanSearch:
    """The passages (and source texts) searched for nuggets' spans, with the counts of
    :class:`ChunkingCeiling` (``n_spans``, ``n_spans_found``/``split``/``absent``/``unknown``,
    ``n_nuggets_empty``) and the spans found nowhere."""

    def __init__(
        self,
        doc_ids: list[str],
        texts: list[str],
        source_texts: Iterable[str] | None,
        doc_filter: Mapping[str, Collection[str]] | None,
    ):
        self.doc_ids = doc_ids
        self.passages = _Haystack(texts)
        self.sources = _Haystack(source_texts) if source_texts is not None else None
        self.allowed = {q: set(v) for q, v in doc_filter.items()} if doc_filter is not None else {}
        self.cache: dict[str, list[int]] = {}
        self.missing: list[MissingSpan] = []
        self.counts = dict.fromkeys(
            (
                "n_spans",
                "n_spans_found",
                "n_spans_split",
                "n_spans_absent",
                "n_spans_unknown",
                "n_nuggets_empty",
            ),
            0,
        )

    def supporting(self, nug: Nugget) -> set[int]:
        """The rows of the passages that contain one of *nug*'s spans (after ``fix``), within
        its query's allowed passages; a span found nowhere is recorded with its reason."""
        spans = [s for s in nug.spans if s and s.strip()]
        if not spans:
            self.counts["n_nuggets_empty"] += 1
        docs: set[int] = set()
        for span in spans:
            self.counts["n_spans"] += 1
            needle = fix(span)
            if needle not in self.cache:
                self.cache[needle] = self.passages.containing(needle)
            hits = self.cache[needle]
            if nug.query_id in self.allowed:
                hits = [i for i in hits if self.doc_ids[i] in self.allowed[nug.query_id]]
            if hits:
                self.counts["n_spans_found"] += 1
                docs.update(hits)
                continue
            if self.sources is None:
                reason = "unknown"
            elif self.sources.containing(needle):
                reason = "split"
            else:
                reason = "absent"
            self.counts[f"n_spans_{reason}"] += 1
            self.missing.append(MissingSpan(nug.query_id, nug.nugget_id, span, reason))
        return docs


def _covers(
    nuggets: list[Nugget], supporting: dict[str, set[int]]
) -> tuple[dict[str, tuple[int, int, int]], bool]:
    """``({query: (nuggets, reached, smallest covering passages)}, every cover exact)``: the
    fewest passages covering all of a query's nuggets (0 when one is unreachable)."""
    per_query: dict[str, tuple[int, int, int]] = {}
    exact_all = True
    for qid, group in itertools.groupby(
        sorted(nuggets, key=lambda n: n.query_id), key=lambda n: n.query_id
    ):
        group = list(group)
        reached = [bool(supporting[n.nugget_id]) for n in group]
        cover = 0
        if all(reached):
            by_doc: dict[int, int] = {}
            for bit, nug in enumerate(group):
                for d in supporting[nug.nugget_id]:
                    by_doc[d] = by_doc.get(d, 0) | (1 << bit)
            cover, exact = _min_cover(list(by_doc.values()), (1 << len(group)) - 1)
            exact_all &= exact
        per_query[qid] = (len(group), sum(reached), cover)
    return per_query, exact_all


__all__ = ["judge_spans", "SpanJudgments", "ChunkingCeiling", "MissingSpan", "fix"]
