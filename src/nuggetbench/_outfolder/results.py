"""``results.json`` read back as untrusted input.

:func:`read_results_file` is the one reader behind ``Experiment.load``, ``report`` and ``compare``
of folders: types and required fields (what each system lacks and its depth included), finite
numbers, per-query lists as long as ``query_ids``, every measure listed having its values, and each
mean equal to its per-query values' aggregate (mean, sum, geometric mean, BEIR's sum over the judged
queries) within 5e-5. Every problem is one :class:`~nuggetbench.errors.InputError` line naming the
file and the field. The stored comparison's numbers are checked against the per-query values by
:func:`nuggetbench.compare.check_stored` (the report calls it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nuggetbench._outfolder.lock import lock_holder
from nuggetbench._outfolder.swap import current_file
from nuggetbench.errors import InputError
from nuggetbench.measures import get_family, get_profile, parse_measure

__all__ = ["check_recorded_dataset", "read_results_file", "results_path"]


def results_path(path: str | Path) -> tuple[Path, Path]:
    """``(output folder, the results.json a reader reads)`` for *path* (a folder or its
    ``results.json``): a committed swap's new file when one is pending."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    if path.is_dir() or path.name == "results.json":
        return folder, current_file(folder, "results.json")
    return folder, path


def _absent(path: Path, folder: Path) -> InputError:
    """No results.json: say who is writing the folder, if someone is."""
    holder = lock_holder(folder) if folder.is_dir() else None
    if holder and not holder.get("invalid"):
        return InputError(
            f"{path}: no results.json yet; the folder is being written by pid "
            f"{holder.get('pid')} on {holder.get('host')} (started {holder.get('started')}: "
            f"{holder.get('command')}); wait for it to save its first results"
        )
    return InputError(
        f"{path}: no results.json here; give the output folder of `nuggetbench run` "
        "(it holds results.json and runs/)"
    )


def read_results_file(path: str | Path) -> tuple[dict, Path]:
    """Read and validate ``results.json`` (*path* is the file or its folder; a swap committed
    but not yet applied is read from its new file).

    Returns:
        ``(results dict, the results.json path in the output folder)``.

    Raises:
        InputError: one line naming the file and the field: no file (naming the process
            writing the folder, if one is), unreadable, not JSON, nested too deeply, a missing
            field or one of the wrong type, a number that is not finite, per-query lists of
            another length than ``query_ids``, a listed measure without values, or a mean that
            is not the per-query values' mean (sum, geometric mean) within rounding.
    """
    folder, file = results_path(path)
    if not file.is_file():
        raise _absent(Path(path), folder)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{file}: line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    except RecursionError:
        raise InputError(f"{file}: nested too deeply to be a results.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{file}: cannot be read ({exc})") from exc
    try:
        _check_results(data)
    except _Bad as exc:
        raise InputError(f"{file}: {exc}") from None
    return data, folder / "results.json"


class _Bad(Exception):
    """One problem of a results dict: ``field: what``."""


