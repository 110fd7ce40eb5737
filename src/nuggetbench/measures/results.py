"""``Results``: per-query values and aggregates of one evaluation, with provenance."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench._atomic import atomic_write
from nuggetbench.data.checks import Finding
from nuggetbench.errors import InputError, NuggetbenchError, UnknownNameError, suggest
from nuggetbench.measures.profiles import Profile
from nuggetbench.measures.spellings import parse_measure

__all__ = [
    "Results",
    "read_results",
    "LazyProvenance",
    "averaging",
    "averaging_text",
    "query_findings",
    "scoring_findings",
]


class LazyProvenance(MutableMapping):
    """A provenance mapping whose costly entries (fingerprints) are computed on first read.

    Behaves as a ``dict`` of its keys (``dict(p)``, ``{**p}``, ``p[k]``, ``p.get(k)``, equality
    with a dict); a pending entry's function is called once, when the entry is first read, and
    its value kept. Until then the function (e.g. ``run.fingerprint``) keeps its object alive.
    Copies and pickles are plain dicts with every entry computed.

    Args:
        values: the entries known now.
        pending: ``{key: zero-argument function}`` for the entries computed later.
    """

    def __init__(
        self, values: dict[str, Any], pending: dict[str, Callable[[], Any]] | None = None
    ) -> None:
        self._values = dict(values)
        self._pending = dict(pending or {})
        self._order = list(self._values)
        for key in self._pending:
            if key not in self._values:
                self._order.append(key)

    def __getitem__(self, key: str) -> Any:
        if key in self._pending:
            self._values[key] = self._pending.pop(key)()
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._pending.pop(key, None)
        if key not in self._values:
            self._order.append(key)
        self._values[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self._values and key not in self._pending:
            raise KeyError(key)
        self._values.pop(key, None)
        self._pending.pop(key, None)
        self._order.remove(key)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return repr(dict(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        import copy

        return copy.deepcopy(dict(self), memo)


@dataclass
class Results:
    """The outcome of :func:`~nuggetbench.measures.compute` (always this type).

    Attributes:
        query_ids: evaluated query ids, sorted (the rows).
        measures: measure strings as given (the columns), duplicates removed.
        per_query: ``{measure: float64 array (len(query_ids),)}`` aligned with *query_ids*.
        means: ``{measure: aggregate}``: the mean over *query_ids*, or the sum for count
            families (``NumRet``, ``NumRel``, ``NumRelRet``), as trec_eval's ``all`` line.
        profile: name of the evaluation profile.
        run_only_queries: run queries without judgments (ignored).
        missing_queries: judged queries absent from the run (scored 0 under ``trec_eval -c``,
            left out under ``trec_eval``).
        provenance: run and qrels names and fingerprints, profile, nuggetbench version, time.
    """

    query_ids: list[str]
    measures: list[str]
    per_query: dict[str, np.ndarray]
    means: dict[str, float]
    profile: str
    run_only_queries: list[str] = field(default_factory=list)
    missing_queries: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        shown = ", ".join(f"{m}={self.means[m]:.4f}" for m in self.measures[:4])
        more = ", ..." if len(self.measures) > 4 else ""
        return f"<Results {self.profile!r}: {len(self.query_ids)} queries; {shown}{more}>"

    def _key(self, measure: Any) -> str:
        if isinstance(measure, str) and measure in self.per_query:
            return measure

        try:
            wanted = parse_measure(measure)
        except NuggetbenchError:
            wanted = None
        if wanted is not None:
            for key in self.measures:
                try:
                    if parse_measure(key) == wanted:
                        return key
                except NuggetbenchError:
                    continue
        raise UnknownNameError(
            f"measure {str(measure)!r} was not evaluated.{suggest(str(measure), self.measures)} "
            f"Evaluated: {', '.join(self.measures)}"
        )

    def mean(self, measure: Any) -> float:
        """The aggregate of *measure* (a string as given, or any spelling of the same measure).

        Raises:
            UnknownNameError: the measure was not evaluated.
        """
        return self.means[self._key(measure)]

    def values(self, measure: Any) -> dict[str, float]:
        """``{query_id: value}`` of *measure*.

        Raises:
            UnknownNameError: the measure was not evaluated.
        """
        return dict(zip(self.query_ids, self.per_query[self._key(measure)].tolist()))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, per-query values included (NaN becomes ``None``)."""
        return {
            "profile": self.profile,
            "measures": list(self.measures),
            "means": {m: _clean(v) for m, v in self.means.items()},
            "query_ids": list(self.query_ids),
            "per_query": {
                m: [_clean(x) for x in self.per_query[m].tolist()] for m in self.measures
            },
            "run_only_queries": list(self.run_only_queries),
            "missing_queries": list(self.missing_queries),
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Results:
        """Inverse of :meth:`to_dict`.

        Raises:
            InputError: a key is missing or per-query lists do not match ``query_ids``.
        """
        try:
            qids = [str(q) for q in data["query_ids"]]
            measures = [str(m) for m in data["measures"]]
            per_query = {
                m: np.array(
                    [np.nan if x is None else x for x in data["per_query"][m]], dtype=np.float64
                )
                for m in measures
            }
            means = {
                m: (math.nan if data["means"][m] is None else float(data["means"][m]))
                for m in measures
            }
            profile = str(data["profile"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"not a nuggetbench results dict: {type(exc).__name__}: {exc}"
            ) from exc
        for m, values in per_query.items():
            if len(values) != len(qids):
                raise InputError(
                    f"results: measure {m!r} has {len(values)} values for {len(qids)} queries"
                )
        return cls(
            query_ids=qids,
            measures=measures,
            per_query=per_query,
            means=means,
            profile=profile,
            run_only_queries=list(data.get("run_only_queries", [])),
            missing_queries=list(data.get("missing_queries", [])),
            provenance=dict(data.get("provenance", {})),
        )

    def to_json(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` as JSON, atomically; returns the path."""
        path = Path(path)
        with atomic_write(path) as fh:
            json.dump(self.to_dict(), fh, indent=1, allow_nan=False)
            fh.write("\n")
        return path

    def to_pandas(self, *, wide: bool = False):
        """A long DataFrame with columns ``query_id, measure, value``: one row per (query,
        measure), queries in :attr:`query_ids` order within each measure (the shape and names of
        :meth:`nuggetbench.Experiment.to_pandas`, less ``system``). *wide*: the older shape, one
        row per query (index ``query_id``) and one column per measure."""
        import pandas as pd

        if wide:
            return pd.DataFrame(
                {m: self.per_query[m] for m in self.measures},
                index=pd.Index(self.query_ids, name="query_id"),
            )
        n = len(self.query_ids)
        return pd.DataFrame(
            {
                "query_id": list(self.query_ids) * len(self.measures),
                "measure": [m for m in self.measures for _ in range(n)],
                "value": [float(v) for m in self.measures for v in self.per_query[m]],
            },
            columns=["query_id", "measure", "value"],
        )


def read_results(path: str | Path, *, system: str | None = None) -> Results:
    """Read results written by :meth:`Results.to_json`, or one system's results from an
    experiment's ``results.json`` (``nuggetbench run -o DIR``; a folder holding one is taken too).

    Args:
        path: the JSON file, or an experiment folder.
        system: the system to take from an experiment file (needed when it holds several; the
            whole experiment is read by ``nuggetbench.Experiment.load``).

    Raises:
        InputError: the file is missing, not JSON, or not a results dict.
        UnknownNameError: *system* is not in the experiment, or it holds several and none is named.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such results file") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc})") from exc
    if isinstance(data, dict) and isinstance(data.get("systems"), dict):
        return Results.from_dict(_pick_system(data["systems"], system, path))
    if system is not None:
        raise InputError(f"{path} holds the results of one run, not an experiment's systems")
    return Results.from_dict(data)


def _pick_system(systems: dict[str, Any], system: str | None, path: Path) -> dict[str, Any]:
    """The results dict of *system* in an experiment's ``systems`` (the only one if unnamed)."""
    names = list(systems)
    if system is None and len(names) == 1:
        return systems[names[0]]
    if system is None or system not in systems:
        what = "name one with system=" if system is None else f"no system {system!r}."
        raise UnknownNameError(
            f"{path} is an experiment with {len(names)} systems; {what}"
            f"{suggest(system or '', names)} Systems: {', '.join(names)} "
            "(nuggetbench.Experiment.load reads them all)"
        )
    return systems[system]


def _clean(value: float) -> float | None:
    return (
        None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
    )


def averaging(results: Results, profile: Profile | None) -> dict[str, Any]:
    """Which queries *results*' means average, as every output of one command states it.

    Args:
        results: the scores.
        profile: the :class:`~nuggetbench.measures.Profile` they were computed under (``None``:
            one the registry does not know; its name is *results*' ``profile``).

    Returns:
        ``{"queries": n averaged, "of": "qrels" | "run_and_qrels" | "profile",
        "missing_from_run": judged queries the run lacks, "missing_counted": "scored 0" |
        "left out", "run_only_ignored": run queries without judgments, "profile": name}``;
        ``of`` is ``"profile"`` when the profile chooses its queries itself (FreshStack's
        nugget queries, BIRCO's queries with a relevant document).
    """
    selects = profile is not None and profile.select_queries is not None
    over = "profile" if selects else (profile.average_over if profile is not None else "qrels")
    counted = "scored 0" if over != "run_and_qrels" else "left out"
    return {
        "queries": len(results.query_ids),
        "of": over,
        "missing_from_run": len(results.missing_queries),
        "missing_counted": counted,
        "run_only_ignored": len(results.run_only_queries),
        "profile": results.profile,
    }


def averaging_text(info: Mapping[str, Any]) -> str:
    """One line for people from :func:`averaging`'s dict (``averaged over 50 queries of the
    qrels; 1 missing from the run scored 0``)."""
    n, missing, ignored = info["queries"], info["missing_from_run"], info["run_only_ignored"]
    of = {
        "qrels": "of the qrels",
        "run_and_qrels": "in both the run and the qrels",
        "profile": f"chosen by profile {info['profile']!r}",
    }.get(info["of"], f"of {info['of']}")
    text = f"averaged over {n} quer{'y' if n == 1 else 'ies'} {of}"
    if missing:
        text += f"; {missing} missing from the run {info['missing_counted']}"
    if ignored:
        text += f"; {ignored} run queries without judgments ignored"
    return text


def query_findings(results: Results, profile: Profile) -> list[Finding]:
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
                f"{n} run queries have no judgments and were ignored (they count in no mean)",
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


def scoring_findings(checks: list[Finding], results: Results, profile: Profile) -> list[Finding]:
    """The findings to show with scores (``nuggetbench evaluate`` prints them, ``nb.evaluate``
    warns them): the trap checks' (*checks*, from
    :func:`nuggetbench.data.checks.check_findings`), then :func:`query_findings`. The checks'
    query-overlap line is left out when the query-set warnings already give the counts.

    Args:
        checks: the trap checks' findings on the run and judgments *results* came from.
        results: the scores.
        profile: the :class:`~nuggetbench.measures.Profile` they were computed under.
    """
    queries = query_findings(results, profile)
    if queries:
        checks = [f for f in checks if f.kind != "query_overlap"]
    return [*checks, *queries]
