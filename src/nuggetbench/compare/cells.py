"""The text of a comparison's cells: numbers, p-values, and escaping for Markdown and LaTeX."""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "UNAVAILABLE",
    "finite_json",
    "fixed",
    "md_escape",
    "p_eq",
    "p_text",
    "signed",
    "tex",
]


#: What a table shows for a number that could not be computed (an interval or a test of a
#: measure with fewer than two queries).
UNAVAILABLE = "n/a"


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fixed(value: float, digits: int) -> str:
    """*value* with *digits* decimals (:data:`UNAVAILABLE` for a missing or undefined one)."""
    return UNAVAILABLE if _missing(value) else f"{value:.{digits}f}"


def signed(value: float, digits: int) -> str:
    """*value* with its sign and *digits* decimals (a difference; :data:`UNAVAILABLE` for a
    missing one)."""
    return UNAVAILABLE if _missing(value) else f"{value:+.{digits}f}"


def p_text(value: float) -> str:
    """A p-value as printed: ``<0.001`` or three decimals (:data:`UNAVAILABLE` when no test
    could run)."""
    if _missing(value):
        return UNAVAILABLE
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def p_eq(p: float) -> str:
    """``=0.042``, ``<0.001`` or `` n/a``: a p-value after ``p``."""
    text = p_text(p)
    return text if text.startswith("<") else (" " if text == UNAVAILABLE else "=") + text


def md_escape(text: str) -> str:
    """*text* safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


#: LaTeX's special characters, each as text (one pass: a replacement is never escaped again).
_TEX = dict(
    zip(
        "\\&%$#_{}~^",
        (r"\textbackslash{}", *(rf"\{c}" for c in "&%$#_{}"), r"\textasciitilde{}", r"\^{}"),
    )
)


def tex(text: str) -> str:
    """*text* with LaTeX's special characters escaped."""
    return "".join(_TEX.get(c, c) for c in text)


def finite_json(value: Any) -> Any:
    """*value* (nested dicts and lists) with NaN and infinite floats as ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value
