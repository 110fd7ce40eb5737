"""Retriever spec strings and the retriever registry.

A single retriever is ``<prefix>[:<option>=<value>,...]`` (``bm25``, ``bm25:k1=0.9,b=0.4``,
``bm25:preset=lucene-flat``, ``dense:MODEL,batch_size=8``); compositions nest them:

* ``a >> b >> c``: a first stage and rerankers (:class:`~.compose.Pipeline`);
* ``fuse(a, b; method=rrf,depth=100)``: fusion (:class:`~.compose.Fusion`); the retrievers are
  separated by commas and the fusion options follow a ``;`` (``weights`` as ``0.3/0.7``); a comma
  followed by ``name=value`` without a registered prefix continues the previous retriever's options;
* ``hyde(RETRIEVER; model=M)``, ``subq(RETRIEVER; ...)``: wrappers built as
  ``cls(inner_retriever, **options)`` (:data:`WRAPPERS`);
* ``prefix(option=value, ...)``: the same as ``prefix:option=value,...`` for a registered
  retriever (``llm_listwise(model=M, k=100)``).

The prefix names a class through :data:`RETRIEVERS`, a lazy :class:`~nuggetbench.spec.Registry`
of ``"module:Class"`` strings (nothing is imported before it is used). A registered class declares
its options once in ``OPTIONS``, a frozen :class:`~nuggetbench.spec.Options` dataclass (type,
default, allowed values, bounds, description); a class without ``OPTIONS`` has them read from its
keyword-only constructor parameters (typed by their defaults). ``PRESETS`` maps preset names to
option dicts (``preset=lucene-flat``), explicit options overriding the preset; a bare first value
(``dense:MODEL``) is the class's positional argument.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Sequence
from typing import Any

from nuggetbench.errors import InputError, SpecError, UnknownNameError, suggest
from nuggetbench.llm.secrets import spec_key_problem
from nuggetbench.plugins import Registry, call_with, lookup
from nuggetbench.retrieval.compose.pipeline import Fusion, Pipeline
from nuggetbench.spec import (
    POSITIONAL,
    REQUIRED,
    Param,
    format_colon_spec,
    format_literal,
    parse_literal,
    short_label,
    split_options,
    split_top,
)

__all__ = [
    "RETRIEVERS",
    "WRAPPERS",
    "baseline_label",
    "format_spec",
    "format_value",
    "list_retrievers",
    "parse_literal",
    "parse_retriever",
    "public_spec",
    "register_retriever",
    "retriever_class",
    "retriever_params",
    "short_label",
    "spec_options",
    "split_label",
    "system_labels",
]

#: Single retrievers and rerankers: ``prefix -> "module:Class"``.
RETRIEVERS = Registry(
    "retriever",
    {
        "bm25": "nuggetbench.retrieval.bm25.retriever:BM25",
        "dense": "nuggetbench.retrieval.dense.retriever:DenseRetriever",
        "sparse": "nuggetbench.retrieval.learned.sparse:SparseRetriever",
        "colbert": "nuggetbench.retrieval.learned.colbert:ColBERTRetriever",
        "rerank": "nuggetbench.retrieval.rerankers.cross_encoder:CrossEncoderReranker",
        "llm_listwise": "nuggetbench.retrieval.rerankers.llm:LLMListwise",
        "llm_pointwise": "nuggetbench.retrieval.rerankers.llm:LLMPointwise",
    },
    hint="Run `nuggetbench retrievers` for the list and their options.",
)
_HINT = RETRIEVERS.hint

#: Retrievers wrapping another one, written ``name(INNER[; option=value,...])``.
WRAPPERS = Registry(
    "retriever wrapper",
    {
        "hyde": "nuggetbench.retrieval.rerankers.querygen:HyDE",
        "subq": "nuggetbench.retrieval.rerankers.querygen:SubQ",
    },
)

#: The options of ``fuse(...; ...)``, declared once.
FUSE_PARAMS: dict[str, Param] = {
    "method": Param("method", str, None, "rrf (default), sum, mnz, anz, max or min"),
    "depth": Param("depth", int, None, "entries of each run fused per query", minimum=1),
    "norm": Param("norm", str, None, "score normalisation: minmax, zscore, max or none"),
    "weights": Param("weights", str, None, "one weight per retriever, as 0.3/0.7"),
    "k": Param("k", float, 60.0, "the RRF constant"),
    "preset": Param(
        "preset",
        str,
        None,
        "freshstack: the freshstack package's fusion (sum of min-max scores, depth 100, "
        "rounded to 3 decimals)",
    ),
}

_PREFIX = re.compile(r"^[a-z][a-z0-9_\-]*$")


def register_retriever(prefix: str, import_path: str | type) -> None:
    """Register ``prefix -> "module:Class"`` (or the class itself); a later registration of the
    same prefix wins.

    Raises:
        SpecError: the prefix is not lowercase letters, digits, ``_`` or ``-``.
    """
    if not _PREFIX.fullmatch(prefix):
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
    return lookup(RETRIEVERS, prefix, kind="retriever", hint=_HINT)


def retriever_params(cls: type) -> dict[str, Param]:
    """``{option: Param}`` of a retriever class: its ``OPTIONS`` declarations, else its keyword-only
    constructor parameters typed by their defaults."""
    options = getattr(cls, "OPTIONS", None)
    if options is not None:
        return options.params()
    out = {}
    for n, p in inspect.signature(cls).parameters.items():
        if p.kind is not p.KEYWORD_ONLY or n.startswith("_"):
            continue
        default = REQUIRED if p.default is p.empty else p.default
        kind = type(default) if type(default) in (bool, int, float, str) else object
        out[n] = Param(n, kind, default)
    return out


def spec_options(cls: type) -> dict[str, Any]:
    """``{option: default}`` of a registered class."""
    return {n: p.default for n, p in retriever_params(cls).items() if not p.required}


def format_value(value: Any) -> str:
    """A value as it is written in a spec (``true``/``false`` for booleans, ``repr`` of floats)."""
    return value if isinstance(value, str) else format_literal(value)


def format_spec(
    prefix: str, options: dict[str, Any], defaults: dict[str, Any] | None = None
) -> str:
    """Canonical spec: *prefix* and the options that differ from *defaults*, in *options*' order.

    ``format_spec("bm25", {"k1": 0.9, "b": 0.4, "method": "lucene"}, {"method": "lucene", ...})``
    is ``"bm25:k1=0.9,b=0.4"``; ``parse_retriever`` of it rebuilds an equal retriever.
    """
    defaults = defaults or {}
    changed = {
        k: v
        for k, v in options.items()
        if not (k in defaults and defaults[k] == v and type(defaults[k]) is type(v))
    }
    return format_colon_spec(prefix, changed)


# --- labels -------------------------------------------------------------------------------------
_CALL = re.compile(r"^(\s*[A-Za-z][A-Za-z0-9_\-]*\s*\()(.*)(\)\s*(?:@\s*\d+)?\s*)$", re.S)
_DEPTH = re.compile(r"^(.*?)(@\s*\d+\s*)?$", re.S)


def split_label(spec: str) -> tuple[str, str | None]:
    """Take the ``name=LABEL`` option out of a retriever spec: ``(spec without it, LABEL)``.

    Every spec takes ``name=``: a single retriever among its options
    (``bm25:k1=0.9,b=0.4,name=tuned``, ``rerank:MODEL,name=ce@100``), a pipeline on its
    last stage (``bm25 >> rerank:MODEL,name=ce``), ``fuse(...)`` and the wrappers after the
    ``;`` (``fuse(bm25, dense:M; method=rrf, name=hybrid)``), a retriever written as a call
    among its options (``llm_listwise(model=M, name=judge)``). The label names the system in
    tables, ``results.json`` and run files; the spec without it is what is run and cached.

    Raises:
        SpecError: an empty label, or unbalanced parentheses.
    """
    text = spec.strip()
    stages = split_top(text, (">>",), where="retriever spec")
    last = stages[-1]
    call = _CALL.match(last)
    if call is not None:
        head, inner, tail = call.groups()
        parts = split_top(inner, (";",), where="retriever spec")
        options, label = _drop_name(parts[-1], spec)  # fuse(a, b) items never start "name="
        sep = ";" if len(parts) > 1 else ""
        kept = ";".join(parts[:-1]) + (sep + options if options.strip() or not sep else "")
        new_last = head + kept + tail
    else:
        prefix, sep, rest = last.partition(":")
        if not sep:
            return text, None
        body, depth = _DEPTH.match(rest).groups()  # type: ignore[union-attr]
        options, label = _drop_name(body, spec)
        new_last = prefix + (":" + options if options.strip() else "") + (depth or "")
    if label is None:
        return text, None
    return ">>".join([*stages[:-1], new_last]).strip(), label


def _drop_name(options: str, spec: str) -> tuple[str, str | None]:
    """``options`` without its ``name=`` item, and the name (``None`` when there is none)."""
    items = split_top(options, (",",), where="retriever spec")
    label = None
    kept = []
    for item in items:
        key, eq, value = item.partition("=")
        if eq and key.strip() == "name":
            label = str(parse_literal(value.strip())).strip()
            if not label:
                raise SpecError(
                    f"retriever spec {spec!r}: name= needs a label, e.g. name=bm25-tuned"
                )
        else:
            kept.append(item)
    return ",".join(kept), label


#: Options naming where an endpoint is and which variable holds its key: never printed.
PRIVATE_OPTIONS = ("base_url", "api_key_env")


def public_spec(spec: str) -> str:
    """*spec* without its :data:`PRIVATE_OPTIONS` assignments, as it may be printed and saved
    (``bm25 >> llm_listwise(model=M, base_url=http://h/v1)`` -> ``bm25 >> llm_listwise(model=M)``).
    Specs without them come back unchanged."""
    names = "|".join(PRIVATE_OPTIONS)
    if not re.search(rf"(?:^|[(:,;])\s*(?:{names})\s*=", spec):
        return spec
    out = re.sub(rf"([(:,;])\s*(?:{names})\s*=[^,;)]*", r"\1", spec)
    out = re.sub(r"([(:;])(?:\s*,)+\s*", r"\1", out)
    out = re.sub(r"(?:\s*,)+\s*(?=[,;)]|>>|$)", "", out)
    out = re.sub(r",(?:\s*,)+", ",", out)
    out = re.sub(r";\s*\)", ")", out)
    return re.sub(r":\s*(?=>>|\)|,|$)", "", out).strip()


# --- parsing ------------------------------------------------------------------------------------
def parse_retriever(spec: str):
    """Build a retriever (or a pipeline, fusion or wrapper) from its spec string.

    Examples: ``bm25``, ``bm25:k1=0.9,b=0.4``, ``bm25:preset=bm25s``,
    ``bm25 >> rerank:MODEL@100``, ``fuse(bm25, dense:MODEL; method=rrf)``, ``hyde(bm25)``.
    Any spec may carry ``name=LABEL`` (see :func:`split_label`), set as ``retriever.label``.

    Returns:
        An object following :class:`nuggetbench.retrieval.protocols.Retriever`.

    Raises:
        UnknownNameError: unknown prefix (the nearest is suggested).
        SpecError: malformed spec, unknown option (the part is named and the valid options
            listed), unknown preset, or a value of the wrong type or out of range; a value
            shaped like an API key (not quoted).
    """
    text = spec.strip() if isinstance(spec, str) else ""
    if not text:
        raise SpecError("empty retriever spec; write e.g. 'bm25' or 'bm25:k1=0.9,b=0.4'")
    problem = spec_key_problem(text)
    if problem:  # before any message quotes the spec
        raise SpecError(problem)
    text, label = split_label(text)
    if label is not None:  # a label names the system; it is not an option of the retriever
        retriever = parse_retriever(text)
        with contextlib.suppress(AttributeError):  # __slots__: the experiment keeps the label
            retriever.label = label
        return retriever
    where = f"retriever spec {spec!r}"
    stages = split_top(text, (">>",), where="retriever spec")
    if len(stages) > 1:
        if any(not s.strip() for s in stages):
            raise SpecError(f"{where}: empty stage around '>>'")
        return Pipeline(parse_retriever(stages[0]), *(parse_retriever(s) for s in stages[1:]))
    call = re.match(r"^([A-Za-z][A-Za-z0-9_\-]*)\s*\(", text)
    if call is not None:
        name = call.group(1).lower()
        if name == "fuse":
            return _parse_fuse(where, text)
        if name in WRAPPERS:
            return _parse_wrapper(where, text, name)
        if name not in RETRIEVERS:  # name the unknown retriever rather than the parentheses
            known = sorted({*RETRIEVERS, *WRAPPERS, "fuse"})
            raise UnknownNameError(
                f"{where}: unknown retriever {call.group(1)!r}.{suggest(name, known)} Known: "
                f"{', '.join(known)}. Run `nuggetbench retrievers` for their options"
            )
        if name in RETRIEVERS:
            parts = _call_parts(where, text, name)
            if len(parts) > 1:
                raise SpecError(f"{where}: write {name}(option=value, ...) without ';'")
            return _parse_single(spec, f"{name}:{parts[0].strip()}" if parts[0].strip() else name)
    return _parse_single(spec, text)


def _parse_single(spec: str, text: str):
    where = f"retriever spec {spec!r}"
    if "(" in text or ")" in text:
        raise SpecError(
            f"{where}: parentheses belong to fuse(...) and to the wrappers "
            f"({', '.join(sorted(WRAPPERS))}); a single retriever is written prefix:option=value"
        )
    prefix, _, rest = text.partition(":")
    prefix = prefix.strip().lower()
    head, comma, tail = text.partition(",")
    if comma and ":" not in head and head.strip().lower() in RETRIEVERS:
        right = f"{head.strip()}:{tail.strip()}"
        raise SpecError(
            f"{where}: a retriever's options follow its prefix after a colon; write {right!r}"
        )
    cls = retriever_class(prefix)
    raw = split_options(rest, where=where, positional=True)
    args = _positional_args(where, prefix, cls, raw.pop(POSITIONAL, None))
    params = retriever_params(cls)
    presets: dict[str, dict[str, Any]] = getattr(cls, "PRESETS", {}) or {}
    valid = [*params, *(["preset"] if presets else [])]
    options: dict[str, Any] = {}
    if "preset" in raw and presets:
        preset = raw.pop("preset").strip()
        retired = getattr(cls, "RETIRED_PRESETS", {}) or {}
        if preset in retired:
            raise SpecError(f"{where}: preset {preset!r} was removed: {retired[preset]}")
        if preset not in presets:
            raise SpecError(
                f"{where}: unknown preset {preset!r} for {prefix}."
                f"{suggest(preset, list(presets))} Presets: {', '.join(sorted(presets))}"
            )
        options.update(presets[preset])
    for name, value in raw.items():
        if name not in params:
            raise SpecError(
                f"{where}: unknown option {name!r} for {prefix}.{suggest(name, valid)} "
                f"Valid options: {', '.join(sorted(valid))}"
            )
        options[name] = params[name].coerce(
            parse_literal(value), where=where, noun="option", text=value
        )
    return call_with(cls, where, *args, **options)


def _positional_args(where: str, prefix: str, cls: type, value: str | None) -> list[str]:
    """``[value]`` for classes taking one positional argument (a model), else ``[]``.

    Raises:
        SpecError: a bare value for a class without a positional argument, or a missing one.
    """
    params = [
        p
        for p in inspect.signature(cls).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "options"
    ]
    if value is None:
        if params and params[0].default is params[0].empty:
            raise SpecError(
                f"{where}: {prefix} needs a {params[0].name}: write "
                f"{prefix}:{params[0].name.upper()} (a Hugging Face id or a local folder)"
            )
        return []
    if not params:
        raise SpecError(f"{where}: option {value!r} must be written name=value")
    return [value]


def _call_parts(where: str, text: str, name: str) -> list[str]:
    """The ``;``-separated parts inside ``name(...)``; *text* must end with its closing ``)``."""
    if not text.endswith(")"):
        raise SpecError(f"{where}: text after the closing ')' of {name}(...)")
    return split_top(text[text.index("(") + 1 : -1], ";", where="retriever spec")


def _starts_retriever(piece: str) -> bool:
    m = re.match(r"\s*([A-Za-z][A-Za-z0-9_\-]*)\s*(\(|:|$|>>)", piece)
    return bool(m) and (
        m.group(1).lower() in RETRIEVERS
        or m.group(1).lower() in WRAPPERS
        or m.group(1).lower() == "fuse"
    )


def _parse_fuse(where: str, text: str) -> Fusion:
    parts = _call_parts(where, text, "fuse")
    if len(parts) > 2:
        raise SpecError(f"{where}: fuse(...) takes one ';' before its options")
    pieces: list[str] = []
    for piece in split_top(parts[0], ",", where="retriever spec"):
        if pieces and not _starts_retriever(piece):
            pieces[-1] += "," + piece
        else:
            pieces.append(piece)
    pieces = [p.strip() for p in pieces if p.strip()]
    if not pieces:
        raise SpecError(f"{where}: fuse(...) needs retrievers, e.g. fuse(bm25, dense:MODEL)")
    options = _fuse_options(where, parts[1]) if len(parts) == 2 else {}
    return Fusion([parse_retriever(p) for p in pieces], **options)


def _fuse_options(where: str, text: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for name, value in split_options(text, where=where).items():
        param = FUSE_PARAMS.get(name)
        if param is None:
            raise SpecError(
                f"{where}: unknown fusion option {name!r}; valid: {', '.join(FUSE_PARAMS)}"
            )
        value = value.strip()
        if name == "weights":
            try:
                options[name] = [float(w) for w in re.split(r"[/\s]+", value) if w]
            except ValueError:
                raise SpecError(
                    f"{where}: weights={value!r} must be numbers separated by '/'"
                ) from None
        elif name in ("method", "norm", "preset"):
            options[name] = None if value.lower() in ("none", "") else value
        else:  # depth, k: numbers (an integral k stays an int, as written)
            literal = parse_literal(value)
            coerced = param.coerce(literal, where=where, noun="option", text=value)
            options[name] = literal if isinstance(literal, int) else coerced
    return options


def _parse_wrapper(where: str, text: str, name: str):
    """``hyde(bm25; model=gpt-4o)`` -> ``HyDE(parse_retriever("bm25"), model="gpt-4o")``."""
    parts = _call_parts(where, text, name)
    if len(parts) > 2 or not parts[0].strip():
        raise SpecError(f"{where}: write {name}(RETRIEVER) or {name}(RETRIEVER; option=value,...)")
    cls = lookup(WRAPPERS, name, kind="retriever wrapper")
    params = retriever_params(cls)
    options: dict[str, Any] = {}
    raw = split_options(parts[1], where=where) if len(parts) == 2 else {}
    for key, value in raw.items():
        if key not in params:
            raise SpecError(
                f"{where}: {name} option {key!r} must be one of "
                f"{', '.join(f'{k}=...' for k in sorted(params))}"
            )
        options[key] = params[key].coerce(
            parse_literal(value), where=where, noun="option", text=value
        )
    return call_with(cls, where, parse_retriever(parts[0].strip()), **options)


def system_labels(specs: Sequence[str]) -> list[str]:
    """The label of each system: its ``name=`` (see
    :func:`nuggetbench.retrieval.spec.split_label`), else the spec itself (tables shorten long
    ones for display: :func:`nuggetbench.spec.short_label`); made unique with ``#2``...

    Raises:
        InputError: two specs name the same label.
    """
    out: list[str] = []
    named = [split_label(spec)[1] for spec in specs]
    taken = [n for n in named if n]
    if len(set(taken)) != len(taken):
        raise InputError(f"two retrievers have the same name= ({', '.join(taken)}); name each once")
    for spec, name in zip(specs, named):
        label = name or spec
        base, k = label, 2
        while label in out or (not name and label in taken):
            label = f"{base}#{k}"
            k += 1
        out.append(label)
    return out


def baseline_label(
    baseline: str | None, names: list[str], aliases: dict[str, str] | None = None
) -> str | None:
    """The baseline's system name from a name, a spec (*aliases*: spec -> label) or a 1-based
    position (checked before any work)."""
    if baseline is None or baseline in names:
        return baseline
    if aliases and baseline in aliases:
        return aliases[baseline]
    if baseline.isdigit() and 1 <= int(baseline) <= len(names):
        return names[int(baseline) - 1]
    raise UnknownNameError(
        f"baseline {baseline!r} is not one of the systems.{suggest(baseline, names)} "
        f"Systems: {', '.join(names)} (or give a 1-based position)"
    )
