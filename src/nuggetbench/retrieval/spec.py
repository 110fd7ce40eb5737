"""Retriever spec strings: ``bm25``, ``bm25:k1=0.9,b=0.4``, ``bm25:preset=pyserini``.

A spec is ``<prefix>[:<option>=<value>,...]``. The prefix names a class through
:data:`RETRIEVERS` (import paths as strings, so nothing is imported before it is used); later
layers register theirs (``dense``, ``sparse``, ``colbert``, ``rerank``...) with
:func:`register_retriever`.

Contract of a registered class: it is built as ``cls(**options)`` from keyword-only
parameters with defaults; the type of each default types the option's value (``k1=1``
becomes ``1.0`` when the default is a float); an optional ``PRESETS`` class attribute maps
preset names to option dicts (``preset=pyserini``), explicit options overriding the preset;
``name`` on the instance is its canonical spec (see :func:`format_spec`).
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

from ..errors import SpecError, UnknownNameError, suggest

RETRIEVERS: dict[str, str] = {
    "bm25": "nuggetbench.retrieval.bm25:BM25",
    "dense": "nuggetbench.retrieval.dense:DenseRetriever",
    "sparse": "nuggetbench.retrieval.sparse:SparseRetriever",
    "colbert": "nuggetbench.retrieval.colbert:ColBERTRetriever",
    "rerank": "nuggetbench.retrieval.rerank:CrossEncoderReranker",
}

WRAPPERS: dict[str, str] = {
    "hyde": "nuggetbench.build.querygen:HyDE",
    "subq": "nuggetbench.build.querygen:SubQ",
}
"""Retrievers wrapping another one, written ``name(INNER[; option=value,...])`` (``hyde(bm25)``,
``subq(dense:MODEL; model=gpt-4o)``): built as ``cls(inner_retriever, **options)`` by
:func:`nuggetbench.retrieval.pipeline.parse_composite`."""

POSITIONAL = "<positional>"
"""Key of a bare first value (``dense:MODEL``): passed as the class's positional argument."""

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_TRUE = {"true", "yes", "on"}
_FALSE = {"false", "no", "off"}


def register_retriever(prefix: str, import_path: str) -> None:
    """Register ``prefix -> "module:Class"`` (a later registration of the same prefix wins)."""
    if not re.fullmatch(r"[a-z][a-z0-9_\-]*", prefix):
        raise SpecError(
            f"retriever prefix {prefix!r} must be lowercase letters, digits, '_' or '-'"
        )
    RETRIEVERS[prefix] = import_path


def list_retrievers() -> list[str]:
    """Registered prefixes, sorted (imports nothing)."""
    return sorted(RETRIEVERS)


