"""The spec kernel: one grammar, one parameter declaration and one lazy registry for every
mini-language of nuggetbench.

Measures (``nDCG@10``, ``P(rel=2)@5``), retrievers (``bm25:k1=0.9,b=0.4``, ``a >> b``,
``fuse(a, b; method=rrf)``), chunkers (``paragraphs:group=3``), profiles and dataset loader options
(``-O max_docs=1000``) are all read with the functions here:

* :func:`split_top` splits text on separators outside parentheses and quotes;
* :func:`parse_literal` reads a value (``true``, ``12``, ``0.5``, ``'quoted'``, ``bare-word``);
* :func:`split_colon_spec` reads ``name:key=value,...`` and :func:`split_call_spec` reads
  ``name(key=value,...)@k``;
* :class:`Param` declares a parameter once (type, default, allowed values, bounds, one-line
  description, as ir_measures' ``ParamInfo``) and coerces values to it;
* :class:`~nuggetbench.plugins.Registry` (its own module) maps names to objects or
  to lazy ``"module:attr"`` strings (imported on first use), loads provider modules on a miss and
  suggests the nearest name.

This module imports nothing of ours but :mod:`nuggetbench.errors` and :mod:`nuggetbench.plugins`:
every layer may use it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from nuggetbench.errors import SpecError, UnknownNameError, suggest

__all__ = [
    "short_label",
    "short_labels",
    "REQUIRED",
    "Options",
    "Param",
    "format_colon_spec",
    "option",
    "params_table",
    "parse_literal",
    "format_literal",
    "split_call_spec",
    "split_colon_spec",
    "split_options",
    "split_top",
]

log = logging.getLogger(__name__)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Default of a parameter that must be given.
REQUIRED: Any = _Required()

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$|^[+-]?(inf|nan)$")
_TRUE = frozenset({"true", "yes", "on"})
_FALSE = frozenset({"false", "no", "off"})
_NONE = frozenset({"none", "null"})
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --- values -------------------------------------------------------------------------------------
def parse_literal(text: str, *, none: bool = False) -> Any:
    """Read one value as written in a spec.

    ``true``/``yes``/``on`` and ``false``/``no``/``off`` (any case) are booleans; an integer or
    a decimal (``1e-3``, ``inf``) is a number; ``'quoted'`` or ``"quoted"`` is the string inside;
    with *none*, ``none``/``null`` is ``None``; anything else is the stripped text.
    """
    value = text.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    low = value.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    if none and low in _NONE:
        return None
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    return value


def format_literal(value: Any, *, true: str = "true", false: str = "false") -> str:
    """Print *value* so that :func:`parse_literal` reads it back (strings quoted when needed)."""
    if isinstance(value, bool):
        return true if value else false
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        plain = re.match(r"^[A-Za-z0-9_\-./:]+$", value) and not isinstance(
            parse_literal(value), (bool, int, float)
        )
        return value if plain else repr(value)
    return str(value)


_TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


@dataclass(frozen=True)
class Param:
    """One declared parameter of a measure family, retriever, chunker, fusion or loader.

    Attributes:
        name: the name written in specs (``rel``, ``k1``, ``group``).
        type: ``bool``, ``int``, ``float``, ``str``, or ``object`` (any value, unchecked).
        default: the value when the parameter is not given; :data:`REQUIRED` when it must be.
        description: one line for generated help (``nuggetbench measures``/``retrievers``).
        choices: allowed values (empty: any value of the type).
        minimum, maximum: inclusive bounds for numbers (``None``: unbounded).
        below: exclusive upper bound for numbers (``None``: none).
    """

    name: str
    type: type = object
    default: Any = REQUIRED
    description: str = ""
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    below: float | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def expected(self) -> str:
        """What the parameter takes, in words (``a positive integer``, ``one of a, b``)."""
        if self.choices:
            return "one of " + ", ".join(format_literal(c) for c in self.choices)
        word = _TYPE_WORDS.get(self.type, "a value")
        if self.type is int and self.minimum == 1:
            word = "a positive integer"
        elif self.type is int and self.minimum == 0:
            word = "a non-negative integer"
        return word

    def coerce(self, value: Any, *, where: str, noun: str = "parameter", text: str | None = None):
        """Check *value* (already read by :func:`parse_literal`, or a Python value) against the
        declaration and return it converted (an int for a float parameter becomes a float; a
        string parameter keeps the *text* as written).

        Args:
            value: the value.
            where: the spec, for the message (``measure 'P(rel=x)@5'``).
            noun: ``parameter`` or ``option``.
            text: the value as written, when it came from a spec string.

        Raises:
            SpecError: ``"<where>: <noun> '<name>' takes <expected>, got <name>=<text>"``.
        """
        shown = text.strip() if text is not None else format_literal(value)
        fail = SpecError(
            f"{where}: {noun} {self.name!r} takes {self.expected()}, got {self.name}={shown}"
        )
        kind = self.type
        if kind is bool:
            if not isinstance(value, bool):
                raise fail
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise fail
        elif kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise fail
            value = float(value)
        elif kind is str:
            if text is not None:
                value = text.strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                    value = value[1:-1]
            if not isinstance(value, str):
                raise fail
        if self.choices and value not in self.choices:
            hint = suggest(str(value), [str(c) for c in self.choices])
            raise UnknownNameError(
                f"{where}: {noun} {self.name!r} takes {self.expected()}, got "
                f"{self.name}={shown}.{hint}"
            )
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and (
                (self.minimum is not None and value < self.minimum)
                or (self.maximum is not None and value > self.maximum)
                or (self.below is not None and value >= self.below)
            )
        ):
            raise SpecError(f"{where}: {noun} {self.name}={shown} is {self._bounds()}")
        return value

    def _bounds(self) -> str:
        lo = self.minimum
        hi = self.maximum if self.maximum is not None else self.below
        if lo is not None and hi is not None:
            return f"not between {format_literal(lo)} and {format_literal(hi)}"
        if lo == 1 and self.type is int:
            return "not a positive integer"
        if lo is not None:
            return f"below the minimum {format_literal(lo)}"
        return f"above the maximum {format_literal(hi)}"

    def describe(self) -> str:
        """``name=default (type): description`` for help listings."""
        default = "required" if self.required else format_literal(self.default)
        return f"{self.name}={default}: {self.description}".rstrip(": ")


def params_table(*params: Param) -> dict[str, Param]:
    """``{param.name: param}`` in the order given (a family's or retriever's declaration)."""
    return {p.name: p for p in params}


# --- option dataclasses ---------------------------------------------------------------------
_ANNOTATION_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def option(
    default: Any,
    description: str,
    *,
    choices: tuple[Any, ...] = (),
    minimum: float | None = None,
    maximum: float | None = None,
):
    """A field of an :class:`Options` dataclass, declared once: default, one-line description,
    allowed values and bounds (its type is the field's annotation)."""

    meta = {"description": description, "choices": choices, "minimum": minimum, "maximum": maximum}
    return field(default=default, metadata=meta)


class Options:
    """Base of the frozen option dataclasses of retrievers (``@dataclass(frozen=True)``).

    Each field is declared with :func:`option`; :meth:`params` turns the fields into
    :class:`Param` declarations (an annotation ``int``/``float``/``bool``/``str`` types the value,
    ``X | None`` accepts any value). Construction checks every value against its declaration
    (a float field given an int becomes a float), and the instance reads like a mapping
    (``options["batch_size"]``).

    Raises:
        SpecError: from the constructor, a value of the wrong type, outside its bounds or not
            among its choices (the option is named).
    """

    WHERE: ClassVar[str] = "options"

    @classmethod
    def params(cls) -> dict[str, Param]:
        """``{name: Param}`` of the fields, in declaration order."""
        cached = cls.__dict__.get("_params_cache")
        if cached is not None:
            return cached
        out: dict[str, Param] = {}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name.startswith("_"):
                continue
            annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
            kind = _ANNOTATION_TYPES.get(str(annotation).strip(), object)
            default = f.default if f.default is not MISSING else REQUIRED
            meta = f.metadata or {}
            out[f.name] = Param(
                f.name,
                kind,
                default,
                meta.get("description", ""),
                choices=tuple(meta.get("choices") or ()),
                minimum=meta.get("minimum"),
                maximum=meta.get("maximum"),
            )
        cls._params_cache = out  # type: ignore[attr-defined]
        return out

    def __post_init__(self) -> None:
        for name, param in self.params().items():
            value = getattr(self, name)
            if value is None and param.default is None:
                continue
            object.__setattr__(self, name, param.coerce(value, where=self.WHERE, noun="option"))

    def __getitem__(self, name: str) -> Any:
        if name not in self.params():
            raise KeyError(name)
        return getattr(self, name)

    def as_dict(self) -> dict[str, Any]:
        """``{name: value}`` of every option."""
        return {name: getattr(self, name) for name in self.params()}

    def changed(self) -> dict[str, Any]:
        """The options whose value differs from the default (same value of another type counts
        as different), in declaration order."""
        out = {}
        for name, param in self.params().items():
            value = getattr(self, name)
            if not (param.default == value and type(param.default) is type(value)):
                out[name] = value
        return out


def format_colon_spec(prefix: str, options: Mapping[str, Any], first: str | None = None) -> str:
    """``prefix[:first][,key=value...]`` (booleans as ``true``/``false``): the canonical spec
    string of a retriever or chunker whose *options* are the non-default ones."""
    parts = [first] if first else []
    parts += [
        f"{k}={format_literal(v) if not isinstance(v, str) else v}" for k, v in options.items()
    ]
    return prefix + (":" + ",".join(parts) if parts else "")


# --- grammar ------------------------------------------------------------------------------------
def split_top(text: str, separators: str | tuple[str, ...], *, where: str = "spec") -> list[str]:
    """Split *text* on a separator (a string, e.g. ``">>"``, or a tuple of strings, any of which
    separates) standing outside parentheses and quotes.

    Raises:
        SpecError: unbalanced parentheses (the spec is named).
    """
    seps = (separators,) if isinstance(separators, str) else separators
    parts: list[str] = []
    depth, quote, start, i = 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SpecError(f"{where} {text!r}: unbalanced ')'")
        elif depth == 0:
            sep = next((s for s in seps if text.startswith(s, i)), None)
            if sep is not None:
                parts.append(text[start:i])
                i += len(sep)
                start = i
                continue
        i += 1
    if depth != 0:
        raise SpecError(f"{where} {text!r}: unbalanced '('")
    parts.append(text[start:])
    return parts


POSITIONAL = "<positional>"
"""Key of a bare first value in :func:`split_options` (``dense:MODEL``)."""


def split_options(
    text: str, *, where: str, positional: bool = False, sep: str = ","
) -> dict[str, str]:
    """``"k1=0.9,b=0.4"`` -> ``{"k1": "0.9", "b": "0.4"}`` (values as written).

    Args:
        text: the options.
        where: the spec, for messages.
        positional: accept a bare first value (stored under :data:`POSITIONAL`).
        sep: the separator between options.

    Raises:
        SpecError: an empty option, a part without ``=`` (quoted ``'name'``), a bad name, or an
            option given twice.
    """
    options: dict[str, str] = {}
    if not text.strip():
        return options
    for part in split_top(text, sep, where=where):
        if not part.strip():
            raise SpecError(f"{where}: empty option (two separators or a trailing one)")
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq and positional and not options and name:
            options[POSITIONAL] = name
            continue
        if not eq or not name:
            raise SpecError(f"{where}: option {name or part.strip()!r} must be written name=value")
        if not _NAME.match(name):
            raise SpecError(f"{where}: bad option name {name!r}")
        if name in options:
            raise SpecError(f"{where}: option {name!r} is given twice")
        options[name] = value
    return options


def split_colon_spec(
    spec: str, *, what: str, example: str, positional: bool = False
) -> tuple[str, dict[str, str]]:
    """``"bm25:k1=0.9,b=0.4"`` -> ``("bm25", {"k1": "0.9", "b": "0.4"})``.

    Raises:
        SpecError: an empty spec (``"empty <what> spec; write e.g. <example>"``) or bad options.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(f"empty {what} spec; write e.g. {example}")
    name, _, rest = spec.strip().partition(":")
    return name.strip(), split_options(rest, where=f"{what} spec {spec!r}", positional=positional)


_CALL = re.compile(
    r"""^\s*(?P<name>[A-Za-z_][A-Za-z0-9_\-.]*?)\s*
        (?:\((?P<params>.*)\)\s*)?
        (?:@\s*(?P<cutoff>[^\s@()]*)\s*)?$""",
    re.VERBOSE | re.DOTALL,
)


def split_call_spec(spec: str, *, where: str) -> tuple[str, str | None, str | None] | None:
    """``"P(rel=2)@5"`` -> ``("P", "rel=2", "5")``; ``None`` when *spec* does not have that shape.

    The parameters and cutoff are returned as written (``None`` when absent).
    """
    m = _CALL.match(spec)
    if not m:
        return None
    params = m.group("params")
    if params is not None and ("(" in params or ")" in params):
        return None
    return m.group("name"), params, m.group("cutoff")


# --- registries ---------------------------------------------------------------------------------
def short_label(spec: str, width: int = 24) -> str:
    """A display label of at most *width* characters for a long spec (terminal tables): the spec
    itself when short enough, else with each path or hub id inside it cut to its last part
    (``dense:/models/e5-small-v2`` -> ``dense:e5-small-v2``), else cut in the middle with
    ``…``. A leading ``FOLDER/`` is kept (a leading path, ``/``, ``~`` or ``.``, is cut as
    the others): the folder of a system compared across output folders stays
    (``A/bm25:method=r…rds=none``). Results, files and
    the provenance keep the full spec; ``name=`` gives a label of one's own choice."""
    text = spec.strip()
    if len(text) <= width:
        return text
    text = re.sub(r"(?:(?<=[\s:,;()=>])|^(?=[/~.]))[^\s:,;()=>]*/([^\s:,;()=>/]+)/?", r"\1", text)
    if len(text) <= width:
        return text
    head = (width - 1) * 2 // 3
    return text[:head] + "\u2026" + text[len(text) - (width - 1 - head) :]


def short_labels(specs: Sequence[str], width: int = 24) -> list[str]:
    """:func:`short_label` of each of *specs*, made distinct: different specs whose short labels
    are equal (``dense:/a/e5`` and ``dense:/b/e5``; two long specs that differ in the middle)
    get ``~1``, ``~2``... within *width*, in order (then, should those still meet another
    label, ``#<position>``). Equal specs keep equal labels."""
    keys = [s.strip() for s in specs]
    out = [short_label(s, width) for s in specs]
    for idx in _clashes(out, keys):
        numbers: dict[str, int] = {}
        for i in idx:
            tag = f"~{numbers.setdefault(keys[i], len(numbers) + 1)}"
            out[i] = short_label(specs[i], max(1, width - len(tag))) + tag
    for idx in _clashes(out, keys):
        for i in idx:
            tag = f"#{keys.index(keys[i]) + 1}"
            out[i] = short_label(specs[i], max(1, width - len(tag))) + tag
    return out


def _clashes(labels: list[str], keys: list[str]) -> list[list[int]]:
    """Positions sharing a label though their *keys* differ, grouped by label."""
    groups: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(label, []).append(i)
    return [idx for idx in groups.values() if len({keys[i] for i in idx}) > 1]
