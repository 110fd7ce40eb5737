"""Measures averaged over judgment groups (trec_eval's ``map_avgjg``, ``P_avgjg``,
``Rprec_mult_avgjg``: ``m_map_avgjg.c``, ``m_P_avgjg.c``, ``m_Rprec_mult_avgjg.c``).

A query judged by several groups (assessors) gets, for each measure, the mean of the values
computed against each group's judgments that judge it; the means over queries follow as usual
(sums for counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from nuggetbench.errors import InputError
from nuggetbench.measures.compute import aggregate_values, measure_pairs, score
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.profiles import Profile, get_profile
from nuggetbench.measures.registry import get_family
from nuggetbench.measures.results import Results

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.data.qrels import Qrels
    from nuggetbench.data.run import Run

__all__ = ["evaluate_judgment_groups"]


def evaluate_judgment_groups(
    groups: Mapping[str, Qrels],
    run: Run,
    measures: Iterable[str | Measure],
    *,
    profile: str | Profile = "trec_eval",
) -> Results:
    """Score *run* against every judgment group and average each query over its groups.

    Args:
        groups: ``{group: Qrels}`` (:func:`nuggetbench.data.formats.qrels_jg.read_qrels_jg`).
        run: the run.
        measures: as :func:`~nuggetbench.measures.compute`.
        profile: the profile of every group's evaluation (default ``"trec_eval"``).

    Returns:
        :class:`Results` over the union of the groups' evaluated queries (sorted); a query's
        value is the mean over the groups that evaluate it.

    Raises:
        InputError: *groups* is empty; as :func:`~nuggetbench.measures.compute` otherwise.
    """
    if not groups:
        raise InputError("no judgment group given")
    prof = get_profile(profile)
    keyed = dict(measure_pairs(list(measures)))  # translated once, for every group
    families = {k: get_family(m.family) for k, m in keyed.items()}
    per_group = [score(qrels, run, keyed, profile=prof) for qrels in groups.values()]
    keys = per_group[0].measures
    query_ids = sorted({q for res in per_group for q in res.query_ids})
    index = {q: i for i, q in enumerate(query_ids)}
    counts = np.zeros(len(query_ids))
    sums = {k: np.zeros(len(query_ids)) for k in keys}
    for res in per_group:
        rows = np.array([index[q] for q in res.query_ids], dtype=np.int64)
        counts[rows] += 1
        for k in keys:
            sums[k][rows] += res.per_query[k]
    per_query, means = {}, {}
    for k in keys:
        values = sums[k] / counts
        values.setflags(write=False)
        per_query[k] = values
        means[k] = aggregate_values(values, families[k].aggregate)
    first = per_group[0]
    return Results(
        query_ids=query_ids,
        measures=list(keys),
        per_query=per_query,
        means=means,
        profile=prof.name,
        run_only_queries=sorted(set.intersection(*(set(r.run_only_queries) for r in per_group))),
        missing_queries=sorted(set.intersection(*(set(r.missing_queries) for r in per_group))),
        provenance={**first.provenance, "judgment_groups": list(groups)},
    )
