"""Trap checks on ids: the judged queries the run answers, and ids that differ only by type,
case or white space (``"1"`` vs ``"01"`` vs ``"1.0"``, ``" 3"``, ``"Q1"`` vs ``"q1"``): the same
item on both sides, never matched (the sparse-retrieval evaluation recipe's traps)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from nuggetbench.data import arrow as _arrow
from nuggetbench.data.checks.coverage import (
    _judged_doc_ids_any_order,
    _missing_judged_docs,
    _run_doc_uniques,
)
from nuggetbench.data.checks.findings import Finding
from nuggetbench.data.checks.findings import emit as _emit
from nuggetbench.data.lookup import (
    arrow_strings,
    as_objects,
    is_in,
    objects_at,
)
from nuggetbench.data.qrels import Qrels
from nuggetbench.data.run import Run

TINY_OVERLAP = 0.1
"""Below this fraction of judged queries present in the run, the overlap is called tiny."""

_NUMBER = re.compile(r"^[+-]?\d+(\.0*)?$")


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


def _qrels_ids(qrels: Qrels) -> list[str]:
    return [str(q) for q in qrels.query_ids]


def _run_ids(run: Run) -> list[str]:
    return [str(q) for q in run.query_ids]


def check_query_overlap(qrels: Qrels, run: Run, *, tiny: float = TINY_OVERLAP) -> list[Finding]:
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


def check_id_formats(qrels: Qrels, run: Run) -> list[Finding]:
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
                f"ids with surrounding white space: {', '.join(repr(s) for s in spaced[:3])}: "
                "they match no id written without it, so those judgments or results count for "
                "nothing; strip them on both sides",
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
