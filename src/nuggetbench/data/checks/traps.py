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
* **unsorted results**: the run's entries did not arrive ranked; trec_eval (and nuggetbench)
  re-rank by score, so a system whose order is not its score order is not evaluated on its order.

Each check returns :class:`Finding` values and logs them (``logging``, warnings at WARNING);
:func:`check_run_against_qrels` runs them all and returns printable lines. Nothing here changes a
run or the scores.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nuggetbench._runtime import trim_heap
from nuggetbench.data import arrow as _arrow
from nuggetbench.data.lookup import (
    arrow_strings,
    as_objects,
    index_in,
    is_arrow,
    is_in,
    kept_doc_codes,
    objects_at,
    subset,
)

log = logging.getLogger(__name__)

__all__ = [
    "Finding",
    "check_run_against_qrels",
    "check_findings",
    "check_query_overlap",
    "check_id_formats",
    "check_corpus_coverage",
    "check_judged_overlap",
    "check_run_in_corpus",
    "check_run_sorted",
    "query_findings",
    "TINY_OVERLAP",
]

TINY_OVERLAP = 0.1
"""Below this fraction of judged queries present in the run, the overlap is called tiny."""

_NUMBER = re.compile(r"^[+-]?\d+(\.0*)?$")


SEVERITIES = ("info", "warning")


@dataclass(frozen=True)
class Finding:
    """One check result, typed: callers render it, nothing parses its text.

    Attributes:
        severity: ``"info"`` or ``"warning"``.
        kind: a stable short name (``query_overlap``, ``no_overlap``, ``tiny_overlap``,
            ``query_id_format``, ``doc_id_format``, ``id_whitespace``, ``no_judged``,
            ``few_judged``, ``run_not_in_corpus``, ``judged_missing``,
            ``subset_keeps_judged``, ``unsorted``, ``rank_disagrees``; the evaluation adds
            ``run_only_queries`` and ``missing_queries``).
        message: one line for people.
        counts: the numbers behind the message (``{"judged": 300, "in_run": 298, ...}``).

    ``level`` and ``code`` are the older names of *severity* and *kind*.

    Raises:
        ValueError: an unknown severity.
    """

    severity: str
    kind: str
    message: str
    counts: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding severity must be one of {SEVERITIES}, got {self.severity!r}")

    @property
    def level(self) -> str:
        return self.severity

    @property
    def code(self) -> str:
        return self.kind

    @property
    def is_warning(self) -> bool:
        return self.severity == "warning"

    def __str__(self) -> str:
        return f"[{self.severity}] {self.message}"


def _emit(findings: list[Finding]) -> list[Finding]:
    for f in findings:
        log.log(logging.WARNING if f.is_warning else logging.INFO, "%s", f.message)
    return findings


def _normal_form(value: str) -> str:
    """An id with whitespace, case, leading zeros and a ``.0`` suffix removed (for comparison)."""
    text = value.strip().lower()
    if _NUMBER.match(text):
        sign = "-" if text.startswith("-") else ""
        digits = text.lstrip("+-").split(".")[0].lstrip("0") or "0"
        return sign + digits
    return text


_PY_ASCII_SPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
"""The ASCII characters ``str.strip()`` removes (``str.isspace``)."""

_VECTOR_MIN = 20_000
"""Below this many ids the normal forms are computed in Python (no pyarrow import)."""


def _arrow_ascii(ids: np.ndarray) -> tuple[Any, np.ndarray] | None:
    """``(pyarrow array, is-ASCII mask)`` of *ids*, or ``None`` when the Python path is to be used."""
    if len(ids) < _VECTOR_MIN:
        return None
    try:
        _, pc = _arrow.load()

        arr = arrow_strings(ids)
    except (ImportError, UnicodeEncodeError, TypeError, ValueError):
        return None
    return arr, _arrow.to_numpy(pc.string_is_ascii(arr)).astype(bool)