def _need(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    if value is None and kind is not type(None) and not (isinstance(kind, tuple) and None in kind):
        raise _Bad(f"{where}: missing; it should be {what}")
    if isinstance(value, bool) or not isinstance(value, kind):
        raise _Bad(f"{where}: {type(value).__name__} {_short(value)} where {what} belongs")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Bad(f"{where}: {value} where {what} belongs (a finite number)")
    return value


def _short(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, (dict, list)) else "[...]"
    return text if len(text) <= 40 else text[:37] + "..."


def _check_results(data: Any) -> None:
    if not isinstance(data, dict):
        raise _Bad(f"top level: {type(data).__name__} where an object belongs")
    if "systems" not in data:
        raise _Bad(
            "not an experiment's results.json (no 'systems'); give the folder of `nuggetbench "
            "run -o`, or read one run's results with nuggetbench.read_results"
        )
    _need(data.get("dataset"), str, "'dataset'", "a dataset id")
    measures = _need(data.get("measures"), list, "'measures'", "a list of measure names")
    for i, m in enumerate(measures):
        _need(m, str, f"'measures'[{i}]", "a measure name")
    _need(data.get("profile"), str, "'profile'", "a profile name")
    if data.get("k") is not None:
        _need(data["k"], int, "'k'", "an integer depth")
    for key, kind in (("provenance", dict), ("notes", list)):
        if data.get(key) is not None:
            _need(data[key], kind, f"'{key}'", f"a{'n object' if kind is dict else ' list'}")
    if data.get("baseline") is not None:
        _need(data["baseline"], str, "'baseline'", "a system name")
    if data.get("comparison") is not None:
        _need(data["comparison"], dict, "'comparison'", "an object")
    systems = _need(data.get("systems"), dict, "'systems'", "an object of systems")
    prov = data.get("provenance") or {}
    if not systems and not ("started" in prov and "finished" not in prov):
        raise _Bad("'systems': empty; is it the results.json of `nuggetbench run`?")
    for name, entry in systems.items():
        _check_system(name, entry, measures)
    if data.get("baseline") is not None and systems and data["baseline"] not in systems:
        raise _Bad(f"'baseline': {_short(data['baseline'])} is not one of its systems")


def _check_system(name: str, entry: Any, measures: list[str]) -> None:
    where = f"systems[{name!r}]"
    _need(entry, dict, where, "an object")
    qids = _need(entry.get("query_ids"), list, f"{where}.query_ids", "a list of query ids")
    per_query = _need(entry.get("per_query"), dict, f"{where}.per_query", "an object of lists")
    means = _need(entry.get("means"), dict, f"{where}.means", "an object of numbers")
    mine = _need(entry.get("measures", measures), list, f"{where}.measures", "a list")
    for i, m in enumerate(mine):
        _need(m, str, f"{where}.measures[{i}]", "a measure name")
    for i, m in enumerate(measures):
        if m not in mine:
            raise _Bad(
                f"'measures'[{i}]: {m!r} has no values in {where} (its measures: "
                f"{', '.join(map(str, mine)) or 'none'}); the file was edited or damaged"
            )
    if entry.get("run_file") is not None:
        _need(entry["run_file"], str, f"{where}.run_file", "a path")
    _check_coverage(where, entry)
    for m in mine:
        values = _need(
            per_query.get(m), list, f"{where}.per_query[{m!r}]", "a list of per-query values"
        )
        if len(values) != len(qids):
            raise _Bad(f"{where}.per_query[{m!r}]: {len(values)} values for {len(qids)} query_ids")
        for i, v in enumerate(values):
            if v is not None:
                _need(v, (int, float), f"{where}.per_query[{m!r}][{i}]", "a number")
        if m not in means:
            raise _Bad(f"{where}.means[{m!r}]: missing; it should be a number")
        mean = means[m]
        if mean is not None:
            _need(mean, (int, float), f"{where}.means[{m!r}]", "a number")
            _check_mean(f"{where}.means[{m!r}]", float(mean), values, entry, m)


def _check_coverage(where: str, entry: dict) -> None:
    """What a system lacks and how deep it ranked (the comparison and the depth marks read
    them): ``missing_queries`` a list of query ids, ``depth`` and the provenance's
    ``run_depth``/``pool_depth`` counts of documents (each optional)."""
    if entry.get("missing_queries") is not None:
        lacks = _need(entry["missing_queries"], list, f"{where}.missing_queries", "a list")
        for i, q in enumerate(lacks):
            _need(q, str, f"{where}.missing_queries[{i}]", "a query id")
    if entry.get("depth") is not None:
        _need(entry["depth"], int, f"{where}.depth", "a count of documents")
    prov = entry.get("provenance")
    if prov is not None:
        _need(prov, dict, f"{where}.provenance", "an object")
        for key in ("run_depth", "pool_depth"):
            if prov.get(key) is not None:
                _need(prov[key], int, f"{where}.provenance.{key}", "a count of documents")


def _aggregate(measure: str, profile: str) -> str | None:
    """How *measure*'s mean is made under *profile*: ``mean``, ``sum``, ``gmean`` or
    ``sum_over_judged``; ``None`` when the measure or profile is not known here."""
    try:
        family = get_family(parse_measure(measure).family)
        prof = get_profile(profile)
    except Exception:  # noqa: BLE001 - a name of a plug-in not loaded, or trec_eval's output names
        return None
    if family.aggregate == "mean" and family.name in prof.options.get("sum_over_judged", ()):
        return "sum_over_judged"
    return family.aggregate


def _check_mean(where: str, mean: float, values: list, entry: dict, measure: str) -> None:
    """*mean* must be the values' aggregate (mean, sum, geometric mean, or sum over the judged
    queries, whose count is not recorded and at least the values'), within rounding (5e-5)."""
    nums = [float(v) for v in values if v is not None]  # None: a query not averaged (NaN)
    if not nums:
        return
    try:
        total = math.fsum(nums)
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise _Bad(
            f"{where.replace('.means', '.per_query')}: values too large to add up (their sum "
            "overflows); no measure gives such values: the file was edited or damaged"
        )
    average = total / len(nums)
    gmean = math.exp(math.fsum(math.log(max(v, 1e-5)) for v in nums) / len(nums))
    how = _aggregate(measure, str(entry.get("profile", "")))
    judged = [len(nums) + len(entry.get("missing_queries") or [])]
    if how in (None, "sum_over_judged") and mean > 0:
        judged += [
            max(len(nums), math.floor(min(total / mean, 1e15))),
            max(len(nums), math.ceil(min(total / mean, 1e15))),
        ]
    candidates = {
        "mean": [average],
        "sum": [total],
        "gmean": [gmean] if min(nums) >= 0 else [],
        "sum_over_judged": [total / n for n in judged],
    }.get(how) or [average, total, gmean, *(total / n for n in judged)]
    if len(nums) < len(values):  # NaNs: averaged over the others, or counted as 0
        candidates = [*candidates, total / len(values)]
    if any(abs(mean - c) <= 5e-5 + 1e-9 * abs(c) for c in candidates):
        return
    raise _Bad(
        f"{where}: {mean:g}, but its {len(nums)} per-query values average {average:.4f}; "
        "the file was edited or damaged: run the experiment again"
    )


def check_recorded_dataset(ds: Any, path: Path | None) -> None:
    """A run file *path* inside an output folder of ``nuggetbench run`` (``OUT/runs/x.trec``
    beside ``OUT/results.json``) was made on the dataset that folder records; scoring it on the
    same dataset loaded otherwise (another chunker: other passages) would score every query 0.
    *ds* is the :class:`~nuggetbench.datasets.Dataset` it is scored on (``None``: a judgments
    file, nothing to check; *path* ``None``: a run given in memory).

    Raises:
        InputError: the folder records the same dataset loaded with other options (or none
            recorded) and another fingerprint.
    """
    if ds is None or path is None or path.parent.name != "runs":
        return
    results = path.parent.parent / "results.json"
    if not results.is_file():
        return
    try:
        prov = json.loads(results.read_text(encoding="utf-8")).get("provenance") or {}
    except (OSError, ValueError, AttributeError):
        return  # not an experiment's results: nothing to check against
    recorded = prov.get("dataset_fingerprint")
    if prov.get("dataset") != ds.id or not recorded or recorded == ds.fingerprint():
        return
    opts = prov.get("dataset_options")
    if opts == ds.options:  # the same options: the files changed since, not the loading
        return
    made = f"with {_as_flags(opts)}" if opts is not None else "with other options"
    raise InputError(
        f"{path} was made on {ds.id} {made} (fingerprint {recorded}, {results}); here {ds.id} is "
        f"loaded with {_as_flags(ds.options)} (fingerprint {ds.fingerprint()}): other data, "
        f"whose ids need not match the run's. Load it {made}, or compare output folders: "
        f"nuggetbench compare {path.parent.parent} OTHER_OUT (each scored with its own options)"
    )


def _as_flags(options: Mapping[str, Any] | None) -> str:
    return " ".join(f"-O {k}={v}" for k, v in (options or {}).items()) or "no -O options"
