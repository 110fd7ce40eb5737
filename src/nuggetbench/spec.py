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
* :class:`Registry` maps names to objects or to lazy ``"module:attr"`` strings (imported on
  first use), loads provider modules on a miss and suggests the nearest name.

This module imports nothing of ours but :mod:`nuggetbench.errors`: every layer may use it.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import SpecError, UnknownNameError, suggest

__all__ = [
    "REQUIRED",
    "Param",
    "Registry",
    "params_table",
    "parse_literal",
    "format_literal",
    "resolve",
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
            raise SpecError(
                f"{where}: {noun} {self.name!r} takes {self.expected()}, got "
                f"{self.name}={shown}.{hint}"
            )
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if (
                (self.minimum is not None and value < self.minimum)
                or (self.maximum is not None and value > self.maximum)
                or (self.below is not None and value >= self.below)
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


# --- grammar ------------------------------------------------------------------------------------
def split_top(text: str, separators: str | tuple[str, ...], *, where: str = "spec") -> list[str]:
    """Split *text* on any of *separators* (characters, or strings in a tuple) that stand outside
    parentheses and quotes.

    Raises:
        SpecError: unbalanced parentheses (the spec is named).
    """
    seps = tuple(separators) if isinstance(separators, str) else separators
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
    return name.strip(), split_options(
        rest, where=f"{what} spec {spec!r}", positional=positional
    )


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
def resolve(path: str) -> Any:
    """Import ``"package.module:attr"`` and return the attribute.

    Raises:
        ImportError, AttributeError: as importing and ``getattr`` do.
    """
    module, _, attr = path.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Registry:
    """Names -> objects, each given as the object or as a lazy ``"module:attr"`` string.

    Args:
        kind: what the names name, for messages (``retriever``, ``chunker``, ``measure``).
        entries: initial ``{name: object or "module:attr"}``.
        providers: modules imported (once, each) the first time a name is missing: modules that
            call :meth:`register` when imported (measure families do).
        hint: a sentence appended to the unknown-name error (where to find the list).

    Listing names imports nothing; :meth:`get` imports a lazy entry on first use.
    """

    def __init__(
        self,
        kind: str,
        entries: Mapping[str, Any] | None = None,
        *,
        providers: Iterable[str] = (),
        hint: str = "",
    ):
        self.kind = kind
        self._entries: dict[str, Any] = dict(entries or {})
        self._aliases: dict[str, str] = {}
        # a list given by the caller is kept (not copied), so appending to it adds a provider
        self.providers: list[str] = providers if isinstance(providers, list) else list(providers)
        self._loaded: set[str] = set()
        self.failed: dict[str, str] = {}
        self.hint = hint

    def register(self, name: str, target: Any, *, aliases: Iterable[str] = ()) -> Any:
        """Add (or replace) *name*; *target* is the object or ``"module:attr"``. Returns *target*."""
        self._entries[name] = target
        for alias in aliases:
            self._aliases[alias] = name
        return target

    def add_provider(self, module: str) -> None:
        """Add a module imported on the next miss."""
        if module not in self.providers:
            self.providers.append(module)

    def load_providers(self) -> None:
        """Import every provider module not imported yet (a failing one is logged and recorded
        in :attr:`failed`, and does not hide the others)."""
        for module in list(self.providers):
            if module in self._loaded:
                continue
            self._loaded.add(module)
            try:
                importlib.import_module(module)
            except Exception as exc:
                self.failed[module] = f"{type(exc).__name__}: {exc}"
                log.warning("%s module %s failed to import: %s", self.kind, module, exc)

    def names(self, *, aliases: bool = False) -> list[str]:
        """Registered names, sorted (imports nothing but provider modules)."""
        self.load_providers()
        return sorted([*self._entries, *(self._aliases if aliases else ())])

    def canonical(self, name: str, *, casefold: bool = False) -> str | None:
        """The registered name *name* stands for (itself, or through an alias; with *casefold*,
        a unique case-insensitive match), else ``None``."""
        for _ in range(2):
            if name in self._entries:
                return name
            if name in self._aliases:
                return self._aliases[name]
            if casefold:
                low = name.lower()
                hits = {n for n in self._entries if n.lower() == low}
                hits |= {t for a, t in self._aliases.items() if a.lower() == low}
                if len(hits) == 1:
                    return hits.pop()
            if all(m in self._loaded for m in self.providers):
                return None
            self.load_providers()
        return None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.canonical(name) is not None

    def find(self, name: str, *, casefold: bool = False) -> Any | None:
        """The object registered as *name* (imported if lazy), or ``None``."""
        key = self.canonical(name, casefold=casefold)
        if key is None:
            return None
        target = self._entries[key]
        if isinstance(target, str):
            target = self._entries[key] = resolve(target)
        return target

    def get(self, name: str, *, casefold: bool = False, where: str = "") -> Any:
        """The object registered as *name*.

        Raises:
            UnknownNameError: ``"<where>unknown <kind> 'name'. Did you mean 'x'? Known: ..."``.
        """
        found = self.find(name, casefold=casefold)
        if found is not None:
            return found
        raise self.unknown(name, where=where)

    def unknown(self, name: str, *, where: str = "") -> UnknownNameError:
        """The error for an unknown *name*, with the nearest name and the known ones."""
        names = self.names()
        broken = ""
        if self.failed:
            broken = f" (some {self.kind} modules failed to import: " + "; ".join(
                f"{m}: {e}" for m, e in self.failed.items()
            )
            broken += ")"
        hint = f" {self.hint}" if self.hint else ""
        return UnknownNameError(
            f"{where}unknown {self.kind} {name!r}.{suggest(name, [*names, *self._aliases])} "
            f"Known: {', '.join(names)}.{hint}{broken}"
        )

    def items(self) -> list[tuple[str, Any]]:
        """``(name, object)`` for every name, importing lazy entries."""
        return [(n, self.get(n)) for n in self.names()]


def check_choice(value: Any, choices: Iterable[Any], *, where: str, what: str) -> Any:
    """*value* if it is one of *choices*.

    Raises:
        UnknownNameError: ``"<where>: unknown <what> 'x'. Did you mean 'y'? Choose from: ..."``.
    """
    options = list(choices)
    if value in options:
        return value
    raise UnknownNameError(
        f"{where}: unknown {what} {value!r}.{suggest(str(value), [str(o) for o in options])} "
        f"Choose from: {', '.join(map(str, options))}"
    )


def call_with(factory: Callable[..., Any], where: str, *args: Any, **kwargs: Any) -> Any:
    """``factory(*args, **kwargs)``, turning its ``ValueError``/``TypeError`` into a
    :class:`SpecError` that names the spec (a :class:`SpecError` passes through)."""
    try:
        return factory(*args, **kwargs)
    except SpecError:
        raise
    except (ValueError, TypeError) as exc:
        raise SpecError(f"{where}: {exc}") from exc
