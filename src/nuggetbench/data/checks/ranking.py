"""Trap check on order: a rank column that contradicts the scores, or that orders documents of
one constant score (trec_eval, and nuggetbench, rank by score, ties by doc id descending)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nuggetbench.data.checks.findings import Finding
from nuggetbench.data.checks.findings import emit as _emit
from nuggetbench.data.run import Run


def check_run_sorted(run: Run) -> list[Finding]:
    """Whether a rank column the input carried agrees with the order the run is scored in.

    Order carries meaning only in a rank column (``read_run(..., keep_rank=True)`` keeps a TREC
    file's); a dict, a data frame, a list of ScoredDoc objects or the lines of a file have no
    order to respect: the run is ranked by score (descending, ties by doc id descending, as
    trec_eval), and nothing is said. Two findings:

    * ``rank_disagrees``: in some queries the rank column contradicts the scores (e.g.
      distances written as scores); trec_eval ignores the rank column, so those queries are
      scored in score order, which can be the reverse of the system's;
    * ``constant_scores``: in some queries every document has the same score and the rank
      column orders them otherwise than the tie order (doc id descending), so the scores carry
      no order and the measures reflect the doc ids, not the system's ranks.

    ``Run.input_sorted`` (the input's arrival order) is kept on the run but never warned about.

    Returns:
        ``rank_disagrees`` and/or ``constant_scores`` warnings (none without a rank column).
    """
    out: list[Finding] = []
    ranks = run.input_ranks
    if ranks is None or not len(ranks):
        return _emit(out)
    ranks = np.asarray(ranks)
    bad = [str(q) for q in _rank_disagreements(run, ranks)]
    if bad:
        out.append(
            Finding(
                "warning",
                "rank_disagrees",
                f"in {len(bad)} queries (e.g. {', '.join(bad[:3])}) the rank column "
                "contradicts the scores; ranks are ignored (trec_eval), so these "
                "queries are scored in score order, not rank order, and their values measure "
                "another ranking than the system's (only the ndeval profile's diversity "
                "measures follow the rank column); write scores where higher is better",
                {"queries": len(bad)},
            )
        )
    flat = [str(q) for q in _constant_disagreements(run, ranks)]
    if flat:
        out.append(
            Finding(
                "warning",
                "constant_scores",
                f"in {len(flat)} queries (e.g. {', '.join(flat[:3])}) every document has the "
                "same score and the rank column orders them otherwise; trec_eval breaks the "
                "ties by doc id (descending), so these queries' values measure the doc ids' "
                "order, not the system's ranks: write scores that follow the ranks",
                {"queries": len(flat)},
            )
        )
    return _emit(out)


def _constant_disagreements(run: Run, ranks: np.ndarray) -> list[Any]:
    """Query ids (run order) with at least two entries, one score for all of them, and a rank
    column that is not non-decreasing in the run's order (which is doc id descending there)."""
    (qids, starts), scores = run.query_offsets(), run.score_column()
    scores = np.asarray(scores, dtype=np.float64)
    starts = np.asarray(starts, dtype=np.int64)
    if len(scores) < 2:
        return []
    down = np.flatnonzero(ranks[1:] < ranks[:-1]) + 1  # entries ranked above the one before
    if not len(down):
        return []
    rows = np.searchsorted(starts, down, side="right") - 1
    rows = np.unique(rows[down > starts[rows]])  # the earlier entry is of the same query
    lo, hi = starts[rows], starts[rows + 1] - 1
    flat = scores[lo] == scores[hi]  # scores never go up within a query: first == last
    return [qids[i] for i in rows[flat]]


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
    rank than an entry of strictly lower score. So each entry is compared with the largest rank
    of the row's entries before its group of equal scores: one running maximum over keys
    ``row * span + rank`` (a row's keys all exceed the earlier rows', so the maximum restarts at
    each row), read just before the entry, or before its group's head for an entry tied with the
    one before it. Elementwise passes only (per-group ``reduceat`` cost more when scores are
    mostly distinct). ``None`` when the keys would not fit in int64 (the caller sorts instead).
    """
    low, high = int(ranks.min()), int(ranks.max())
    span = high - low + 1
    if (int(rows[-1]) + 1) * span >= 2**62:
        return None
    keys = rows * np.int64(span)
    keys += ranks - low
    running = np.maximum.accumulate(keys)
    bad = np.empty(len(rows), dtype=bool)
    bad[0] = False
    np.greater(running[:-1], keys[1:], out=bad[1:])  # a higher entry ranks below this one
    same = np.flatnonzero((scores[1:] == scores[:-1]) & (rows[1:] == rows[:-1])) + 1
    if len(same):  # an entry tied with the one before: compared with the entries before its group
        starts = np.ones(len(same), dtype=bool)
        starts[1:] = same[1:] - 1 != same[:-1]
        head = np.maximum.accumulate(np.where(starts, same - 1, 0))
        bad[same] = (head > 0) & (running[np.maximum(head - 1, 0)] > keys[same])
    flagged = np.zeros(int(rows[-1]) + 1, dtype=bool)
    flagged[rows[bad]] = True
    return np.flatnonzero(flagged)


RANK_CHECK_BLOCK = 1 << 18
""":func:`_rank_disagreements` looks at the run in blocks of whole queries of about this many
entries: its temporaries (several int64 arrays per entry) stay those of one block (1M entries:
a peak of 62 MB in one pass)."""


def _rank_disagreements(run: Run, ranks: np.ndarray) -> list[Any]:
    """Query ids (in run order) whose entries, read in rank order (stable), have a score going up.

    Vectorised, block by block of whole queries (:data:`RANK_CHECK_BLOCK` entries): only
    queries where the rank column is not already non-decreasing in the run's (score) order can
    disagree, and only those are sorted, all at once by (query, rank).
    """
    (qids, starts), scores = run.query_offsets(), run.score_column()
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
