"""Chunker specifications: ``kind[:key=value,key=value...]``.

Examples: ``paragraphs``, ``paragraphs:group=3,headers=true``,
``tokens:size=256,overlap=32,tokenizer=whitespace``, ``cells``. Values may contain ``:`` and
``/`` (``tokenizer=hf:/models/tok``) but not ``,``. Parsing never loads anything heavy; a
tokenizer is loaded when the chunker first runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError, suggest


@dataclass(frozen=True)
class Option:
    """One option of a chunker: a converter from the spec's text, a default and a description."""

    convert: Callable[[str], Any]
    default: Any
    help: str
    required: bool = False


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("must be a positive integer")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be a non-negative integer")
    return value


def boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError("must be true or false")


def text_value(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text.strip()


def format_value(value: Any) -> str:
    """Print an option value the way the spec grammar reads it back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``kind:key=value,...`` into the kind and its raw options.

    Raises:
        SpecError: an option has no ``=``, an empty name, or is given twice (the part is quoted).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(
            "empty chunker spec; expected e.g. 'paragraphs:group=3,headers=true', "
            "'tokens:size=256,overlap=32' or 'cells'"
        )
    kind, _, rest = spec.strip().partition(":")
    kind = kind.strip()
    raw: dict[str, str] = {}
    if rest.strip():
        for part in rest.split(","):
            key, eq, value = part.partition("=")
            key = key.strip()
            if not eq or not key:
                raise SpecError(
                    f"chunker spec {spec!r}: cannot parse {part.strip()!r}; options are "
                    "written key=value and separated by commas"
                )
            if key in raw:
                raise SpecError(f"chunker spec {spec!r}: option {key!r} is given twice")
            raw[key] = value
    return kind, raw


def convert_options(
    spec: str, kind: str, options: dict[str, Option], raw: dict[str, str]
) -> dict[str, Any]:
    """Convert raw option strings with the declared :class:`Option` s, filling defaults.

    Raises:
        SpecError: an unknown option (with the nearest name), a value that does not convert, or a
            missing required option; the message quotes the offending part.
    """
    values: dict[str, Any] = {}
    for key, text in raw.items():
        opt = options.get(key)
        if opt is None:
            names = ", ".join(options) or "none"
            raise SpecError(
                f"chunker spec {spec!r}: unknown option {key!r} for {kind!r} "
                f"(options: {names}).{suggest(key, list(options))}"
            )
        try:
            values[key] = opt.convert(text)
        except ValueError as exc:
            reason = (
                str(exc) if str(exc) and "invalid literal" not in str(exc) else "has the wrong type"
            )
            raise SpecError(
                f"chunker spec {spec!r}: option '{key}={text}' {reason} ({opt.help})"
            ) from None
    for key, opt in options.items():
        if key not in values:
            if opt.required:
                raise SpecError(
                    f"chunker spec {spec!r}: option {key!r} is required for {kind!r} ({opt.help})"
                )
            values[key] = opt.default
    return values


def parse_chunker(spec: str):
    """Build a chunker from its spec string.

    Args:
        spec: ``paragraphs[:group=N,headers=BOOL,code=BOOL,outputs=BOOL]``,
            ``tokens:size=N[,overlap=M,tokenizer=NAME]`` or ``cells[:headers=BOOL,outputs=BOOL]``.

    Returns:
        a :class:`~nuggetbench.corpus.chunkers.Chunker`.

    Raises:
        SpecError: the spec cannot be parsed; the message says which part.
    """
    from .chunkers import CHUNKERS

    if not isinstance(spec, str):
        from .chunkers import Chunker

        if isinstance(spec, Chunker):
            return spec
    kind, raw = split_spec(spec)
    cls = CHUNKERS.get(kind)
    if cls is None:
        raise SpecError(
            f"chunker spec {spec!r}: unknown chunker {kind!r} (known: "
            f"{', '.join(sorted(CHUNKERS))}).{suggest(kind, list(CHUNKERS))}"
        )
    values = convert_options(spec, kind, cls.options, raw)
    return cls(**values)


__all__ = ["Option", "parse_chunker", "split_spec", "convert_options", "format_value"]
