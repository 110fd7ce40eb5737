"""Trap checks on coverage: judged documents the run never retrieves (document ids of another
format), a truncated or subset corpus, retrieved ids that are not in the corpus."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from nuggetbench.data.checks.findings import Finding
from nuggetbench.data.checks.findings import emit as _emit
from nuggetbench.data.corpus import Corpus
from nuggetbench.data.lookup import (
    as_objects,
    index_in,
    is_arrow,
    is_in,
    objects_at,
    subset,
)
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.run import Run


def _run_doc_uniques(run: Run) -> Any:
    """The distinct document ids of *run* (object array or pyarrow string array, no order), from
    its codes."""
    uniques, codes = run.doc_codes_kept()
    present = np.zeros(len(uniques), dtype=bool)
    present[np.asarray(codes, dtype=np.int64)] = True  # after filtering uniques may hold more
    return subset(uniques, present)


def _judged_doc_column(qrels: Qrels) -> np.ndarray:
    """The qrels' doc id column (object (n,))."""
    return qrels.arrays()[2]


def _judged_doc_codes(qrels: Qrels) -> tuple[Any, np.ndarray] | None:
    """``(uniques, judged)`` of qrels read factorised (``Qrels.doc_codes``): their distinct doc
    ids (object (u,), or a pyarrow string array) and which of them the judgments use (bool
    (u,): after ``filter_queries`` the uniques may hold more); ``None`` for other qrels."""
    pair = qrels.doc_codes_kept()
    if pair is None:
        return None
    uniques, codes = pair
    judged = np.zeros(len(uniques), dtype=bool)
    judged[np.asarray(codes, dtype=np.int64)] = True
    return (uniques if is_arrow(uniques) else np.asarray(uniques, dtype=object)), judged


def _judged_doc_ids_any_order(qrels: Qrels) -> Any:
    """Every judged doc id at least once (object array, or a pyarrow string array): the
    distinct ids of qrels read factorised, else the column (for tests over the set of ids)."""
    coded = _judged_doc_codes(qrels)
    if coded is None:
        return _judged_doc_column(qrels)
    uniques, judged = coded
    return subset(uniques, judged)


def _missing_judged_docs(qrels: Qrels, run: Run) -> np.ndarray:
    """The distinct judged document ids that the run never retrieves (object array, no order).

    The run maps the qrels' doc ids to its codes once (``Run.codes_of``, shared with
    :func:`_judged_hits` and the evaluation's join); only the absent ids are then made distinct.
    """
    coded = _judged_doc_codes(qrels)
    if coded is not None:
        judged_uniques, judged = coded
        uniques, codes = run.doc_codes_kept()
        present = np.zeros(len(uniques) + 1, dtype=bool)  # the last cell: absent (-1)
        present[np.asarray(codes, dtype=np.int64)] = True  # after filtering uniques may hold more
        absent = judged & ~present[run.codes_of(judged_uniques)]
        return objects_at(judged_uniques, np.flatnonzero(absent))
    docids = _judged_doc_column(qrels)
    uniques, codes = run.doc_codes_kept()
    present = np.zeros(len(uniques) + 1, dtype=bool)  # the last cell: absent (-1)
    present[np.asarray(codes, dtype=np.int64)] = True  # after filtering uniques may hold more
    absent = np.asarray(docids, dtype=object)[~present[run.codes_of(docids)]]
    return np.array(list(set(absent.tolist())), dtype=object)


def _judged_doc_ids(qrels: Qrels, *, relevant_only: bool = False) -> set[str]:
    _, _, docids, rels = qrels.arrays()
    if relevant_only:
        docids = docids[np.asarray(rels) > 0]
    return set(docids.tolist())


