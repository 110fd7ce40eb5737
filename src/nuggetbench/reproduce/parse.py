"""Reading and validating recipe files (the schema is described in :mod:`.recipe`).

:func:`read_recipe` / :func:`parse_recipe` turn TOML into a :class:`~.recipe.Recipe`; every
problem is one :class:`~nuggetbench.errors.FormatError` line naming the file, the field (an
unknown field with the nearest known one) and what to do. Measures must parse with
:mod:`nuggetbench.measures`, profiles must exist, every expected value must name a declared
condition, dataset and measure, and a tolerance wider than the source's printed precision must
carry a note.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from nuggetbench.errors import FormatError, NuggetbenchError, suggest
from nuggetbench.measures import get_profile, measure_keys
from nuggetbench.reproduce.recipe import (
    DEFAULT_DEPTH,
    DEFAULT_PRECISION,
    Condition,
    DatasetRef,
    Expected,
    Needs,
    Recipe,
    RunFile,
    Source,
)

__all__ = ["parse_recipe", "read_recipe"]

SCHEMA = 1
SOURCE_KINDS = ("tool", "paper", "results")
RUN_FORMATS = ("trec", "rankfile", "auto")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_CONDITION = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_HEX = {"sha256": 64, "md5": 32}

_TOP = {
    "schema", "name", "title", "description", "source", "needs", "profile", "measures",
    "datasets", "conditions", "expected", "depth", "statistic",
}  # fmt: skip
_SOURCE = {"kind", "name", "version", "file", "table", "url", "precision", "citation"}
_NEEDS = {"extras", "gpu", "llm", "download", "runtime", "notes"}
_DATASET = {"id", "options", "label"}
_CONDITION_KEYS = {
    "name", "title", "retriever", "runs", "measures", "profile", "datasets", "needs", "depth",
    "statistic", "with_objective",
}  # fmt: skip
_RUN = {"dataset", "url", "sha256", "md5", "path", "format"}
_EXPECTED = {"condition", "dataset", "values", "notes", "tolerance"}


def read_recipe(path: str | Path, *, shipped: bool = False) -> Recipe:
    """Read and validate the recipe file *path*.

    Args:
        path: a ``.toml`` file.
        shipped: a recipe of the package: its ``name`` must equal the file's stem.

    Raises:
        FormatError: unreadable, not TOML, or not a valid recipe (one line naming the field).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(
            path, None, f"cannot be read ({exc}); give a recipe's .toml file"
        ) from exc
    return parse_recipe(text, path, shipped=shipped)


def parse_recipe(text: str, path: str | Path = "<string>", *, shipped: bool = False) -> Recipe:
    """Parse and validate recipe TOML *text* (*path* names it in messages).

    Raises:
        FormatError: not TOML, or not a valid recipe.
    """
    where = str(path)
    data = _toml(text, where)
    try:
        recipe = _recipe(data, Path(path) if where != "<string>" else None, shipped)
    except _Bad as exc:
        raise FormatError(where, None, str(exc)) from None
    return recipe


class _Bad(Exception):
    """One problem of a recipe: ``field: what; what to do``."""