def _normal_forms(ids: np.ndarray, arrow: tuple[Any, np.ndarray] | None = None) -> np.ndarray:
    """:func:`_normal_form` of each id (object (n,)), vectorised for ASCII ids.

    For ASCII text, ``str.strip`` removes exactly :data:`_PY_ASCII_SPACE`, ``str.lower`` is
    ``ascii_lower`` and ``\\d`` is ``[0-9]``, so the pyarrow expressions below give the same strings;
    other ids go through :func:`_normal_form` itself. *arrow*: :func:`_arrow_ascii` of *ids* when
    the caller has it.
    """
    arrow = arrow or _arrow_ascii(ids)
    if arrow is None:
        return np.array([_normal_form(x) for x in as_objects(ids)], dtype=object)
    arr, ascii_mask = arrow
    out = _arrow.to_numpy(_ascii_normal_forms(arr)).astype(object)
    if not ascii_mask.all():
        other = objects_at(ids, np.flatnonzero(~ascii_mask))
        out[~ascii_mask] = [_normal_form(x) for x in other]
    return out


def _ascii_normal_forms(arr: Any) -> Any:
    """:func:`_normal_form` of each ASCII id of the pyarrow string array *arr* (a pyarrow array;
    the values of non-ASCII ids are not their normal forms)."""
    _, pc = _arrow.load()

    text = pc.ascii_lower(pc.ascii_trim(arr, characters=_PY_ASCII_SPACE))
    number = pc.match_substring_regex(text, r"^[+-]?[0-9]+(\.0*)?$")
    if pc.any(number).as_py():  # rewrite only the numbers (the regex replace is the slow step)
        digits = pc.replace_substring_regex(
            pc.filter(text, number), r"^\+?(-?)0*([0-9]+)(?:\.0*)?$", r"\1\2"
        )
        text = pc.replace_with_mask(text, number, digits)
    return text


def _one_case_lower_forms(*arrows: tuple[Any, np.ndarray] | None) -> bool:
    """Whether no two different ids of all *arrows* (:func:`_arrow_ascii` results) can share a
    normal form, by a cheap vectorised test: every id is ASCII, its normal form is its lower
    case (no surrounding white space, no number written with a sign, leading zeros or ``.0``),
    and the ids are all without upper-case letters or all without lower-case ones, so lower
    casing, hence the normal form, is one-to-one on them. ``False`` means "not proved".

    Only ids without letters can be numbers (whose normal form may differ from the id): the
    normal forms are computed for those only."""
    _, pc = _arrow.load()

    if any(a is None or not a[1].all() for a in arrows):
        return False
    arrays = [arr for arr, _ in arrows if len(arr)]
    lowered = [pc.ascii_lower(arr) for arr in arrays]
    uppered = [pc.ascii_upper(arr) for arr in arrays]
    one_case = all(pc.all(pc.equal(low, arr)).as_py() for arr, low in zip(arrays, lowered)) or all(
        pc.all(pc.equal(up, arr)).as_py() for arr, up in zip(arrays, uppered)
    )
    if not one_case:
        return False
    for arr, low, up in zip(arrays, lowered, uppered):
        if not pc.all(pc.equal(pc.ascii_trim(arr, characters=_PY_ASCII_SPACE), arr)).as_py():
            return False
        plain = pc.filter(arr, pc.equal(low, up))  # no letter: the id is its lower case
        if len(plain) and not pc.all(pc.equal(_ascii_normal_forms(plain), plain)).as_py():
            return False
    return True


def _spaced(ids: np.ndarray, arrow: tuple[Any, np.ndarray] | None = None) -> list[str]:
    """The ids of *ids* with surrounding white space (``x != x.strip()``), vectorised for ASCII
    (*arrow*: :func:`_arrow_ascii` of *ids* when the caller has it)."""
    arrow = arrow or _arrow_ascii(ids)
    if arrow is None:
        return [x for x in as_objects(ids).tolist() if x != x.strip()]
    _, pc = _arrow.load()

    arr, ascii_mask = arrow
    changed = pc.not_equal(pc.ascii_trim(arr, characters=_PY_ASCII_SPACE), arr)
    hit = _arrow.to_numpy(changed).astype(bool) & ascii_mask
    other = [x for x in objects_at(ids, np.flatnonzero(~ascii_mask)).tolist() if x != x.strip()]
    return objects_at(ids, np.flatnonzero(hit)).tolist() + other


def _qrels_ids(qrels: Any) -> list[str]:
    return (
        [str(q) for q in qrels.query_ids]
        if hasattr(qrels, "query_ids")
        else [str(q) for q in qrels]
    )


def _run_ids(run: Any) -> list[str]:
    return [str(q) for q in run.query_ids] if hasattr(run, "query_ids") else [str(q) for q in run]


