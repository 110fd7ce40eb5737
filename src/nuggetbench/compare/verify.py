"""``check_stored``: a comparison read back from a file, checked against its per-query values.

A ``results.json`` holds both the per-query values and the comparison made from them; an edited
(or damaged) comparison block would otherwise be shown as a result. Every number that does not
depend on resampling is recomputed (:func:`~nuggetbench.compare.core.compare` without the
bootstrap: cheap) and must match: each mean and its query count, each difference, test
statistic, p-value (raw and corrected), significance, effect size and win/tie/loss count. The
bootstrap intervals, which only the resampling gives, must be numbers (or absent exactly where
a measure has fewer than two queries) holding their estimate. The settings the recomputation
uses are checked first (types and ranges), so that any value a check would reject is one
:class:`~nuggetbench.errors.InputError` line naming the field. The queries averaged follow the
stored ``average_over`` and what each system lacks (its ``missing_queries``), so a difference's
``missing`` count and ``rests_on_missing`` mark are recomputed too (checked where stored: files
written before they existed lack them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from nuggetbench.compare.core import compare
from nuggetbench.compare.missing import AVERAGE_OVER
from nuggetbench.errors import InputError, NuggetbenchError

__all__ = ["check_settings", "check_stored", "MAX_RESAMPLES"]

#: The most bootstrap resamples a stored comparison may name (checking it recomputes its tests).
MAX_RESAMPLES = 10_000_000
_EDITED = "the file was edited or damaged: run the experiment again"


class _Bad(Exception):
    """One problem: ``field: what``."""


def check_stored(
    stored: Mapping[str, Any],
    per_query: Mapping[str, Mapping[str, Sequence[float]]],
    query_ids: Sequence[str],
    missing: Mapping[str, Collection[str]] | None = None,
) -> None:
    """Check the stored comparison *stored* (``ComparisonReport.to_dict()`` as read back)
    against the per-query values it was made from.

    Args:
        stored: the comparison dict (a ``{"error": ...}`` record is not checked).
        per_query: ``{system: {measure: values aligned with query_ids}}`` (NaN: not averaged).
        query_ids: the queries of every value list.
        missing: ``{system: query ids its run lacks}`` (the results' ``missing_queries``;
            scored 0 under ``average_over="qrels"``, left out under ``"common"``).

    Raises:
        InputError: ``comparison.<field>: ...``, one line: a field of the wrong type or range, a
            system or measure the per-query values do not have, or a number that differs from
            the one the per-query values give.
    """
    if "error" in stored and "estimates" not in stored:
        return
    try:
        settings = _settings(stored, per_query)
        values = {
            s: {m: dict(zip(query_ids, map(float, per_query[s][m]))) for m in settings["measures"]}
            for s in settings["systems"]
        }
        try:
            fresh = compare(
                values,
                **{k: v for k, v in settings.items() if k != "systems"},
                missing=missing,
                intervals=False,
            ).to_dict()
        except NuggetbenchError as exc:
            raise _Bad(f"the per-query values give no comparison ({exc}); {_EDITED}") from None
        estimates, differences = ("n_queries", "mean"), _DIFF_FIELDS
        _same_rows(stored, fresh, "estimates", estimates, "mean", lambda r: r["n_queries"] >= 2)
        _same_rows(stored, fresh, "differences", differences, "diff", _tested)
        _same_rows(stored, fresh, "differences", _MISSING_FIELDS, "diff", _tested, optional=True)
    except _Bad as exc:
        raise InputError(f"comparison.{exc}") from None


_DIFF_FIELDS = (
    "diff",
    "statistic",
    "p_value",
    "p_adjusted",
    "significant",
    "effect_size",
    "wins",
    "ties",
    "losses",
)
#: Fields of a difference added with ``average_over`` (absent from older files).
_MISSING_FIELDS = ("missing", "rests_on_missing")


def _need(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise _Bad(f"{where}: {type(value).__name__} {str(value)[:40]!r} where {what} belongs")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Bad(f"{where}: {value} where {what} belongs (a finite number)")
    return value


def _settings(stored: Mapping[str, Any], per_query: Mapping[str, Any]) -> dict[str, Any]:
    """The settings to recompute with, each checked (type, range, known names)."""
    systems = _need(stored.get("systems"), list, "systems", "a list of system names")
    for i, s in enumerate(systems):
        _need(s, str, f"systems[{i}]", "a system name")
        if s not in per_query:
            raise _Bad(f"systems[{i}]: {s!r} has no per-query values in this file; {_EDITED}")
    measures = _need(stored.get("measures"), list, "measures", "a list of measure names")
    for i, m in enumerate(measures):
        _need(m, str, f"measures[{i}]", "a measure name")
        missing = [s for s in systems if m not in per_query[s]]
        if missing:
            raise _Bad(f"measures[{i}]: {m!r} has no per-query values for {missing[0]!r}")
    baseline = _need(stored.get("baseline"), str, "baseline", "a system name")
    if baseline not in systems:
        raise _Bad(f"baseline: {baseline!r} is not one of its systems; {_EDITED}")
    keys = ("test", "correction", "alpha", "ci", "n_resamples", "seed", "average_over")
    return {
        "systems": systems,
        "measures": measures,
        "baseline": baseline,
        **_checked({k: stored[k] for k in keys if k in stored}),
    }


def check_settings(settings: Mapping[str, Any]) -> None:
    """Check the settings of a stored comparison (``test``, ``correction``, ``alpha``, ``ci``,
    ``n_resamples``, ``seed``, ``average_over``; each optional) before a new comparison is
    made with them.

    Raises:
        InputError: ``comparison.<field>: ...`` for a value of the wrong type or range.
    """
    try:
        _checked(settings)
    except _Bad as exc:
        raise InputError(f"comparison.{exc}") from None


def _checked(settings: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(settings)
    for name in ("test", "correction", "average_over"):
        if name in out:
            _need(out[name], str, name, "a name")
    if out.get("average_over", AVERAGE_OVER[0]) not in AVERAGE_OVER:
        raise _Bad(
            f"average_over: {out['average_over'][:40]!r} where one of {AVERAGE_OVER} belongs"
        )
    for name in ("alpha", "ci"):
        if name in out:
            level = _need(out[name], (int, float), name, "a level in (0, 1)")
            if not 0 < level < 1:
                raise _Bad(f"{name}: {level} where a level in (0, 1) belongs")
            out[name] = float(level)
    if "n_resamples" in out:
        n = _need(out["n_resamples"], int, "n_resamples", "a count of resamples")
        if not 1 <= n <= MAX_RESAMPLES:
            raise _Bad(f"n_resamples: {n} where a count in 1..{MAX_RESAMPLES:,} belongs")
    if out.get("seed") is not None:
        _need(out["seed"], int, "seed", "an integer seed")
    return out


def _tested(row: Mapping[str, Any]) -> bool:
    """A difference was tested (and has an interval): its measure had two queries or more."""
    return row.get("p_value") is not None


def _same_rows(
    stored: Mapping[str, Any],
    fresh: dict,
    key: str,
    fields: Sequence[str],
    point: str,
    testable: Callable[[Mapping[str, Any]], bool],
    *,
    optional: bool = False,
) -> None:
    """Every row of ``stored[key]`` matches the fresh one of its (system, measure), field by
    field, and its interval holds *point* (none where *testable* says none could be computed);
    no row is missing or extra. *optional*: only the *fields* a row has are compared (the
    interval is not checked again)."""
    rows = _need(stored.get(key), list, key, "a list")
    want = {(r["system"], r["measure"]): r for r in fresh[key]}
    seen = set()
    for i, row in enumerate(rows):
        where = f"{key}[{i}]"
        _need(row, dict, where, "an object")
        ident = (row.get("system"), row.get("measure"))
        if ident not in want or ident in seen:
            raise _Bad(f"{where}: system {ident[0]!r}, measure {ident[1]!r} is not one it has")
        seen.add(ident)
        for name in fields:
            if not optional or name in row:
                _same(row.get(name), want[ident][name], f"{where}.{name}")
        if not optional:
            _interval(row, want[ident], point, where, testable(want[ident]))
    if len(seen) < len(want):
        gone = sorted(set(want) - seen, key=str)[0]
        raise _Bad(f"{key}: no row for system {gone[0]!r}, measure {gone[1]!r}; {_EDITED}")


def _same(got: Any, want: Any, where: str) -> None:
    """*got* (stored) equals *want* (recomputed; ``None`` for NaN) within rounding."""
    if want is None or isinstance(want, bool):  # a flag, or a number that could not be made
        ok = got is want
    elif isinstance(want, int):  # a count
        ok = isinstance(got, int) and not isinstance(got, bool) and got == want
    else:
        _need(got, (int, float), where, "a number")
        ok = abs(float(got) - want) <= 5e-5 + 1e-6 * abs(want)
    if not ok:
        shown = "none" if want is None else (f"{want:.6g}" if isinstance(want, float) else want)
        raise _Bad(f"{where}: {str(got)[:40]}, but the per-query values give {shown}; {_EDITED}")


def _interval(
    row: Mapping[str, Any], fresh: Mapping[str, Any], point: str, where: str, testable: bool
) -> None:
    """The stored interval is two numbers around the recomputed *point*, or absent where no
    interval could be computed (*testable* false: fewer than two queries)."""
    lo, hi = row.get("ci_low"), row.get("ci_high")
    if not testable or fresh.get(point) is None:
        if lo is not None or hi is not None:
            raise _Bad(f"{where}.ci_low: an interval where none can be computed; {_EDITED}")
        return
    _need(lo, (int, float), f"{where}.ci_low", "a number")
    _need(hi, (int, float), f"{where}.ci_high", "a number")
    value = float(fresh[point])
    tol = 5e-5 + 1e-6 * abs(value)
    if not lo - tol <= value <= hi + tol:
        raise _Bad(
            f"{where}.ci_low/ci_high: [{lo:g}, {hi:g}] does not hold the {point} {value:.6g} "
            f"the per-query values give; {_EDITED}"
        )