def retriever_class(prefix: str) -> type:
    """The class registered under *prefix*.

    Raises:
        UnknownNameError: no such prefix (the nearest is suggested).
    """
    path = RETRIEVERS.get(prefix)
    if path is None:
        raise UnknownNameError(
            f"unknown retriever {prefix!r}.{suggest(prefix, list(RETRIEVERS))} "
            f"Known: {', '.join(list_retrievers())}"
        )
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def parse_literal(text: str) -> Any:
    """``"12"`` -> 12, ``"0.9"`` -> 0.9, ``"true"``/``"false"`` -> bool, anything else -> str."""
    value = text.strip()
    low = value.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    return value


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"bm25:k1=0.9,b=0.4"`` -> ``("bm25", {"k1": "0.9", "b": "0.4"})`` (values as text).

    Raises:
        SpecError: empty spec, composition syntax not supported here, a part without ``=``,
            or an option given twice (the part is named).
    """
    text = spec.strip()
    if not text:
        raise SpecError("empty retriever spec; write e.g. 'bm25' or 'bm25:k1=0.9,b=0.4'")
    if ">>" in text or "(" in text:
        raise SpecError(
            f"retriever spec {spec!r}: pipelines ('>>') and fusion ('fuse(...)') are "
            "not available in this version; give a single retriever such as 'bm25'"
        )
    prefix, _, rest = text.partition(":")
    prefix = prefix.strip().lower()
    options: dict[str, str] = {}
    if rest.strip():
        for part in rest.split(","):
            if not part.strip():
                raise SpecError(
                    f"retriever spec {spec!r}: empty option (two commas or a trailing comma)"
                )
            name, eq, value = part.partition("=")
            name = name.strip()
            if not eq and not options and name:  # dense:MODEL -> the positional argument
                options[POSITIONAL] = name
                continue
            if not eq or not name:
                raise SpecError(
                    f"retriever spec {spec!r}: option {part.strip()!r} must be name=value"
                )
            if name in options:
                raise SpecError(f"retriever spec {spec!r}: option {name!r} is given twice")
            options[name] = value.strip()
    return prefix, options


def spec_options(cls: type) -> dict[str, Any]:
    """``{option: default}`` of a registered class (its keyword-only constructor parameters)."""
    params = inspect.signature(cls).parameters
    return {
        n: p.default
        for n, p in params.items()
        if p.kind is p.KEYWORD_ONLY and p.default is not p.empty and not n.startswith("_")
    }


def _coerce(spec: str, name: str, text: str, default: Any) -> Any:
    value = parse_literal(text)
    where = f"retriever spec {spec!r}: option {name}={text!r}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise SpecError(f"{where}: expected true or false")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"{where}: expected an integer")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"{where}: expected a number")
        return float(value)
    if isinstance(default, str):
        return text.strip()
    return value


def parse_retriever(spec: str):
    """Build a retriever from its spec string.

    Examples: ``bm25``, ``bm25:k1=0.9,b=0.4``, ``bm25:method=lucene,stemmer=english,stopwords=en``,
    ``bm25:preset=pyserini``.

    Returns:
        An object following :class:`nuggetbench.retrieval.base.Retriever`.

    Raises:
        UnknownNameError: unknown prefix (the nearest is suggested).
        SpecError: malformed spec, unknown option (the part is named and the valid options
            listed), unknown preset, or a value of the wrong type.
    """
    if ">>" in spec or "(" in spec:  # pipelines and fusion: nuggetbench.retrieval.pipeline
        from .pipeline import parse_composite

        composite = parse_composite(spec)
        if composite is not None:
            return composite
    prefix, raw = split_spec(spec)
    cls = retriever_class(prefix)
    args = _positional_args(spec, prefix, cls, raw.pop(POSITIONAL, None))
    defaults = spec_options(cls)
    presets: dict[str, dict[str, Any]] = getattr(cls, "PRESETS", {}) or {}
    valid = sorted(defaults) + (["preset"] if presets else [])
    for name in raw:
        if name not in valid:
            raise SpecError(
                f"retriever spec {spec!r}: unknown option {name!r} for {prefix}."
                f"{suggest(name, valid)} Valid options: {', '.join(valid)}"
            )
    options: dict[str, Any] = {}
    if "preset" in raw:
        preset = raw["preset"]
        if preset not in presets:
            raise SpecError(
                f"retriever spec {spec!r}: unknown preset {preset!r} for {prefix}."
                f"{suggest(preset, list(presets))} Presets: {', '.join(sorted(presets))}"
            )
        options.update(presets[preset])
    for name, text in raw.items():
        if name != "preset":
            options[name] = _coerce(spec, name, text, defaults[name])
    try:
        return cls(*args, **options)
    except SpecError:
        raise
    except (ValueError, TypeError) as exc:
        raise SpecError(f"retriever spec {spec!r}: {exc}") from exc


def _positional_args(spec: str, prefix: str, cls: type, value: str | None) -> list[str]:
    """``[value]`` for classes taking one positional argument (a model), else ``[]``.

    Raises:
        SpecError: a bare value for a class without a positional argument, or a missing one.
    """
    params = [
        p
        for p in inspect.signature(cls).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if value is None:
        if params and params[0].default is params[0].empty:
            raise SpecError(
                f"retriever spec {spec!r}: {prefix} needs a {params[0].name}: write "
                f"{prefix}:{params[0].name.upper()} (a Hugging Face id or a local folder)"
            )
        return []
    if not params:
        raise SpecError(f"retriever spec {spec!r}: option {value!r} must be name=value")
    return [value]


def format_value(value: Any) -> str:
    """A value as it is written in a spec (``true``/``false`` for booleans, ``repr`` of floats)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def format_spec(
    prefix: str, options: dict[str, Any], defaults: dict[str, Any] | None = None
) -> str:
    """Canonical spec: *prefix* and the options that differ from *defaults*, in *options*' order.

    ``format_spec("bm25", {"k1": 0.9, "b": 0.4, "method": "lucene"}, {"method": "lucene", ...})``
    is ``"bm25:k1=0.9,b=0.4"``; ``parse_retriever`` of it rebuilds an equal retriever.
    """
    defaults = defaults or {}
    parts = [
        f"{k}={format_value(v)}"
        for k, v in options.items()
        if not (k in defaults and defaults[k] == v and type(defaults[k]) is type(v))
    ]
    return prefix + (":" + ",".join(parts) if parts else "")
