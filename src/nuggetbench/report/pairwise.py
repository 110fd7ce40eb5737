"""Significance between every pair of systems, as ranx marks it, beside the baseline comparison.

ranx's report puts after each mean the letters of the systems it is significantly better than
(``0.3664ᵃᵇᶜ``): a reader sees every pairwise outcome at once, not only those against the
baseline. :func:`pairwise` runs the comparison's paired test on each pair of systems and
measure, corrects each measure's ``n (n - 1) / 2`` p-values together (the comparison's correction:
Holm's with more than two systems by default; ranx corrects nothing), and keeps, per system and
measure, the systems it beats at the comparison's alpha. With two systems it is the baseline
comparison's test again (same test, same p-value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from nuggetbench.compare import adjust_pvalues, paired_test
from nuggetbench.compare.corrections import normalize_correction

__all__ = ["Pairwise", "pairwise"]


@dataclass
class Pairwise:
    """Outcome of every pair's test.

    Attributes:
        test, correction, alpha: the settings used (``compare``'s names).
        better: ``{system: {measure: [systems it is significantly better than]}}`` (results
            order).
        p_adjusted: ``{measure: {(a, b): corrected p-value}}`` for each pair ``a`` before ``b``.
    """

    test: str
    correction: str
    alpha: float
    better: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    p_adjusted: dict[str, dict[tuple[str, str], float]] = field(default_factory=dict)


def pairwise(
    per_query: Mapping[str, Mapping[str, np.ndarray]],
    measures: Sequence[str],
    settings: Mapping[str, Any] | None = None,
) -> Pairwise:
    """Test every pair of systems on every measure.

    Args:
        per_query: ``{system: {measure: float array (n queries,)}}``, the same queries in the
            same order for every system; NaN marks a query a measure does not average (left out
            when NaN for any system).
        measures: the measures to test.
        settings: the comparison's ``test``, ``correction``, ``alpha``, ``n_resamples`` and
            ``seed`` (``results.json``'s ``comparison``); missing ones take ``compare``'s
            defaults (t-test; Holm's with more than two systems, else none; 0.05).

    Returns:
        A :class:`Pairwise`; empty ``better`` lists with fewer than two systems or two queries.
    """
    settings = dict(settings or {})
    systems = list(per_query)
    default = "holm" if len(systems) > 2 else "none"
    out = Pairwise(
        test=str(settings.get("test") or "t"),
        correction=normalize_correction(settings.get("correction") or default),
        alpha=float(settings.get("alpha") or 0.05),
        better={s: {m: [] for m in measures} for s in systems},
    )
    pairs = list(combinations(systems, 2))
    for m in measures:
        matrix = np.vstack([np.asarray(per_query[s][m], dtype=np.float64) for s in systems])
        rows = np.ascontiguousarray(matrix[:, np.isfinite(matrix).all(axis=0)])
        if not pairs or rows.shape[1] < 2:
            continue
        means = dict(zip(systems, rows.mean(axis=1)))
        index = {s: i for i, s in enumerate(systems)}
        raw = [
            paired_test(
                rows[index[a]],
                rows[index[b]],
                out.test,
                n_resamples=int(settings.get("n_resamples") or 10_000),
                seed=settings.get("seed", 0),
            ).p_value
            for a, b in pairs
        ]
        adjusted = adjust_pvalues(raw, out.correction)
        out.p_adjusted[m] = {pair: float(p) for pair, p in zip(pairs, adjusted)}
        for (a, b), p in zip(pairs, adjusted):
            if p < out.alpha and means[a] != means[b]:
                win, lose = (a, b) if means[a] > means[b] else (b, a)
                out.better[win][m].append(lose)
    for s in systems:  # results order
        for m in measures:
            out.better[s][m].sort(key=systems.index)
    return out
