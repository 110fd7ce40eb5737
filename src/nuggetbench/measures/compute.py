"""``score(qrels, run, measures, *, profile)``: the one entry point of the measures layer."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from nuggetbench._version import __version__
from nuggetbench.errors import InputError
from nuggetbench.measures.context import EvalContext
from nuggetbench.measures.measure import Measure, _split_top_level
from nuggetbench.measures.params import SHARED
from nuggetbench.measures.profiles import DEFAULT_PROFILE, Profile, get_profile
from nuggetbench.measures.registry import MIN_GEO_MEAN, get_family
from nuggetbench.measures.results import LazyProvenance, Results
from nuggetbench.measures.spellings import parse_measure, parse_measures
from nuggetbench.measures.trec.names import is_trec_spec, parse_key, trec_selection

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.data.qrels import Qrels
    from nuggetbench.data.run import Run

logger = logging.getLogger(__name__)

__all__ = [
    "aggregate_values",
    "score",
    "score_quietly",
    "log_query_sets",
    "measure_keys",
    "measure_pairs",
    "plain_measures",
    "restrict",
    "restrict_common",
    "run_depth",
]


#: What the measures layer takes as measures: one string (several separated by spaces or
#: commas), a :class:`Measure`, a list of them, or ``{key: Measure}`` pairs already translated
#: (:func:`measure_pairs`' output, so a caller translates its list once).
Measures = str | Measure | Iterable[str | Measure] | Mapping[str, Measure]


def measure_pairs(measures: Measures) -> list[tuple[str, Measure]]:
    """``(key, Measure)`` pairs of *measures* as :func:`score` keys its results: where a list of
    measures enters, each name is translated once into a :class:`Measure`.

    A key is the measure as given (stripped; duplicates dropped). trec_eval's specs
    (``all_trec``, ``P.5,7,3``: :func:`~nuggetbench.measures.trec.names.is_trec_spec`) expand
    to trec_eval's output names in its order (``P_5``...); its text measures (``runid``,
    ``relstring``) have no number and are left out. In one string, trec_eval's specs are
    separated by spaces (``"all_trec P.5,7"``), since their lists hold commas. A mapping
    ``{key: Measure}`` is taken as translated (each value validated; it may be empty, as the
    translation of trec_eval's text measures alone, ``runid``, is).

    Raises:
        UnknownNameError, SpecError: as :func:`~nuggetbench.measures.spellings.parse_measure`;
            also when nothing is given.
    """
    if isinstance(measures, Mapping):  # translated already (may be empty: -m runid)
        return [(str(key), parse_measure(m)) for key, m in measures.items()]
    if isinstance(measures, str) and any(
        is_trec_spec(p) for p in _split_top_level(measures, " \t\n")
    ):
        measures = [p for p in _split_top_level(measures, " \t\n") if p.strip()]
    if not isinstance(measures, (str, Measure)):
        measures = list(measures)
        if any(is_trec_spec(m) for m in measures):
            entries = trec_selection(measures)
            return [(e.key, e.measure) for e in entries if e.measure is not None]
    if isinstance(measures, str):
        parsed = parse_measures(measures)

        keys = [p.strip() for p in _split_top_level(measures, " ,\t\n") if p.strip()]
        pairs = list(zip(keys, parsed))
    elif isinstance(measures, Measure):
        pairs = [(str(measures), parse_measure(measures))]
    else:
        items = list(measures)
        pairs = [
            (item.strip() if isinstance(item, str) else str(item), parse_key(item))
            for item in items
        ]
        if not pairs:
            parse_measures([])  # raises SpecError: no measures given
    seen: dict[str, Measure] = {}
    for key, measure in pairs:
        seen.setdefault(key, measure)
    return list(seen.items())


def plain_measures(measures: Iterable[str | Measure]) -> list[str]:
    """:func:`measure_keys` with trec_eval's specs expanded to the names trec_eval prints
    (``P.5,10`` -> ``P_5``, ``P_10``; ``all_trec`` -> every measure it names), the keys
    ``evaluate`` shows, for callers that keep one list for evaluating and for reading the
    results back (``run``, ``compare``); each of them is read back by :func:`parse_key`.

    Raises:
        UnknownNameError, SpecError: as :func:`measure_keys`.
    """
    out: dict[str, None] = {}
    for item in measure_keys(list(measures)):
        if is_trec_spec(item):
            for entry in trec_selection([item]):
                if entry.measure is not None:
                    out.setdefault(entry.key, None)
        else:
            out.setdefault(item, None)
    return list(out)


def _with_defaults(measure: Measure, profile: Profile) -> Measure:
    """*measure* with the profile's ``measure_defaults`` (trec_eval ``-l``, ``-J``) for the
    parameters its family takes and the measure does not set: only a parameter declared as the
    shared one (:data:`~nuggetbench.measures.params.SHARED`, trec_eval's meaning), so that
    ``NumRet(rel=...)`` (ir_measures' filter) or cwl_eval's ``min_rel`` keep their own defaults."""
    defaults = profile.options.get("measure_defaults") or {}
    family = get_family(measure.family)
    given = {k for k, _ in measure.params}
    extra = tuple(
        (k, v)
        for k, v in defaults.items()
        if family.params.get(k) is SHARED.get(k) and k in family.params and k not in given
    )
    return measure(**dict(extra)) if extra else measure


def aggregate_values(values: np.ndarray, how: str) -> float:
    """One number of float (Q,) *values*: ``how`` = ``"mean"``, ``"sum"`` or ``"gmean"``
    (trec_eval's geometric mean of max(v, 1e-5), meas_avg.c)."""
    if how == "sum":
        return float(values.sum())
    if how == "gmean":
        return float(np.exp(np.log(np.maximum(values, MIN_GEO_MEAN)).mean()))
    return float(values.mean())


def measure_keys(measures: Measures) -> list[str]:
    """The measures as callers should keep them: each string without surrounding whitespace
    (``" nDCG@10 "`` -> ``"nDCG@10"``), a :class:`Measure` as its canonical string, repeats
    dropped. For plain measures these are the keys :func:`score` gives its
    :class:`Results`, so stray whitespace can never make a lookup miss; trec_eval's specs
    (``all_trec``, ``P.5,7,3``) are kept as given, and :func:`score` expands them into
    trec_eval's output names (``Results.measures``; see :func:`measure_pairs`).

    Raises:
        UnknownNameError, SpecError: as :func:`parse_measure` (also when nothing is given).
    """
    if isinstance(measures, (str, Measure, Mapping)):
        return [key for key, _ in measure_pairs(measures)]
    measures = list(measures)
    measure_pairs(measures)  # validates (trec_eval's specs are kept as given below)
    out: dict[str, None] = {}
    for item in measures:
        out.setdefault(item.strip() if isinstance(item, str) else str(item), None)
    return list(out)


def _provenance(qrels: Any, run: Any, profile: Profile) -> LazyProvenance:
    """Names, profile, version and time now; the fingerprints when first read (they cost a pass
    over the run: ~0.1 s per million entries)."""

    def fingerprint_of(obj: Any) -> Callable[[], Any]:
        method = getattr(obj, "fingerprint", None)
        return method if callable(method) else (lambda: None)

    return LazyProvenance(
        {
            "run": getattr(run, "name", None),
            "run_fingerprint": None,
            "qrels": getattr(qrels, "name", None),
            "qrels_fingerprint": None,
            "profile": profile.name,
            "profile_description": profile.description,
            "run_depth": run_depth(run),
            "nuggetbench_version": __version__,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        {"run_fingerprint": fingerprint_of(run), "qrels_fingerprint": fingerprint_of(qrels)},
    )


def run_depth(run: Any) -> int | None:
    """The most entries one query of *run* holds (its depth: 0 when it holds none; ``None`` for
    an object without ``lengths``)."""
    lengths = getattr(run, "lengths", None)
    if not callable(lengths):
        return None
    counts = lengths()
    return int(counts.max()) if len(counts) else 0


def score(
    qrels: Qrels,
    run: Run,
    measures: Measures,
    *,
    profile: str | Profile = DEFAULT_PROFILE,
) -> Results:
    """Score *run* against *qrels* on *measures*.

    Args:
        qrels: the judgments (:class:`~nuggetbench.data.Qrels`).
        run: the run (:class:`~nuggetbench.data.Run`); it is not modified.
        measures: measure strings (``"nDCG@10"``, ``"P(rel=2)@5"``) or :class:`Measure` values,
            or one string with several separated by spaces/commas (``"nDCG@10 AP R@100"``),
            or ``{key: Measure}`` pairs already translated (:func:`measure_pairs`): the results
            are keyed by the keys.
        profile: a profile name or :class:`Profile`: ``"trec_eval -c"`` (default: every judged
            query counts, a query missing from the run scores 0) or ``"trec_eval"`` (only
            queries in both), or one registered by another module.

    Returns:
        :class:`Results` with per-query values (rows = evaluated queries, sorted), the means
        (sums for counts), the run-only queries ignored, the judged queries missing from the
        run, and provenance.

    Raises:
        UnknownNameError: unknown measure family or profile (nearest name suggested).
        SpecError: a malformed measure string or parameter.
        IdMismatchError: run and qrels share no query id (with a hint when ids differ only by
            format, e.g. ``"1"`` vs ``"01"``).
    """
    results = score_quietly(qrels, run, measures, profile=profile)
    log_query_sets(results, profile)
    return results


def restrict(results: Results, query_ids: Iterable[str], profile: str | Profile) -> Results:
    """*results* on some of its queries (``--average-over common``): the per-query values of
    *query_ids* (kept in *results*' order), the means taken again as :func:`score` takes them
    under *profile* over those queries (the profile's mean, a sum for counts, a geometric
    mean for ``gm_*``). The queries left out are no longer missing; the provenance records
    ``average_over: common``.

    Raises:
        InputError: *query_ids* holds a query *results* does not hold, or holds none.
    """
    prof = get_profile(profile)
    wanted = {str(q) for q in query_ids}
    unknown = wanted - set(results.query_ids)
    if unknown or not wanted:
        raise InputError(
            f"cannot restrict results of {len(results.query_ids)} queries to {len(wanted)} "
            f"queries ({len(unknown)} not among them, e.g. {sorted(unknown)[:3]})"
        )
    keep = np.array([q in wanted for q in results.query_ids])
    families = {k: get_family(m.family) for k, m in measure_pairs(results.measures)}
    per_query, means = {}, {}
    for key in results.measures:
        values = results.per_query[key][keep]
        values.setflags(write=False)
        per_query[key] = values
        family = families[key]
        if family.aggregate == "mean":
            means[key] = prof.mean(family.name, values, len(wanted))
        else:
            means[key] = aggregate_values(values, family.aggregate)
    return Results(
        query_ids=[q for q in results.query_ids if q in wanted],
        measures=list(results.measures),
        per_query=per_query,
        means=means,
        profile=results.profile,
        run_only_queries=list(results.run_only_queries),
        missing_queries=[q for q in results.missing_queries if q in wanted],
        provenance={**dict(results.provenance), "average_over": "common"},
    )


def restrict_common(
    results: dict[str, Results], profile: str | Profile
) -> tuple[dict[str, Results], int]:
    """Each system's *results* (by name) on the queries every system's run has, with
    :func:`restrict` (``--average-over common``), and how many evaluated queries were left out.

    Raises:
        InputError: no evaluated query is in every system's run.
    """
    sets = [set(r.query_ids) - set(r.missing_queries) for r in results.values()]
    keep = set.intersection(*sets)
    every = set().union(*(r.query_ids for r in results.values()))
    if not keep:
        raise InputError(
            f"--average-over common: none of the {len(every)} evaluated queries is in every "
            "system's run; use --average-over qrels (a query a run lacks scores 0)"
        )
    kept = {
        n: restrict(r, [q for q in r.query_ids if q in keep], profile) for n, r in results.items()
    }
    return kept, len(every - keep)


def log_query_sets(results: Results, profile: str | Profile = DEFAULT_PROFILE) -> None:
    """Log (info) the run queries ignored and the judged queries absent from the run, as
    :func:`score` does after computing *results* under *profile*."""
    if results.run_only_queries:
        logger.info(
            "%d run queries have no judgments and were ignored", len(results.run_only_queries)
        )
    if results.missing_queries:
        logger.info(
            "%d judged queries are absent from the run (%s)",
            len(results.missing_queries),
            "scored on an empty ranking"
            if get_profile(profile).average_over == "qrels"
            else "left out",
        )


def score_quietly(
    qrels: Qrels,
    run: Run,
    measures: Measures,
    *,
    profile: str | Profile = DEFAULT_PROFILE,
) -> Results:
    """:func:`score` without its log lines (:func:`log_query_sets` writes them): for a caller
    that computes the results in a thread and logs in order afterwards
    (:func:`nuggetbench.evaluation.evaluate_dataset`). Same arguments, value and errors."""
    prof = get_profile(profile)
    keyed = [(k, _with_defaults(m, prof)) for k, m in measure_pairs(measures)]
    ctx = EvalContext(qrels, run, prof)
    n = len(ctx.query_ids)
    if n == 0:
        raise InputError(
            f"profile {prof.name!r} selects no query to evaluate ({len(ctx.qrels)} judged queries, "
            f"{len(ctx.run)} run queries): check the qrels (e.g. the birco profile needs a query "
            "with a grade >= 1 document) or choose another --profile"
        )
    per_query: dict[str, np.ndarray] = {}
    means: dict[str, float] = {}
    for key, measure in keyed:
        family = get_family(measure.family)
        ctx.family = family.name  # ctx.ranked() uses the profile's tie order for this family
        values = np.asarray(family.compute(ctx, measure), dtype=np.float64)
        if values.shape != (n,):
            raise RuntimeError(
                f"measure family {family.name} returned shape {values.shape} for {n} queries (a bug in the family)"
            )
        if prof.scale != 1.0 and family.scalable:
            values = values * prof.scale
        values.setflags(write=False)
        per_query[key] = values
        if family.aggregate == "mean":
            means[key] = prof.mean(family.name, values, len(ctx.qrels.query_ids))
        else:
            means[key] = aggregate_values(values, family.aggregate)
    return Results(
        query_ids=ctx.query_ids.tolist(),
        measures=[k for k, _ in keyed],
        per_query=per_query,
        means=means,
        profile=prof.name,
        run_only_queries=list(ctx.run_only_queries),
        missing_queries=list(ctx.missing_queries),
        provenance=_provenance(ctx.qrels, ctx.run, prof),
    )
