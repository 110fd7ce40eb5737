"""A run's depth, and the measures whose cutoff goes beyond it.

A measure cut at *k* (``R@100``, ``recall_1000``, ``nDCG@20``) on a run that ranked fewer than
*k* documents for every query counts only those documents: ``R@100`` of a 10-deep run is its
``R@10``. Its values are then not comparable with a deeper run's, so every output marks them
with :data:`DEPTH_MARK` and says why once. A system's depth is the most documents it ranked for
one query (``Results.provenance["run_depth"]``, set by :func:`nuggetbench.measures.score`).
Measures without a cutoff (``AP``) take the whole ranking, however deep; the comparisons say
each system's depth when they differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nuggetbench.errors import NuggetbenchError
from nuggetbench.measures.compute import measure_pairs, run_depth

__all__ = [
    "DEPTH_MARK",
    "beyond_depth",
    "depth_of",
    "depth_warning",
    "measure_cutoff",
    "run_depth",
]

#: The mark of a value whose measure's cutoff goes beyond the system's depth.
DEPTH_MARK = "\u00a7"  # section sign


def depth_of(results: Any) -> int | None:
    """The depth recorded in a ``Results``-like object's provenance (``None``: unknown, e.g.
    results read from an older ``results.json``)."""
    prov = getattr(results, "provenance", None)
    value = prov.get("run_depth") if isinstance(prov, Mapping) else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def measure_cutoff(measure: str) -> int | None:
    """The rank cutoff of *measure* (a measure string or a key as ``evaluate`` prints it:
    ``R@100``, ``recall_1000``, ``P.5``), ``None`` when it has none or is not a measure name."""
    try:
        pairs = measure_pairs([measure])
    except (NuggetbenchError, ValueError):
        return None
    cutoff = pairs[0][1].cutoff if len(pairs) == 1 else None
    return int(cutoff) if isinstance(cutoff, int) else None


def beyond_depth(measures: Sequence[str], depth: int | None) -> list[str]:
    """The *measures* whose cutoff exceeds *depth* (none when the depth is unknown)."""
    if depth is None:
        return []
    return [m for m in measures if (c := measure_cutoff(m)) is not None and c > depth]


def depth_warning(cut: Mapping[str, Sequence[str]], depths: Mapping[str, int | None]) -> str:
    """One warning for every system with measures beyond its depth (*cut*: ``{system:
    measures}``; a single unnamed system is keyed ``""``)."""
    parts = []
    for system, measures in cut.items():
        who = f"{system} ranked" if system else "the run ranks"
        parts.append(
            f"{', '.join(measures)} ({who} at most {depths.get(system)} documents a query)"
        )
    return (
        "cutoff beyond the depth: "
        + "; ".join(parts)
        + f"; these values count only the documents ranked, are not comparable with a deeper "
        f"run's, and are marked {DEPTH_MARK}"
    )
