"""Multiple-testing corrections of a family of p-values.

- ``bonferroni``: ``min(1, m p_i)`` (controls the family-wise error rate).
- ``holm``: Holm's step-down procedure (Holm 1979): with p sorted ascending,
  ``p_(i) -> max_{j <= i} min(1, (m - j + 1) p_(j))``; uniformly more powerful than Bonferroni,
  also controls the family-wise error rate.
- ``bh``: Benjamini & Hochberg (1995) step-up adjusted p-values (false discovery rate):
  ``p_(i) -> min_{j >= i} min(1, m p_(j) / j)``.
- ``none``: the raw p-values.

Adjusted p-values are compared with the significance level directly (``p_adj < alpha``).
"""

from __future__ import annotations

import numpy as np

from nuggetbench.errors import InputError, UnknownNameError, suggest

__all__ = ["CORRECTIONS", "adjust_pvalues", "normalize_correction"]

CORRECTIONS = ("holm", "bonferroni", "bh", "none")
_ALIASES = {
    "holm-bonferroni": "holm",
    "bonf": "bonferroni",
    "fdr": "bh",
    "fdr_bh": "bh",
    "benjamini-hochberg": "bh",
    "benjamini_hochberg": "bh",
    "": "none",
    "no": "none",
}


def normalize_correction(name: str | None) -> str:
    """Canonical correction name (``None`` -> ``"none"``); raises UnknownNameError otherwise."""
    if name is None:
        return "none"
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in CORRECTIONS:
        raise UnknownNameError(
            f"unknown correction {name!r}; choose one of {', '.join(CORRECTIONS)}."
            + suggest(name, CORRECTIONS)
        )
    return key


def adjust_pvalues(p_values: np.ndarray | list[float], method: str = "holm") -> np.ndarray:
    """Adjust a family of p-values for multiple testing.

    Args:
        p_values: shape (m,), each in [0, 1].
        method: ``holm``, ``bonferroni``, ``bh`` or ``none``.

    Returns:
        Adjusted p-values, shape (m,), in the input order, each in [0, 1] and >= the raw value.

    Raises:
        InputError: a p-value is outside [0, 1] or NaN.
        UnknownNameError: unknown method.
    """
    method = normalize_correction(method)
    p = np.asarray(p_values, dtype=np.float64).ravel()
    if len(p) and (np.isnan(p).any() or (p < 0).any() or (p > 1).any()):
        raise InputError(f"p-values must lie in [0, 1], got {p.tolist()}")
    m = len(p)
    if m == 0 or method == "none":
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, p * m)
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        factors = m - np.arange(m)  # m, m-1, ..., 1
        adjusted = np.maximum.accumulate(np.minimum(1.0, ranked * factors))
    else:  # bh
        factors = m / np.arange(1, m + 1)
        adjusted = np.minimum.accumulate(np.minimum(1.0, ranked * factors)[::-1])[::-1]
    out = np.empty(m, dtype=np.float64)
    out[order] = adjusted
    return out
