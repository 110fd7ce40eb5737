"""Macro averages over groups of queries: each group evaluated on its own, then the groups'
means averaged (BEIR and MTEB report ``beir/cqadupstack`` as the mean of its 12 forums' scores).

A query's group is the part of its id before the separator (``"android/123"`` -> ``"android"``),
so the queries and documents of a grouped dataset carry ``<group><sep><id>`` ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from nuggetbench.errors import InputError
from nuggetbench.measures.compute import Measures, measure_pairs, score
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.profiles import Profile, get_profile
from nuggetbench.measures.registry import get_family
from nuggetbench.measures.results import Results

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.data.qrels import Qrels
    from nuggetbench.data.run import Run

__all__ = ["evaluate_groups", "group_of"]


def group_of(query_ids: Iterable[str], sep: str = "/") -> list[str]:
    """The group of each id: the part before the first *sep* (``""`` when there is none)."""
    return [q.split(sep, 1)[0] if sep in q else "" for q in query_ids]


def evaluate_groups(
    qrels: Qrels,
    run: Run,
    measures: Measures,
    *,
    profile: str | Profile | None = None,
    sep: str = "/",
) -> tuple[Results, dict[str, Results]]:
    """Evaluate each group of *qrels*' queries on its own and average the groups' means.

    Args:
        qrels, run: judgments and run whose query ids are ``<group><sep><id>``.
        measures: as :func:`~nuggetbench.measures.compute`.
        profile: the profile every group is evaluated under (its averaging and ties apply
            inside each group).
        sep: the separator between group and id.

    Returns:
        ``(combined, per_group)``: *per_group* maps each group (sorted) to its own
        :class:`Results`; *combined* holds every group's per-query rows (sorted ids) and, as its
        means, the unweighted mean of the groups' means (sums for count families), rounded as
        the profile rounds (``options["round_means"]``). Run queries of no judged group are
        listed among its run-only queries.

    Raises:
        InputError: the run has no query of some judged group (that group would have no score;
            evaluate the groups present one by one instead), or *qrels* has no grouped id.
    """
    prof = get_profile(profile)
    keyed = dict(measure_pairs(measures))  # translated once, for every group
    judged = list(qrels.query_ids)
    groups = sorted(set(group_of(judged, sep)))
    if not groups or groups == [""]:
        raise InputError(f"no query id of the qrels has a group prefix ('<group>{sep}<id>')")
    run_ids = list(run.query_ids)
    run_groups = group_of(run_ids, sep)
    absent = [g for g in groups if g not in set(run_groups)]
    if absent:
        raise InputError(
            f"the run has no query of {len(absent)} of the {len(groups)} groups "
            f"({', '.join(absent)}); query ids must read '<group>{sep}<id>' (e.g. "
            f"'{groups[0]}{sep}<query id>'): the mean over groups needs every group, or "
            "evaluate the groups one by one"
        )
    judged_groups = group_of(judged, sep)
    per_group: dict[str, Results] = {}
    for g in groups:
        q_ids = [q for q, gg in zip(judged, judged_groups) if gg == g]
        r_ids = [q for q, gg in zip(run_ids, run_groups) if gg == g]
        per_group[g] = score(
            qrels.filter_queries(q_ids), run.filter_queries(r_ids), keyed, profile=prof
        )
    stray = [q for q, g in zip(run_ids, run_groups) if g not in groups]
    return _combine(per_group, keyed, prof, stray), per_group


def _combine(
    per_group: dict[str, Results], keyed: dict[str, Measure], prof: Profile, stray: list[str]
) -> Results:
    first = next(iter(per_group.values()))
    means: dict[str, float] = {}
    for m in first.measures:
        values = [r.means[m] for r in per_group.values()]
        aggregate = get_family(keyed[m].family).aggregate
        mean = float(np.sum(values)) if aggregate == "sum" else float(np.mean(values))
        digits = prof.options.get("round_means")
        means[m] = mean if digits is None else round(mean, int(digits))
    ordered = sorted((q, g, i) for g, r in per_group.items() for i, q in enumerate(r.query_ids))
    per_query = {
        m: np.array([per_group[g].per_query[m][i] for _, g, i in ordered], dtype=np.float64)
        for m in first.measures
    }
    return Results(
        query_ids=[q for q, _, _ in ordered],
        measures=list(first.measures),
        per_query=per_query,
        means=means,
        profile=f"{prof.name}, mean of {len(per_group)} groups",
        run_only_queries=sorted(
            stray + [q for r in per_group.values() for q in r.run_only_queries]
        ),
        missing_queries=sorted(q for r in per_group.values() for q in r.missing_queries),
        provenance={**first.provenance, "groups": list(per_group)},
    )
