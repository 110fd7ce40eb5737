"""trec_eval's standardised measures (``trec_eval -Z zscores_file``, ``convert_zscores.c``).

Each query's value v of a measure becomes z = (v - mean) / stddev, with the mean and standard
deviation of that measure on that query from a reference set of runs (the z-score file,
:func:`nuggetbench.data.formats.zscores.read_zscores`). Where the file has no line for the query
and measure, or its stddev is 0 and the value differs from its mean, z is
:data:`MISSING_ZSCORE` (trec_eval's -1000000); a stddev of 0 with the value at the mean gives 0.

Then the summary is taken over the z values as trec_eval 10.0 takes it over the raw ones
(``trec_eval.c``: convert, accumulate, then each measure's ``calc_avg``):

* ``"mean"`` (``te_calc_avg_meas_s``): the sum of the z values, in query order, over the number
  of queries;
* ``"sum"`` (counts such as ``num_ret``, ``num_rel_ret``, ``prefs_num_prefs_poss``;
  ``te_calc_avg_meas_empty``): the sum of the z values;
* ``"gmean"`` (``gm_map``, ``gm_bpref``; ``te_calc_avg_meas_s_gm``): the per-query value is
  log(max(v, 1e-5)) before it is standardised; the summary is exp(mean of the z values);
* ``"count"`` (``num_q``; ``te_calc_avg_num_q``): the number of queries, whatever z says;
* ``"total"`` (``num_rel`` under ``-c``; ``te_calc_avg_num_rel``): the raw total the caller
  gives (every judgment with grade > 0), whatever z says.

Queries named in *unevaluated* (trec_eval 9.0.8 under ``-c``: judged queries missing from the
run, which 9.0.8 never evaluates) add nothing to a sum, and log(1e-5) to a geometric mean, as
9.0.8's ``calc_avg`` patches them in after the z values.

Sums are taken one value after the other in query order, as trec_eval adds them (a pairwise sum
can differ in the last bit, and so in the fourth decimal printed).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from nuggetbench.measures.registry import MIN_GEO_MEAN

__all__ = ["MISSING_ZSCORE", "standardise"]

#: The z value of a (query, measure) the z-score file cannot standardise (trec_eval's).
MISSING_ZSCORE = -1000000.0


def standardise(
    aggregates: Mapping[str, str],
    per_query: Mapping[str, np.ndarray],
    query_ids: Sequence[str],
    zscores: Mapping[str, Mapping[str, tuple[float, float]]],
    *,
    totals: Mapping[str, float] | None = None,
    unevaluated: Collection[str] = (),
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The z values and their summaries (see the module docstring).

    Args:
        aggregates: ``{trec_eval name: how its summary is taken}`` for the measures to
            standardise: ``"mean"``, ``"sum"``, ``"gmean"`` (a family's ``aggregate``),
            ``"count"`` (``num_q``) or ``"total"`` (a raw total from *totals*).
        per_query: ``{trec_eval name: float64 (Q,)}`` raw values aligned with *query_ids*.
        query_ids: the evaluated queries (Q), in trec_eval's order.
        zscores: ``{query: {trec_eval name: (mean, stddev)}}``.
        totals: ``{name: value}`` of the ``"total"`` measures.
        unevaluated: queries trec_eval never evaluated (9.0.8 under ``-c``): no z value
            counts for them.

    Returns:
        ``({name: float64 (Q,) z values}, {name: summary})``; a ``"count"`` measure keeps its
        values and its summary is Q; a ``"total"`` one is z-standardised per query and its
        summary is its total.
    """
    out: dict[str, np.ndarray] = {}
    means: dict[str, float] = {}
    skipped = [q in unevaluated for q in query_ids] if unevaluated else [False] * len(query_ids)
    for name, how in aggregates.items():
        raw = np.asarray(per_query[name], dtype=np.float64)
        if how == "count":
            out[name], means[name] = raw, float(len(query_ids))
            continue
        if how == "gmean":  # trec_eval keeps log(max(v, 1e-5)) per query and exp(mean) at the end
            raw = np.log(np.maximum(raw, MIN_GEO_MEAN))
        z = np.array(
            [_z(v, zscores.get(q, {}).get(name)) for q, v in zip(query_ids, raw.tolist())],
            dtype=np.float64,
        )
        out[name] = z
        total = 0.0
        for value, skip in zip(z.tolist(), skipped):
            if not skip:
                total += value
            elif how == "gmean":
                total += math.log(MIN_GEO_MEAN)
        if how == "total":
            means[name] = float((totals or {})[name])
        elif how == "sum":
            means[name] = total
        elif how == "gmean":
            with np.errstate(over="ignore"):  # exp of a large mean is inf, as C's exp
                means[name] = float(np.exp(total / len(z))) if len(z) else 0.0
        else:
            means[name] = total / len(z) if len(z) else 0.0
    return out, means


def _z(value: float, reference: tuple[float, float] | None) -> float:
    if reference is None:
        return MISSING_ZSCORE
    mean, stddev = reference
    if stddev:
        with np.errstate(all="ignore"):  # C's double arithmetic: overflow gives inf, 0/0 NaN
            return float(np.float64(value - mean) / np.float64(stddev))
    return 0.0 if value == mean else MISSING_ZSCORE