def _toml(text: str, where: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise FormatError(where, line, f"not valid TOML ({exc})") from None


def _keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            raise _Bad(
                f"{where}: unknown field {key!r}.{suggest(key, sorted(allowed))} Fields: "
                f"{', '.join(sorted(allowed))}"
            )


def _get(table: Mapping[str, Any], key: str, kind: type | tuple, where: str, default: Any = None):
    value = table.get(key, default)
    if value is None:
        raise _Bad(f"{where}.{key}: missing; it is required")
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise _Bad(f"{where}.{key}: {type(value).__name__} {value!r} where a {names} belongs")
    return value


def _text(table: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = _get(table, key, str, where, None if required else "")
    if required and not value.strip():
        raise _Bad(f"{where}.{key}: empty; it is required")
    return value


def _table(table: Mapping[str, Any], key: str, where: str, required: bool = False) -> dict:
    if key not in table and not required:
        return {}
    return _get(table, key, dict, where)


#: Top-level fields that TOML puts in ``[needs]`` when written after that table (as the
#: schema's example shows them): they are read from there too.
_LIFTED = ("profile", "measures", "depth", "statistic")


def _lift(data: dict[str, Any]) -> dict[str, Any]:
    """*data* with the :data:`_LIFTED` fields of its ``[needs]`` table moved to the top level."""
    needs = data.get("needs")
    if not isinstance(needs, dict) or not any(k in needs for k in _LIFTED):
        return data
    data, needs = dict(data), dict(needs)
    for key in _LIFTED:
        if key in needs:
            if key in data:
                raise _Bad(f"{key}: given twice, at the top level and after [needs]; keep one")
            data[key] = needs.pop(key)
    data["needs"] = needs
    return data


def _recipe(data: dict[str, Any], path: Path | None, shipped: bool) -> Recipe:
    data = _lift(data)
    _keys(data, _TOP, "top level")
    schema = _get(data, "schema", int, "top level")
    if schema != SCHEMA:
        raise _Bad(f"schema: {schema}; this nuggetbench reads schema = {SCHEMA} recipes")
    name = _text(data, "name", "top level", required=True)
    if not _NAME.match(name):
        raise _Bad(f"name: {name!r}; use lower-case letters, digits and '-'")
    if shipped and path is not None and name != path.stem:
        raise _Bad(f"name: {name!r} differs from the file's name {path.stem!r}; make them equal")
    source = _source(_table(data, "source", "top level", required=True))
    needs = _needs(_table(data, "needs", "top level"), "needs")
    profile = _profile(data.get("profile"), "profile")
    measures = _measures(data.get("measures"), "measures") if "measures" in data else ()
    datasets = _datasets(data.get("datasets"))
    top = {
        "depth": _depth(data, "top level"),
        "statistic": _text(data, "statistic", "top level") or "mean",
    }
    conditions = _conditions(data.get("conditions"), datasets, measures, profile, needs, top)
    expected = _expected(data.get("expected"), conditions, source.precision)
    return Recipe(
        name=name,
        title=_text(data, "title", "top level", required=True),
        description=_text(data, "description", "top level", required=True).strip(),
        source=source,
        needs=needs,
        datasets=datasets,
        conditions=conditions,
        expected=expected,
        profile=profile,
        measures=measures,
        path=path,
        shipped=shipped,
    )


def _source(table: dict) -> Source:
    _keys(table, _SOURCE, "source")
    kind = _text(table, "kind", "source", required=True)
    if kind not in SOURCE_KINDS:
        raise _Bad(f"source.kind: {kind!r}; one of {', '.join(SOURCE_KINDS)}")
    url = _text(table, "url", "source", required=True)
    if not url.startswith(("https://", "http://")):
        raise _Bad(f"source.url: {url!r}; give the http(s) address of the source")
    precision = _get(table, "precision", int, "source", DEFAULT_PRECISION)
    if not 0 <= precision <= 12:
        raise _Bad(f"source.precision: {precision}; the decimals the source prints (0 to 12)")
    return Source(
        kind=kind,
        name=_text(table, "name", "source", required=True),
        url=url,
        version=_text(table, "version", "source"),
        file=_text(table, "file", "source"),
        table=_text(table, "table", "source"),
        precision=precision,
        citation=_text(table, "citation", "source"),
    )


def _needs(table: dict, where: str) -> Needs:
    _keys(table, _NEEDS, where)
    extras = _get(table, "extras", list, where, [])
    for i, extra in enumerate(extras):
        if not isinstance(extra, str) or not extra.strip():
            raise _Bad(f"{where}.extras[{i}]: {extra!r}; give extra names (dense, lucene...)")
    return Needs(
        extras=tuple(extras),
        gpu=_get(table, "gpu", bool, where, False),
        llm=_get(table, "llm", bool, where, False),
        download=_text(table, "download", where),
        runtime=_text(table, "runtime", where),
        notes=_text(table, "notes", where),
    )


def _profile(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _Bad(f"{where}: {value!r}; give a profile name (`nuggetbench measures` lists them)")
    try:
        get_profile(value)
    except NuggetbenchError as exc:
        raise _Bad(f"{where}: {exc}") from None
    return value


def _measures(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise _Bad(f'{where}: {value!r}; give a non-empty list of measures ("nDCG@10")')
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise _Bad(f'{where}[{i}]: {item!r}; a measure is a string ("nDCG@10")')
        try:
            keys = measure_keys([item])
        except NuggetbenchError as exc:
            raise _Bad(f"{where}[{i}]: {exc}") from None
        if len(keys) != 1:
            raise _Bad(f"{where}[{i}]: {item!r} names {len(keys)} measures; give one")
        if keys[0] in out:
            raise _Bad(f"{where}[{i}]: {item!r} is listed twice")
        out.append(keys[0])
    return tuple(out)


def _datasets(value: Any) -> tuple[DatasetRef, ...]:
    if not isinstance(value, list) or not value:
        raise _Bad("datasets: missing; give at least one [[datasets]] table with an id")
    out: list[DatasetRef] = []
    for i, table in enumerate(value):
        where = f"datasets[{i}]"
        if not isinstance(table, dict):
            raise _Bad(f"{where}: {table!r}; each [[datasets]] is a table")
        _keys(table, _DATASET, where)
        ident = _text(table, "id", where, required=True)
        if any(d.id == ident for d in out):
            raise _Bad(f"{where}.id: {ident!r} is declared twice")
        options = _table(table, "options", where)
        for key, val in options.items():
            if isinstance(val, (dict, list)):
                raise _Bad(f"{where}.options.{key}: {val!r}; a loader option is one value")
        out.append(DatasetRef(ident, options, _text(table, "label", where)))
    return tuple(out)


def _depth(table: Mapping[str, Any], where: str, default: int = DEFAULT_DEPTH) -> int:
    depth = _get(table, "depth", int, where, default)
    if depth < 1:
        raise _Bad(f"{where}.depth: {depth}; documents per query, at least 1")
    return depth


def _conditions(
    value: Any,
    datasets: tuple[DatasetRef, ...],
    measures: tuple[str, ...],
    profile: str | None,
    needs: Needs,
    top: dict[str, Any],
) -> tuple[Condition, ...]:
    if not isinstance(value, list) or not value:
        raise _Bad("conditions: missing; give at least one [[conditions]] table")
    declared = [d.id for d in datasets]
    out: list[Condition] = []
    for i, table in enumerate(value):
        where = f"conditions[{i}]"
        if not isinstance(table, dict):
            raise _Bad(f"{where}: {table!r}; each [[conditions]] is a table")
        _keys(table, _CONDITION_KEYS, where)
        name = _text(table, "name", where, required=True)
        if not _CONDITION.match(name):
            raise _Bad(f"{where}.name: {name!r}; use lower-case letters, digits, '.', '_', '-'")
        if any(c.name == name for c in out):
            raise _Bad(f"{where}.name: {name!r} is declared twice")
        where = f"conditions[{name!r}]"
        own = _measures(table["measures"], f"{where}.measures") if "measures" in table else ()
        if not (own or measures):
            raise _Bad(f"{where}: no measures; give measures here or at the top level")
        ids = _condition_datasets(table, declared, where)
        retriever, runs = _making(table, ids, where)
        out.append(
            Condition(
                name=name,
                title=_text(table, "title", where) or name,
                retriever=retriever,
                runs=runs,
                measures=own or measures,
                profile=_profile(table.get("profile"), f"{where}.profile") or profile,
                datasets=ids,
                needs=needs.merged(_needs(_table(table, "needs", where), f"{where}.needs")),
                depth=_depth(table, where, top["depth"]),
                statistic=_text(table, "statistic", where) or top["statistic"],
                with_objective=_get(table, "with_objective", bool, where, False),
            )
        )
    return tuple(out)


def _condition_datasets(table: dict, declared: list[str], where: str) -> tuple[str, ...]:
    ids = _get(table, "datasets", list, where, list(declared))
    for ident in ids:
        if ident not in declared:
            raise _Bad(
                f"{where}.datasets: {ident!r} is not a declared dataset.{suggest(str(ident), declared)}"
                f" Declared: {', '.join(declared)}"
            )
    if not ids:
        raise _Bad(f"{where}.datasets: empty; leave it out to run on every dataset")
    return tuple(ids)


def _making(
    table: dict, ids: tuple[str, ...], where: str
) -> tuple[str | None, tuple[RunFile, ...]]:
    """A condition's retriever spec, or its published run files (exactly one of the two)."""
    has_runs = "runs" in table
    if ("retriever" in table) == has_runs:
        raise _Bad(f'{where}: give either retriever = "SPEC" or [[conditions.runs]], not both')
    if not has_runs:
        return _text(table, "retriever", where, required=True).strip(), ()
    value = table["runs"]
    if not isinstance(value, list) or not value:
        raise _Bad(f"{where}.runs: give one [[conditions.runs]] table per dataset")
    runs: list[RunFile] = []
    for j, item in enumerate(value):
        runs.append(_run_file(item, ids, f"{where}.runs[{j}]"))
    seen = [r.dataset for r in runs]
    twice = sorted({d for d in seen if seen.count(d) > 1})
    if twice:
        raise _Bad(f"{where}.runs: two run files for {', '.join(twice)}; give one per dataset")
    return None, tuple(runs)


def _run_file(item: Any, ids: tuple[str, ...], where: str) -> RunFile:
    if not isinstance(item, dict):
        raise _Bad(f"{where}: {item!r}; each [[conditions.runs]] is a table")
    _keys(item, _RUN, where)
    dataset = _text(item, "dataset", where, required=True)
    if dataset not in ids:
        raise _Bad(f"{where}.dataset: {dataset!r} is not one of this condition's datasets")
    url = _text(item, "url", where, required=True)
    if not url.startswith(("https://", "http://", "file://")):
        raise _Bad(f"{where}.url: {url!r}; give the http(s) address to fetch the file from")
    sums = {k: _text(item, k, where).lower() for k in _HEX}
    if not any(sums.values()):
        raise _Bad(f'{where}: no checksum; give sha256 = "..." (or md5) of the file')
    for key, digits in _HEX.items():
        if sums[key] and not re.fullmatch(rf"[0-9a-f]{{{digits}}}", sums[key]):
            raise _Bad(f"{where}.{key}: {sums[key]!r}; {digits} hexadecimal digits")
    rel = _text(item, "path", where, required=True)
    parts = PurePosixPath(rel).parts
    if rel.startswith("/") or ".." in parts or "\\" in rel:
        raise _Bad(f"{where}.path: {rel!r}; a relative path below a data folder, without '..'")
    fmt = _text(item, "format", where) or "auto"
    if fmt not in RUN_FORMATS:
        raise _Bad(f"{where}.format: {fmt!r}; one of {', '.join(RUN_FORMATS)}")
    return RunFile(dataset, url, rel, sums["sha256"], sums["md5"], fmt)


def _expected(
    value: Any, conditions: tuple[Condition, ...], precision: int
) -> tuple[Expected, ...]:
    if not isinstance(value, list) or not value:
        raise _Bad("expected: missing; give [[expected]] tables with the published values")
    by_name = {c.name: c for c in conditions}
    out: list[Expected] = []
    for i, table in enumerate(value):
        where = f"expected[{i}]"
        if not isinstance(table, dict):
            raise _Bad(f"{where}: {table!r}; each [[expected]] is a table")
        _keys(table, _EXPECTED, where)
        name = _text(table, "condition", where, required=True)
        cond = by_name.get(name)
        if cond is None:
            raise _Bad(
                f"{where}.condition: {name!r} is not a declared condition."
                f"{suggest(name, list(by_name))} Declared: {', '.join(by_name)}"
            )
        dataset = _text(table, "dataset", where, required=True)
        if dataset not in cond.datasets:
            raise _Bad(f"{where}.dataset: {dataset!r} is not one of condition {name!r}'s datasets")
        if cond.runs and cond.run_file(dataset) is None:
            raise _Bad(f"{where}: condition {name!r} has no run file for {dataset!r}")
        if any(e.condition == name and e.dataset == dataset for e in out):
            raise _Bad(f"{where}: ({name!r}, {dataset!r}) has two [[expected]] tables; merge them")
        where = f"expected[{name!r}, {dataset!r}]"
        values = _values(_table(table, "values", where, required=True), cond, where)
        notes = _table(table, "notes", where)
        tolerance = _table(table, "tolerance", where)
        out.append(
            Expected(
                name,
                dataset,
                values,
                _notes(notes, values, where),
                _tolerances(tolerance, values, notes, precision, where),
            )
        )
    return tuple(out)


def _canonical(measure: str, cond: Condition, where: str) -> str:
    try:
        keys = measure_keys([measure])
    except NuggetbenchError as exc:
        raise _Bad(f"{where}: {exc}") from None
    if len(keys) != 1 or keys[0] not in cond.measures:
        raise _Bad(
            f"{where}: {measure!r} is not one of condition {cond.name!r}'s measures "
            f"({', '.join(cond.measures)}); add it to measures or remove the value"
        )
    return keys[0]


def _key(measure: str, where: str) -> str:
    try:
        return measure_keys([measure])[0]
    except NuggetbenchError as exc:
        raise _Bad(f"{where}: {exc}") from None


def _values(table: dict, cond: Condition, where: str) -> dict[str, float]:
    if not table:
        raise _Bad(f'{where}.values: empty; give {{ "nDCG@10" = 0.6789 }}')
    out: dict[str, float] = {}
    for measure, value in table.items():
        key = _canonical(measure, cond, f"{where}.values")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise _Bad(f"{where}.values[{measure!r}]: {value!r}; a number as the source prints it")
        out[key] = float(value)
    return out


def _notes(table: dict, values: dict[str, float], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for measure, note in table.items():
        key = _key(measure, f"{where}.notes")
        if key not in values:
            raise _Bad(f"{where}.notes[{measure!r}]: no value of that measure to annotate")
        if not isinstance(note, str) or not note.strip():
            raise _Bad(f"{where}.notes[{measure!r}]: {note!r}; a sentence saying why")
        out[key] = note.strip()
    return out


def _tolerances(
    table: dict, values: dict[str, float], notes: dict, precision: int, where: str
) -> dict[str, float]:
    default = 0.5 * 10.0**-precision
    noted = {_key(m, f"{where}.notes") for m in notes}
    out: dict[str, float] = {}
    for measure, tol in table.items():
        key = _key(measure, f"{where}.tolerance")
        if key not in values:
            raise _Bad(f"{where}.tolerance[{measure!r}]: no value of that measure")
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
            raise _Bad(f"{where}.tolerance[{measure!r}]: {tol!r}; a positive absolute tolerance")
        if tol > default * (1 + 1e-9) and key not in noted:
            raise _Bad(
                f"{where}.tolerance[{measure!r}]: {tol:g} is wider than the source's printed "
                f"precision ({default:g}); write why in notes[{measure!r}] (a departure is a "
                "note, never a silent tolerance)"
            )
        out[key] = float(tol)
    return out
