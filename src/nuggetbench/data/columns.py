"""Column helpers of :class:`~nuggetbench.data.run.Run` and :class:`~nuggetbench.data.qrels.Qrels`:
ids as ``str`` arrays, factorised codes, the first occurrence of repeated pairs, sorted query
codes, and the repeated-pair check (named by the pair of the smallest codes)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from nuggetbench.data.lookup import (
    objects_at,
)
from nuggetbench.data.ranking import (
    _n_distinct,
)
from nuggetbench.errors import DuplicateError

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)


#: What a run does with a (query, doc) pair listed twice: ``"error"`` (trec_eval refuses them)
#: or ``"first"`` (the first occurrence wins; the later ones are dropped, with a warning).
def _arrived_sorted(qcodes: np.ndarray, scores: np.ndarray) -> bool:
    """True when each query's entries are contiguous with non-increasing scores (ties in any
    order, queries in any order): what a retriever's output normally looks like."""
    if len(scores) < 2:
        return True
    same = qcodes[1:] == qcodes[:-1]
    if (same & (scores[1:] > scores[:-1])).any():
        return False
    n_groups = int((~same).sum()) + 1
    return n_groups == _n_distinct(qcodes)


def _as_str_array(values: Iterable[Any]) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype == object:
        arr = values
        if len(arr) and not all(isinstance(v, str) for v in arr[:1]):
            arr = np.array([str(v) for v in arr], dtype=object)
        return arr
    if isinstance(values, np.ndarray):
        return values.astype(str).astype(object)
    return np.array([v if isinstance(v, str) else str(v) for v in values], dtype=object)


def _factorize_ints(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pandas.factorize`` of an int array, with numpy: ``(canonical, first)``, where *first*
    holds the distinct values in order of first appearance and ``first[canonical] == codes``."""
    codes = np.asarray(codes, dtype=np.int64)
    if not len(codes):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    distinct, where, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(where, kind="stable")
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[order] = np.arange(len(distinct), dtype=np.int64)
    return rank[inverse.reshape(-1)], distinct[order]


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(uniques, codes)`` by hashing (uniques in order of first appearance)."""
    if len(values) == 0:
        return np.array([], dtype=object), np.zeros(0, dtype=np.int64)
    import pandas as pd

    codes, uniques = pd.factorize(values)
    return np.asarray(uniques, dtype=object), codes.astype(np.int64, copy=False)


def _first_occurrences(
    qcodes: np.ndarray, dcodes: np.ndarray, uq: np.ndarray, du: np.ndarray, source: str | None
) -> np.ndarray | None:
    """Input positions to keep so that each (query, doc) pair occurs once (its first occurrence),
    or ``None`` when no pair repeats. Each repeated pair is logged as a warning naming the query,
    the document and its 1-based positions in the query's input order (a rank file's list)."""
    import pandas as pd

    if len(dcodes) < 2:
        return None
    frame = pd.DataFrame({"q": qcodes, "d": dcodes})
    repeated = frame.duplicated(keep="first").to_numpy()
    if not repeated.any():
        return None
    # 1-based position of each entry among its query's entries, in input order
    by_query = np.argsort(qcodes, kind="stable")
    counts = np.bincount(qcodes, minlength=len(uq))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.empty(len(qcodes), dtype=np.int64)
    position[by_query] = np.arange(len(qcodes)) - np.repeat(starts, counts) + 1
    involved = frame.duplicated(keep=False).to_numpy()
    where = f"{source}: " if source else ""
    groups = pd.Series(position[involved]).groupby([qcodes[involved], dcodes[involved]], sort=False)
    for (qc, dc), pos in groups:
        listed = ", ".join(str(int(p)) for p in pos.tolist())
        logger.warning(
            "%squery %r lists document %r %d times (positions %s); the first occurrence "
            "(position %d) is kept",
            where,
            uq[qc],
            objects_at(du, [dc])[0],
            len(pos),
            listed,
            int(pos.iloc[0]),
        )
    return np.flatnonzero(~repeated).astype(np.int64)


def sorted_query_codes(
    query_uniques: np.ndarray, query_codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(uniques sorted ascending, codes into them)`` of distinct query ids (object (u,), any
    order) and int codes (n,) into them; the same arrays (as int64 codes) when the uniques are
    sorted already."""
    qu = np.asarray(query_uniques, dtype=object)
    codes = np.asarray(query_codes, dtype=np.int64)
    perm = np.argsort(qu, kind="stable")
    if np.array_equal(perm, np.arange(len(qu))):
        return qu, codes
    remap = np.empty(len(qu), dtype=np.int64)
    remap[perm] = np.arange(len(qu), dtype=np.int64)
    return qu[perm], remap[codes]


def _distinct_in_blocks(qcodes: np.ndarray, dcodes: np.ndarray) -> bool:
    """True when each query's entries are one contiguous block, every block of one length (a
    fixed-depth run), and no block repeats a doc code: each block sorted as a row of one matrix
    (a quarter of the time of sorting every (query, doc) key). False otherwise, also when it
    cannot tell (the caller then sorts the keys)."""
    n = len(qcodes)
    bounds = np.flatnonzero(qcodes[1:] != qcodes[:-1]) + 1
    width = n // (len(bounds) + 1)
    if width < 2 or width * (len(bounds) + 1) != n:
        return False
    if not np.array_equal(bounds, np.arange(width, n, width)):
        return False
    heads = np.asarray(qcodes)[::width]
    if len(np.unique(heads)) != len(heads):  # a query in two blocks
        return False
    rows = np.sort(np.asarray(dcodes).reshape(len(heads), width), axis=1)
    return not (rows[:, 1:] == rows[:, :-1]).any()


def _check_duplicate_codes(
    qcodes: np.ndarray, dcodes: np.ndarray, uq: np.ndarray, du: np.ndarray, source: str | None
) -> None:
    """Raise DuplicateError naming a repeated (query, doc) pair, the one of the smallest
    (query code, doc code): the same pair whatever the order of the entries."""
    n = len(dcodes)
    if n < 2:
        return
    if _distinct_in_blocks(qcodes, dcodes):
        return
    nd = max(len(du), 1)
    if len(uq) * nd < 2**62:
        keys = qcodes * np.int64(nd) + dcodes
        ordered = np.sort(keys)
        repeated = ordered[1:] == ordered[:-1]
        if not repeated.any():
            return
        i = int(np.flatnonzero(keys == ordered[1:][repeated][0])[1])
    else:  # pragma: no cover - astronomically many ids
        import pandas as pd

        dup = pd.DataFrame({"q": qcodes, "d": dcodes}).duplicated(keep="first").to_numpy()
        if not dup.any():
            return
        i = int(np.flatnonzero(dup)[0])
    where = f"{source}: " if source else ""
    doc = objects_at(du, [dcodes[i]])[0]
    raise DuplicateError(
        f"{where}query {uq[qcodes[i]]!r} retrieves document {doc!r} more than once; "
        "a run may list each (query, doc) pair once: remove the duplicate or fuse the scores first, "
        "or keep the first occurrence (duplicates='first'; nuggetbench evaluate --duplicates first)",
        key=(str(uq[qcodes[i]]), str(doc)),
    )