def check_corpus_coverage(
    qrels: Qrels, corpus: Corpus, *, metadata: Mapping[str, Any] | None = None
) -> list[Finding]:
    """Relevant judged documents missing from *corpus*, and subsets that keep every judged one.

    Args:
        qrels: :class:`~nuggetbench.data.Qrels`.
        corpus: a :class:`~nuggetbench.data.Corpus` (anything supporting ``doc_id in corpus``).
        metadata: the dataset's metadata; a ``subset`` entry (``{"max_docs": ..., "keep_judged":
            ..., "full_size": ...}``, see the mMARCO loader) adds a finding about comparability.

    Returns:
        ``judged_missing`` (warning) when relevant (grade > 0) judged documents are not in the
        corpus; ``subset_keeps_judged`` (warning) when the corpus is a subset that kept them all.
    """
    out: list[Finding] = []
    relevant = _judged_doc_ids(qrels, relevant_only=True) or set()
    missing = sorted(d for d in relevant if d not in corpus)
    subset = dict((metadata or {}).get("subset") or {})
    if missing:
        how = (
            f"the corpus is a {subset.get('max_docs')}-document subset that did not keep the judged "
            "documents"
            if subset
            else "was the corpus truncated?"
        )
        out.append(
            Finding(
                "warning",
                "judged_missing",
                f"{len(missing)} of {len(relevant)} relevant judged documents are not in the "
                f"corpus ({how}; e.g. {', '.join(repr(m) for m in missing[:3])}): they can "
                "never be retrieved, so recall and nDCG are capped below 1. Keep every "
                "judged document when subsetting (keep_judged=True)",
                {"relevant": len(relevant), "missing": len(missing)},
            )
        )
    elif subset:
        out.append(
            Finding(
                "warning",
                "subset_keeps_judged",
                f"the corpus is a subset ({subset.get('n_docs', '?')} of "
                f"{subset.get('full_size', '?')} documents) that keeps every judged "
                "document: with fewer distractors the task is easier, and scores are "
                "higher than on the full corpus; do not compare them with published numbers",
                {
                    k: int(subset[k])
                    for k in ("n_docs", "full_size")
                    if isinstance(subset.get(k), int)
                },
            )
        )
    return _emit(out)


_PREFIX_MIN = 100
"""From this many run queries, :func:`check_judged_overlap` first counts a prefix of them."""

FEW_JUDGED = 0.1
"""Below this fraction of evaluated queries retrieving any judged document, the run's document
ids probably do not match the qrels' (or the run is of another collection)."""

CORPUS_SAMPLE = 20_000
"""At most this many distinct retrieved ids are looked up in the corpus (a seeded sample)."""


def _judged_hits(qrels: Qrels, run: Run, *, rows: int | None = None) -> dict[str, int] | None:
    """Counts behind :func:`check_judged_overlap`.

    Works on the run's factorised doc ids (``Run.doc_codes``) so that no per-entry string is
    hashed again: qrels documents are mapped to the run's codes, then (query, doc) keys compared.
    With *rows*, only the entries of the first *rows* run queries are looked up:
    ``queries_with_judged`` and ``judged_entries`` are then lower bounds (the other counts are
    whole).
    """
    qq, qstarts = qrels.query_offsets()
    rq, rstarts = run.query_offsets()
    uniques, codes = run.doc_codes_kept()
    doc_code = run.judged_codes(qrels)
    codes = np.asarray(codes, dtype=np.int64)
    present = np.zeros(len(uniques), dtype=bool)
    present[codes] = True  # after filtering, uniques may hold more
    query_of_judgment = np.repeat(index_in(qq, rq), np.diff(qstarts))
    nd = np.int64(max(len(uniques), 1))
    keep = (doc_code >= 0) & (query_of_judgment >= 0)
    judged_keys = query_of_judgment[keep].astype(np.int64) * nd + doc_code[keep]
    counts = np.diff(rstarts)
    shared_query = np.zeros(len(rq), dtype=bool)
    shared_query[query_of_judgment[query_of_judgment >= 0]] = True
    # only entries whose document is judged somewhere can be judged for their query: look those
    # few (query, doc) keys up, not all of them
    judged_doc = np.zeros(len(uniques), dtype=bool)
    judged_doc[doc_code[keep]] = True
    cand = np.flatnonzero(judged_doc[codes if rows is None else codes[: rstarts[rows]]])
    cand_rows = np.searchsorted(rstarts, cand, side="right") - 1
    hit = is_in(cand_rows * nd + codes[cand], judged_keys) & shared_query[cand_rows]
    hit_rows = cand_rows[hit]
    in_qrels = np.zeros(len(uniques), dtype=bool)
    in_qrels[doc_code[doc_code >= 0]] = True
    return {
        "queries": int(shared_query.sum()),
        "queries_with_judged": int(np.count_nonzero(np.bincount(hit_rows, minlength=1))),
        "entries": int(counts[shared_query].sum()),
        "judged_entries": int(hit.sum()),
        "retrieved_ids": int(present.sum()),
        "retrieved_ids_in_qrels": int((present & in_qrels).sum()),
    }