def check_query_overlap(qrels: Any, run: Any, *, tiny: float = TINY_OVERLAP) -> list[Finding]:
    """How many judged queries the run answers; loud when none or few do (a wrong split?).

    Args:
        qrels: :class:`~nuggetbench.data.Qrels` (or any mapping of query ids).
        run: :class:`~nuggetbench.data.Run` (or any mapping of query ids).
        tiny: fraction of judged queries below which the overlap is flagged.

    Returns:
        An ``info`` finding with the counts, plus a ``warning`` (``no_overlap`` or
        ``tiny_overlap``) when fewer than ``tiny`` of the judged queries are in the run.
    """
    judged = set(_qrels_ids(qrels))
    ran = set(_run_ids(run))
    both = judged & ran
    out = [
        Finding(
            "info",
            "query_overlap",
            f"{len(both)} of {len(judged)} judged queries are in the run; "
            f"{len(ran - judged)} run queries have no judgments (ignored), "
            f"{len(judged - ran)} judged queries are missing from the run",
            {
                "judged": len(judged),
                "in_run": len(both),
                "run_only": len(ran - judged),
                "missing": len(judged - ran),
            },
        )
    ]
    if judged and not both:
        out.append(
            Finding(
                "warning",
                "no_overlap",
                f"NO evaluated query has judgments: the run's {len(ran)} queries and the "
                f"{len(judged)} judged queries share no id. Wrong split (e.g. test qrels "
                "for dev queries) or ids in another format? Every score would be 0",
                {"judged": len(judged), "run_queries": len(ran), "in_run": 0},
            )
        )
    elif judged and len(both) < tiny * len(judged):
        out.append(
            Finding(
                "warning",
                "tiny_overlap",
                f"only {len(both)} of {len(judged)} judged queries ({len(both) / len(judged):.1%}) "
                "are in the run: is it the right split? Under the default profile the "
                "missing queries score 0",
                {"judged": len(judged), "in_run": len(both)},
            )
        )
    return _emit(out)


