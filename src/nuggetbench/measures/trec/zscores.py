"""trec_eval's standardised measures (``trec_eval -Z zscores_file``, ``convert_zscores.c``).

Each query's value v of a measure becomes z = (v - mean) / stddev, with the mean and standard
deviation of that measure on that query from a reference set of runs (the z-score file,
:func:`nuggetbench.data.formats.zscores.read_zscores`). Then the means are taken over the z
values as over the raw ones (a sum for counts, the geometric mean of max(z, 1e-5) for ``gm_map``
and ``gm_bpref``, which trec_eval standardises on its per-query log value). ``num_q`` stays the
number of queries. Where the file has no line for the query and measure, or its stddev is 0 and
the value differs from its mean, z is :data:`MISSING_ZSCORE` (trec_eval's -1000000); a stddev of
0 with the value at the mean gives 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The z values and their means.

    Args:
        aggregates: ``{trec_eval name: how its mean is taken}`` for the measures to
            standardise: ``"mean"``, ``"sum"``, ``"gmean"`` (a family's ``aggregate``) or
            ``"count"`` (``num_q``: the number of queries, not standardised).
        per_query: ``{trec_eval name: float64 (Q,)}`` raw values aligned with *query_ids*.
        query_ids: the evaluated queries (Q).
        zscores: ``{query: {trec_eval name: (mean, stddev)}}``.

    Returns:
        ``({name: float64 (Q,) z values}, {name: mean})``; a ``"count"`` measure keeps its
        values and its mean is Q.
    """
    out: dict[str, np.ndarray] = {}
    means: dict[str, float] = {}
    for name, how in aggregates.items():
        raw = np.asarray(per_query[name], dtype=np.float64)
        if how == "count":
            out[name], means[name] = raw, float(len(query_ids))
            continue
        if how == "gmean":  # trec_eval keeps log(max(v, 1e-5)) per query and exp(mean) at the end
            raw = np.log(np.maximum(raw, MIN_GEO_MEAN))
        z = np.array([_z(v, zscores.get(q, {}).get(name)) for q, v in zip(query_ids, raw)])
        out[name] = z
        if how == "sum":
            means[name] = float(z.sum())
        elif how == "gmean":
            means[name] = float(np.exp(z.mean())) if len(z) else 0.0
        else:
            means[name] = float(z.mean()) if len(z) else 0.0
    return out, means


def _z(value: float, reference: tuple[float, float] | None) -> float:
    if reference is None:
        return MISSING_ZSCORE
    mean, stddev = reference
    if stddev:
        return (value - mean) / stddev
    return 0.0 if value == mean else MISSING_ZSCORE
