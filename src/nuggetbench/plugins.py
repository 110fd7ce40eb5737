"""Lazy registries of plug-ins: names mapped to objects or to ``"module:attr"`` import strings.

:class:`Registry` is a ``dict`` of names to objects or lazy strings (imported on first use),
with aliases and provider modules loaded on a miss; :func:`lookup` resolves a name in any
mapping, with the nearest name suggested when it is unknown. Retrievers, wrappers, chunkers,
measure families and profiles are kept in such registries (their grammar is
:mod:`nuggetbench.spec`'s). This module imports nothing of ours but :mod:`nuggetbench.errors`.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nuggetbench.errors import SpecError, UnknownNameError, suggest

__all__ = ["Registry", "call_with", "check_choice", "lookup", "resolve", "unknown_name"]

log = logging.getLogger(__name__)

_PROVIDERS_LOCK = threading.RLock()
"""Held while a registry imports its provider modules (re-entrant: a provider may look names
up while it is imported)."""


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


class Registry(dict):
    """Names -> objects, each given as the object or as a lazy ``"module:attr"`` string.

    A ``dict`` of the entries (so it can be copied, listed and patched like one) that also knows
    its *kind*, aliases and provider modules.

    Args:
        kind: what the names name, for messages (``retriever``, ``chunker``, ``measure``).
        entries: initial ``{name: object or "module:attr"}``.
        providers: modules imported (once, each) the first time a name is missing: modules that
            call :meth:`register` when imported (measure families do). A list given here is kept
            (not copied): appending to it adds a provider.
        hint: a sentence appended to the unknown-name error (where to find the list).
        nearest: when set, the unknown-name error names that many nearest names instead of
            listing every known one (a long vocabulary, as the measures').

    Listing names imports nothing but the providers; :meth:`lookup` imports a lazy entry on first
    use and keeps the object.
    """

    def __init__(
        self,
        kind: str,
        entries: Mapping[str, Any] | None = None,
        *,
        providers: Iterable[str] = (),
        hint: str = "",
        nearest: int | None = None,
    ):
        super().__init__(entries or {})
        self.kind = kind
        self.nearest = nearest
        self.aliases: dict[str, str] = {}
        self.providers: list[str] = providers if isinstance(providers, list) else list(providers)
        self.loaded: set[str] = set()
        self.failed: dict[str, str] = {}
        self.hint = hint

    def register(self, name: str, target: Any, *, aliases: Iterable[str] = ()) -> Any:
        """Add (or replace) *name*; *target* is the object or ``"module:attr"``. Returns *target*."""
        self[name] = target
        for alias in aliases:
            self.aliases[alias] = name
        return target

    def load_providers(self) -> None:
        """Import every provider module not imported yet (a failing one is logged and recorded
        in :attr:`failed`, and does not hide the others).

        Thread-safe: a module counts as loaded only once its import has finished, and one thread
        at a time imports (:data:`_PROVIDERS_LOCK`), so a thread that looks a name up while
        another is still importing the providers waits for it instead of finding nothing."""
        with _PROVIDERS_LOCK:
            for module in list(self.providers):
                if module in self.loaded:
                    continue
                try:
                    importlib.import_module(module)
                except Exception as exc:
                    self.failed[module] = f"{type(exc).__name__}: {exc}"
                    log.warning(
                        "%s module %s failed to import: %s (what it registers is unavailable)",
                        self.kind,
                        module,
                        exc,
                    )
                finally:
                    self.loaded.add(module)

    def names(self) -> list[str]:
        """Registered names, sorted (imports nothing but provider modules)."""
        self.load_providers()
        return sorted(self)

    def canonical(self, name: str, *, casefold: bool = False) -> str | None:
        """The registered name *name* stands for (itself, or through an alias; with *casefold*,
        a unique case-insensitive match), else ``None``. Loads the providers on a miss."""
        for _ in range(2):
            if dict.__contains__(self, name):
                return name
            if name in self.aliases:
                return self.aliases[name]
            if casefold:
                low = name.lower()
                hits = {n for n in self if n.lower() == low}
                hits |= {t for a, t in self.aliases.items() if a.lower() == low}
                if len(hits) == 1:
                    return hits.pop()
            if all(m in self.loaded for m in self.providers):
                return None
            self.load_providers()
        return None

    def find(self, name: str, *, casefold: bool = False) -> Any | None:
        """The object registered as *name* (imported if lazy), or ``None``."""
        key = self.canonical(name, casefold=casefold)
        if key is None:
            return None
        target = self[key]
        if isinstance(target, str):
            target = self[key] = resolve(target)
        return target

    def lookup(self, name: str, *, casefold: bool = False) -> Any:
        """The object registered as *name*.

        Raises:
            UnknownNameError: ``"unknown <kind> 'name'. Did you mean 'x'? Known: ..."``.
        """
        found = self.find(name, casefold=casefold)
        if found is not None:
            return found
        raise self.unknown(name)

    def unknown(self, name: str) -> UnknownNameError:
        """The error for an unknown *name*, with the nearest name and the known ones."""
        broken = ""
        if self.failed:
            failures = "; ".join(f"{m}: {e}" for m, e in self.failed.items())
            broken = f" (some {self.kind} modules failed to import: {failures})"
        names = [*self.names(), *self.aliases]
        if self.nearest:
            return nearest_names(
                self.kind, name, names, self.nearest, hint=self.hint + broken, same=self.aliases
            )
        return unknown_name(self.kind, name, names, hint=self.hint + broken)


def unknown_name(kind: str, name: str, names: Iterable[str], *, hint: str = "") -> UnknownNameError:
    """``UnknownNameError("unknown <kind> 'name'. Did you mean 'x'? Known: a, b. <hint>")``."""
    known = sorted(set(names))
    text = f"unknown {kind} {name!r}.{suggest(name, known)} Known: {', '.join(known)}."
    return UnknownNameError(text + (f" {hint}" if hint else ""))


def nearest_names(
    kind: str,
    name: str,
    names: Iterable[str],
    count: int,
    *,
    hint: str = "",
    same: Mapping[str, str] | None = None,
) -> UnknownNameError:
    """``UnknownNameError("unknown <kind> 'name'; nearest: 'a', 'b', 'c'. <hint>")``: the *count*
    names closest to *name* (difflib's ratio, case-insensitive), without the full list. *same*
    maps an alias to its name: one spelling per name is shown (the closest)."""
    import difflib

    known = sorted(set(names))
    low = name.lower()
    aliases = same or {}
    ranked = sorted(  # the closest first; on a tie, a name before an alias
        known,
        key=lambda n: (-difflib.SequenceMatcher(None, low, n.lower()).ratio(), n in aliases, n),
    )
    shown: dict[str, str] = {}
    for candidate in ranked:
        shown.setdefault(aliases.get(candidate, candidate), candidate)
        if len(shown) == count:
            break
    close = ", ".join(repr(n) for n in shown.values())
    text = f"unknown {kind} {name!r}" + (f"; nearest: {close}." if close else ".")
    return UnknownNameError(text + (f" {hint}" if hint else ""))


def lookup(entries: Mapping[str, Any], name: str, *, kind: str, hint: str = "") -> Any:
    """The object *entries* holds for *name*, importing a ``"module:attr"`` entry (a
    :class:`Registry` also follows aliases and providers). Works on any mapping, so a registry
    replaced by a plain dict (plug-ins, tests) still resolves.

    Raises:
        UnknownNameError: no such name (the nearest is suggested).
    """
    if isinstance(entries, Registry):
        return entries.lookup(name)
    if name not in entries:
        raise unknown_name(kind, name, entries, hint=hint)
    target = entries[name]
    return resolve(target) if isinstance(target, str) else target


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