def _example_ids(values: Iterable[str], n: int = 2) -> str:
    return ", ".join(repr(v[:40]) for v in sorted(values)[:n])


def check_judged_overlap(qrels: Qrels, run: Run, *, few: float = FEW_JUDGED) -> list[Finding]:
    """Warn when no, or almost no, retrieved document is judged: document ids of another format.

    Of the queries both sides share, the fraction whose ranking holds at least one judged
    document (any grade) is compared with *few*. A document id mismatch (``doc123`` vs ``123``)
    gives 0, and every measure 0 with it.

    Returns:
        ``no_judged`` (warning) when no retrieved document is judged, ``few_judged`` (warning) when
        fewer than *few* of the shared queries retrieve one; counts ``queries``,
        ``queries_with_judged``, ``entries``, ``judged_entries``, ``retrieved_ids``,
        ``retrieved_ids_in_qrels``. Nothing when the sides share no query (the query checks
        report that).
    """
    n_queries = len(run.query_offsets()[0])
    if n_queries >= _PREFIX_MIN:  # most runs pass on a prefix of their queries: count those first
        counts = _judged_hits(qrels, run, rows=min(n_queries, int(n_queries * 3 * few) + 1))
        if not counts or not counts["queries"] or not counts["entries"]:
            return []
        if counts["queries_with_judged"] >= few * counts["queries"]:
            return []  # a lower bound already passes
    counts = _judged_hits(qrels, run)
    if not counts or not counts["queries"] or not counts["entries"]:
        return []
    if counts["queries_with_judged"] >= few * counts["queries"]:
        return []
    _, _, rdocs, _ = run.arrays()
    _, _, qdocs, _ = qrels.arrays()
    examples = (
        f"retrieved e.g. {_example_ids(set(rdocs[:1000].tolist()))}; judged e.g. "
        f"{_example_ids(set(qdocs[:1000].tolist()))}"
    )
    none = counts["judged_entries"] == 0
    message = (
        f"{'no' if none else 'almost no'} retrieved document is judged: "
        f"{counts['judged_entries']} of {counts['entries']} retrieved entries, in "
        f"{counts['queries_with_judged']} of {counts['queries']} queries; "
        f"{counts['retrieved_ids_in_qrels']} of {counts['retrieved_ids']} distinct retrieved ids "
        f"occur in the qrels ({examples}). The scores are near 0 for that reason: check that the "
        "run's document ids are the corpus/qrels ids (same prefix, type, case and zero padding) "
        "and that the run is of this collection"
    )
    return _emit([Finding("warning", "no_judged" if none else "few_judged", message, counts)])


def check_run_in_corpus(run: Run, corpus: Corpus, *, sample: int = CORPUS_SAMPLE) -> list[Finding]:
    """Retrieved document ids that are not in the corpus (a run of another collection or id format).

    At most *sample* distinct retrieved ids are looked up (a seeded random sample beyond that).

    Returns:
        ``run_not_in_corpus`` (warning) with counts ``checked`` and ``missing``; nothing when every
        checked id is in *corpus*.
    """
    ids = sorted(as_objects(_run_doc_uniques(run)).tolist())
    if len(ids) > sample:
        pick = np.random.default_rng(0).choice(len(ids), size=sample, replace=False)
        ids = [ids[i] for i in sorted(pick.tolist())]
    missing = [d for d in ids if d not in corpus]
    if not missing:
        return []
    counts = {"checked": len(ids), "missing": len(missing)}
    message = (
        f"{len(missing)} of {len(ids)} {'sampled ' if len(ids) == sample else ''}retrieved document "
        f"ids are not in the corpus (e.g. {_example_ids(missing)}; corpus ids look like "
        f"{_example_ids(_first_ids(corpus))}): they can never be judged relevant. Write the "
        "corpus's own ids in the run"
    )
    return _emit([Finding("warning", "run_not_in_corpus", message, counts)])


def _first_ids(corpus: Corpus, n: int = 2) -> list[str]:
    out: list[str] = []
    try:
        for doc_id in corpus:
            out.append(str(doc_id))
            if len(out) >= n:
                break
    except TypeError:
        pass
    return out