def _format_pairs(a: Iterable[str], b: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs ``(x, y)`` with x in *a*, y in *b*, x != y, same normal form (x absent from b)."""
    b_set = set(b)
    unmatched = set(a) - b_set
    if not unmatched:  # every x is in b: no pair (the normal forms are not needed)
        return []
    by_norm: dict[str, str] = {}
    for y in b_set:
        by_norm.setdefault(_normal_form(y), y)
    pairs = []
    for x in unmatched:
        y = by_norm.get(_normal_form(x))
        if y is not None and y != x:
            pairs.append((x, y))
    return sorted(pairs)


def _examples(pairs: list[tuple[str, str]], left: str, right: str) -> str:
    return ", ".join(f"{left} {x!r} vs {right} {y!r}" for x, y in pairs[:3])


def check_id_formats(qrels: Any, run: Any) -> list[Finding]:
    """Query and document ids that differ between run and qrels only by format.

    Format means white space around the id, letter case, leading zeros or a ``.0`` suffix
    (an id written as a number somewhere: ``1`` vs ``"01"`` vs ``1.0``). Such ids never match.

    Returns:
        ``warning`` findings: ``query_id_format``, ``doc_id_format``, ``id_whitespace``.
    """
    out: list[Finding] = []
    qpairs = _format_pairs(_run_ids(run), _qrels_ids(qrels))
    if qpairs:
        out.append(
            Finding(
                "warning",
                "query_id_format",
                f"{len(qpairs)} run query ids differ from judged query ids only by format "
                f"({_examples(qpairs, 'run', 'qrels')}): they are not matched; rewrite one "
                "side so the ids are identical strings",
                {"pairs": len(qpairs)},
            )
        )
    run_docs = _run_doc_uniques(run)
    run_arrow = _arrow_ascii(run_docs) if run_docs is not None else None  # one conversion
    judged_docs = _judged_doc_ids_any_order(qrels)
    missing_docs = None
    if judged_docs is not None and not _one_case_lower_forms(
        run_arrow, _arrow_ascii(judged_docs)
    ):  # a pair is possible: find the judged ids never retrieved, then their partners
        missing_docs = _missing_judged_docs(qrels, run)
    if run_docs is not None and missing_docs is not None:
        dpairs = _doc_format_pairs(missing_docs, run_docs, run_arrow)
        if dpairs:
            out.append(
                Finding(
                    "warning",
                    "doc_id_format",
                    f"{len(dpairs)} judged document ids differ from retrieved ids only by "
                    f"format ({_examples(dpairs, 'qrels', 'run')}): those documents count "
                    "as not relevant; make the corpus and qrels ids identical strings",
                    {"pairs": len(dpairs)},
                )
            )
    spaced = sorted({x for x in (*_qrels_ids(qrels), *_run_ids(run)) if x != x.strip()})
    if run_docs is not None:
        spaced += sorted(set(_spaced(run_docs, run_arrow)))[:3]
    if spaced:
        out.append(
            Finding(
                "warning",
                "id_whitespace",
                f"ids with surrounding white space: {', '.join(repr(s) for s in spaced[:3])}; "
                "strip them on both sides",
                {"ids": len(spaced)},
            )
        )
    return _emit(out)


def _doc_format_pairs(
    missing: np.ndarray, retrieved: np.ndarray, arrow: tuple[Any, np.ndarray] | None = None
) -> list[tuple[str, str]]:
    """:func:`_format_pairs` of the judged document ids never retrieved (*missing*, distinct) and
    the retrieved ones (distinct), vectorised.

    Only judged ids never retrieved can form a pair (:func:`_missing_judged_docs`), and only
    retrieved ids whose normal form is one of theirs can be their partner, and only missing ids
    whose normal form is a partner's can pair: hash look-ups over the normal forms, and
    :func:`_format_pairs` runs on those few. *arrow*: :func:`_arrow_ascii` of *retrieved*.
    """
    if not len(missing):
        return []
    missing = np.asarray(missing, dtype=object)
    missing_forms = _normal_forms(missing)
    forms = _normal_forms(retrieved, arrow)
    partner = is_in(forms, missing_forms)
    paired = is_in(missing_forms, forms[partner])
    partners = objects_at(retrieved, np.flatnonzero(partner))
    return _format_pairs(missing[paired].tolist(), partners.tolist())


def _run_doc_uniques(run: Any) -> np.ndarray | None:
    """The distinct document ids of *run* (object array, no order), from its codes when it has them."""
    if hasattr(run, "doc_codes"):
        uniques, codes = kept_doc_codes(run)
        present = np.zeros(len(uniques), dtype=bool)
        present[np.asarray(codes, dtype=np.int64)] = True  # after filtering uniques may hold more
        return subset(uniques, present)
    arrays = getattr(run, "arrays", None)
    if arrays is None:
        return None
    return np.array(list(set(arrays()[2].tolist())), dtype=object)


def _judged_doc_column(qrels: Any) -> np.ndarray | None:
    """The qrels' doc id column (object (n,)), ``None`` when *qrels* has no arrays."""
    arrays = getattr(qrels, "arrays", None)
    return None if arrays is None else arrays()[2]


def _judged_doc_codes(qrels: Any) -> tuple[Any, np.ndarray] | None:
    """``(uniques, judged)`` of qrels read factorised (``Qrels.doc_codes``): their distinct doc
    ids (object (u,), or a pyarrow string array) and which of them the judgments use (bool
    (u,): after ``filter_queries`` the uniques may hold more); ``None`` for other qrels."""
    pair = kept_doc_codes(qrels)
    if pair is None:
        return None
    uniques, codes = pair
    judged = np.zeros(len(uniques), dtype=bool)
    judged[np.asarray(codes, dtype=np.int64)] = True
    return (uniques if is_arrow(uniques) else np.asarray(uniques, dtype=object)), judged


def _judged_doc_ids_any_order(qrels: Any) -> Any:
    """Every judged doc id at least once (object array, or a pyarrow string array): the
    distinct ids of qrels read factorised, else the column (for tests over the set of ids)."""
    coded = _judged_doc_codes(qrels)
    if coded is None:
        return _judged_doc_column(qrels)
    uniques, judged = coded
    return subset(uniques, judged)


def _missing_judged_docs(qrels: Any, run: Any) -> np.ndarray | None:
    """The distinct judged document ids that the run never retrieves (object array, no order).

    A run with ``codes_of`` maps the qrels' doc id column to its codes once (shared with
    :func:`_judged_hits` and the evaluation's join); only the absent ids are then made distinct.
    """
    coded = _judged_doc_codes(qrels)
    if coded is not None and hasattr(run, "codes_of"):
        judged_uniques, judged = coded
        uniques, codes = kept_doc_codes(run)
        present = np.zeros(len(uniques) + 1, dtype=bool)  # the last cell: absent (-1)
        present[np.asarray(codes, dtype=np.int64)] = True  # after filtering uniques may hold more
        absent = judged & ~present[run.codes_of(judged_uniques)]
        return objects_at(judged_uniques, np.flatnonzero(absent))
    docids = _judged_doc_column(qrels)
    if docids is None:
        return None
    if hasattr(run, "codes_of"):
        uniques, codes = kept_doc_codes(run)
        present = np.zeros(len(uniques) + 1, dtype=bool)  # the last cell: absent (-1)
        present[np.asarray(codes, dtype=np.int64)] = True  # after filtering uniques may hold more
        absent = np.asarray(docids, dtype=object)[~present[run.codes_of(docids)]]
        return np.array(list(set(absent.tolist())), dtype=object)
    retrieved = _run_doc_uniques(run)
    if retrieved is None:
        return None
    judged = np.array(list(set(docids.tolist())), dtype=object)
    return judged[index_in(judged, retrieved) < 0]


def _judged_doc_ids(qrels: Any, *, relevant_only: bool = False) -> set[str] | None:
    arrays = getattr(qrels, "arrays", None)
    if arrays is None:
        return None
    _, _, docids, rels = arrays()
    if relevant_only:
        docids = docids[np.asarray(rels) > 0]
    return set(docids.tolist())


def check_corpus_coverage(
    qrels: Any, corpus: Any, *, metadata: Mapping[str, Any] | None = None
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


def _judged_hits(qrels: Any, run: Any, *, rows: int | None = None) -> dict[str, int] | None:
    """Counts behind :func:`check_judged_overlap` (``None`` when *run*/*qrels* lack arrays).

    Works on the run's factorised doc ids (``Run.doc_codes``) so that no per-entry string is
    hashed again: qrels documents are mapped to the run's codes, then (query, doc) keys compared.
    With *rows*, only the entries of the first *rows* run queries are looked up:
    ``queries_with_judged`` and ``judged_entries`` are then lower bounds (the other counts are
    whole).
    """
    if not hasattr(run, "arrays") or not hasattr(qrels, "arrays"):
        return None
    if hasattr(run, "judged_codes") and hasattr(run, "query_offsets"):
        qq, qstarts = (
            qrels.query_offsets() if hasattr(qrels, "query_offsets") else qrels.arrays()[:2]
        )
        rq, rstarts = run.query_offsets()
        uniques, codes = kept_doc_codes(run)
        doc_code = run.judged_codes(qrels)
    else:
        import pandas as pd

        qq, qstarts, qdocs, _ = qrels.arrays()
        rq, rstarts, rdocs, _ = run.arrays()
        codes, uniques = pd.factorize(np.asarray(rdocs, dtype=object))
        doc_code = index_in(qdocs, uniques)
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


def check_judged_overlap(qrels: Any, run: Any, *, few: float = FEW_JUDGED) -> list[Finding]:
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
    n_queries = len(run.query_offsets()[0]) if hasattr(run, "query_offsets") else 0
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


def check_run_in_corpus(run: Any, corpus: Any, *, sample: int = CORPUS_SAMPLE) -> list[Finding]:
    """Retrieved document ids that are not in the corpus (a run of another collection or id format).

    At most *sample* distinct retrieved ids are looked up (a seeded random sample beyond that).

    Returns:
        ``run_not_in_corpus`` (warning) with counts ``checked`` and ``missing``; nothing when every
        checked id is in *corpus*.
    """
    if not hasattr(run, "arrays"):
        return []
    ids = sorted(_run_doc_uniques(run).tolist())
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


def _first_ids(corpus: Any, n: int = 2) -> list[str]:
    out: list[str] = []
    try:
        for doc_id in corpus:
            out.append(str(doc_id))
            if len(out) >= n:
                break
    except TypeError:
        pass
    return out


def check_run_sorted(run: Any) -> list[Finding]:
    """Whether the run's entries arrived ranked, and whether a rank column agrees with the scores.

    ``Run.input_sorted`` is false when the input was not already in trec_eval order (queries
    ascending as strings, scores descending, ties by doc id descending); the run was re-ranked by
    score. When the input's rank column was kept (``read_run(..., keep_rank=True)``) the check
    also counts queries whose rank order contradicts the scores (e.g. distances written as
    scores): trec_eval ignores the rank column, so those queries are scored in reverse.

    Returns:
        ``unsorted`` and/or ``rank_disagrees`` warnings.
    """
    out: list[Finding] = []
    if getattr(run, "input_sorted", True) is False:
        out.append(
            Finding(
                "warning",
                "unsorted",
                "the run's results did not arrive sorted (by query, then score descending, "
                "ties by doc id descending); they were re-ranked by score as trec_eval "
                "does. If your system's order is not its score order (distances, ranks, "
                "constant scores), the evaluation does not measure your order: write "
                "scores where higher is better",
            )
        )
    ranks = getattr(run, "input_ranks", None)
    if ranks is not None and len(ranks):
        bad = [str(q) for q in _rank_disagreements(run, np.asarray(ranks))]
        if bad:
            out.append(
                Finding(
                    "warning",
                    "rank_disagrees",
                    f"in {len(bad)} queries (e.g. {', '.join(bad[:3])}) the rank column "
                    "contradicts the scores; ranks are ignored (trec_eval), so these "
                    "queries are scored in score order, not rank order (only the ndeval "
                    "profile's diversity measures follow the rank column)",
                    {"queries": len(bad)},
                )
            )
    return _emit(out)


_PADDED_FACTOR = 2
"""Queries are sorted as rows of a padded matrix while it holds at most this many cells per
entry (else by one global lexsort)."""


_BY_SCORE_GROUPS = True
"""Find disagreements in one pass over groups of equal scores (no sort); tests turn it off to
compare with the sorting paths."""


def _rank_disagreements_by_groups(
    rows: np.ndarray, scores: np.ndarray, ranks: np.ndarray
) -> np.ndarray | None:
    """The query rows (ascending, distinct) of :func:`_rank_disagreements`, without sorting.

    Entries are ranked (scores non-increasing inside each row). Read in rank order (stable, so
    equal ranks keep the score order), a row's scores go up exactly when some entry has a higher
    rank than an entry of strictly lower score. So each group of equal scores is compared with
    the largest rank of the row's earlier (higher-scoring) groups: one running maximum over keys
    ``row * span + rank`` (a row's keys all exceed the earlier rows', so the maximum restarts at
    each row). ``None`` when the keys would not fit in int64 (the caller sorts instead).
    """
    low, high = int(ranks.min()), int(ranks.max())
    span = high - low + 1
    if (int(rows[-1]) + 1) * span >= 2**62:
        return None
    keys = rows * np.int64(span) + (ranks - low)
    change = np.empty(len(rows), dtype=bool)
    change[0] = True
    np.logical_or(rows[1:] != rows[:-1], scores[1:] != scores[:-1], out=change[1:])
    heads = np.flatnonzero(change)
    largest = np.maximum.accumulate(np.maximum.reduceat(keys, heads))
    smallest = np.minimum.reduceat(keys, heads)
    bad = largest[:-1] > smallest[1:]  # an earlier group of the row ranks below this one
    flagged = np.zeros(int(rows[-1]) + 1, dtype=bool)
    flagged[rows[heads[1:][bad]]] = True
    return np.flatnonzero(flagged)


RANK_CHECK_BLOCK = 1 << 18
""":func:`_rank_disagreements` looks at the run in blocks of whole queries of about this many
entries: its temporaries (several int64 arrays per entry) stay those of one block (1M entries:
a peak of 62 MB in one pass)."""


def _rank_disagreements(run: Any, ranks: np.ndarray) -> list[Any]:
    """Query ids (in run order) whose entries, read in rank order (stable), have a score going up.

    Vectorised, block by block of whole queries (:data:`RANK_CHECK_BLOCK` entries): only
    queries where the rank column is not already non-decreasing in the run's (score) order can
    disagree, and only those are sorted, all at once by (query, rank).
    """
    if hasattr(run, "query_offsets") and hasattr(run, "score_column"):
        (qids, starts), scores = run.query_offsets(), run.score_column()
    else:
        qids, starts, _, scores = run.arrays()
    scores = np.asarray(scores, dtype=np.float64)
    starts = np.asarray(starts, dtype=np.int64)
    if len(scores) < 2:
        return []
    found: list[int] = []
    first, n_queries = 0, len(starts) - 1
    while first < n_queries:
        end = int(np.searchsorted(starts, starts[first] + RANK_CHECK_BLOCK, side="right")) - 1
        end = min(max(end, first + 1), n_queries)  # at least one query
        lo, hi = int(starts[first]), int(starts[end])
        rows = _rank_disagreements_in(starts[first : end + 1] - lo, scores[lo:hi], ranks[lo:hi])
        found.extend((rows + first).tolist())
        first = end
    return [qids[i] for i in found]


def _rank_disagreements_in(starts: np.ndarray, scores: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """:func:`_rank_disagreements` of one block: the query rows (int64, ascending) of the block
    whose entries are ``starts[i]:starts[i + 1]`` of *scores* and *ranks*."""
    counts = np.diff(starts)
    none = np.zeros(0, dtype=np.int64)
    if len(scores) < 2:
        return none
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    same = rows[1:] == rows[:-1]
    down = same & (ranks[1:] < ranks[:-1])
    if not down.any():
        return none  # ranks follow the run's order, whose scores never go up within a query
    if _BY_SCORE_GROUPS:
        found = _rank_disagreements_by_groups(rows, scores, ranks)
        if found is not None:
            return found
    suspect = np.zeros(len(counts), dtype=bool)
    suspect[rows[1:][down]] = True
    which = np.flatnonzero(suspect)
    lengths = counts[which]
    width = int(lengths.max())
    if len(which) * width <= _PADDED_FACTOR * int(lengths.sum()) + 4096 * (_PADDED_FACTOR > 0):
        # one row per suspect query, padded: a stable row-wise sort by rank
        # the cells a query fills, row-major: a boolean mask places its entries in order
        valid = np.arange(width)[None, :] < lengths[:, None]
        entries = (starts[which][:, None] + np.arange(width, dtype=np.int64)[None, :])[valid]
        if len(entries) == valid.size:  # equal lengths: no padding
            keys = ranks[entries].reshape(valid.shape)
            grid = scores[entries].reshape(valid.shape)
        else:
            keys = np.full(valid.shape, np.iinfo(np.int64).max, dtype=np.int64)
            keys[valid] = ranks[entries]
            grid = np.full(valid.shape, -np.inf)
            grid[valid] = scores[entries]
        by_rank = np.argsort(keys, axis=1, kind="stable")
        ordered = np.take_along_axis(grid, by_rank, axis=1)
        up = (ordered[:, 1:] > ordered[:, :-1]) & valid[:, 1:]
        return which[up.any(axis=1)]
    entries = np.flatnonzero(suspect[rows])
    # stable by (query, rank): lexsort is stable, so equal ranks keep the run's order
    order = entries[np.lexsort((ranks[entries], rows[entries]))]
    r_rows, r_scores = rows[order], scores[order]
    up = (r_rows[1:] == r_rows[:-1]) & (r_scores[1:] > r_scores[:-1])
    return np.unique(r_rows[1:][up])


def check_findings(
    qrels: Any,
    run: Any,
    corpus: Any = None,
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
    trim_heap()  # each check's temporaries handed back before the next: see _memory
    out += check_judged_overlap(qrels, run)
    trim_heap()
    if corpus is not None:
        out += check_corpus_coverage(qrels, corpus, metadata=metadata)
        out += check_run_in_corpus(run, corpus)
    out += check_run_sorted(run)
    return out


def check_run_against_qrels(
    qrels: Any, run: Any, corpus: Any = None, *, metadata: Mapping[str, Any] | None = None
) -> list[str]:
    """The trap checks as printable lines (``[info] ...``, ``[warning] ...``); see :func:`check_findings`.

    The first line always gives the query overlap; the others are warnings. Each is also logged.
    """
    return [str(f) for f in check_findings(qrels, run, corpus, metadata=metadata)]


def query_findings(results: Any, profile: Any) -> list[Finding]:
    """Warnings about the query sets: run queries without judgments (ignored) and judged
    queries missing from the run (scored 0, or left out, as the profile says).

    Args:
        results: a :class:`~nuggetbench.measures.Results`.
        profile: the :class:`~nuggetbench.measures.Profile` it was computed under.
    """
    out = []
    if results.run_only_queries:
        n = len(results.run_only_queries)
        out.append(
            Finding(
                "warning",
                "run_only_queries",
                f"{n} run queries have no judgments and were ignored",
                {"queries": n},
            )
        )
    if results.missing_queries:
        n = len(results.missing_queries)
        scored = (
            "score 0" if profile.average_over != "run_and_qrels" else "are left out of the mean"
        )
        out.append(
            Finding(
                "warning",
                "missing_queries",
                f"{n} judged queries are missing from the run and {scored} "
                f"under profile {results.profile!r}",
                {"queries": n},
            )
        )
    return out
