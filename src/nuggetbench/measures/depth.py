"""A run's depth, and the measures whose cutoff goes beyond it.

A measure cut at *k* (``R@100``, ``recall_1000``, ``nDCG@20``) on a run that ranked fewer than
*k* documents for every query counts only those documents: ``R@100`` of a 10-deep run is its
``R@10``. Its values are then not comparable with a deeper run's, so every output marks them
with :data:`DEPTH_MARK` and says why once. A system's depth is the most documents it ranked for
one query (``Results.provenance["run_depth"]``, set by :func:`nuggetbench.measures.score`).
Where each query may rank only a candidate pool (BIRCO's 50 documents), a system that ranked as
many documents as the largest pool holds (``provenance["pool_depth"]``, :func:`note_pools`) is
not cut: no system could go deeper, and ``R@100`` there is the published recall of the pool.
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
    "note_pools",
    "run_depth",
    "shallow",
]

#: The mark of a value whose measure's cutoff goes beyond the system's depth.
DEPTH_MARK = "\u00a7"  # section sign


def _recorded(results: Any, key: str) -> int | None:
    """``provenance[key]`` of a ``Results``-like object or of its ``to_dict()`` (a system of
    ``results.json``), as an int; ``None`` when absent."""
    prov = results.get("provenance") if isinstance(results, Mapping) else None
    prov = getattr(results, "provenance", None) if prov is None else prov
    value = prov.get(key) if isinstance(prov, Mapping) else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def depth_of(results: Any) -> int | None:
    """The depth recorded in a ``Results``-like object's provenance (``None``: unknown, e.g.
    results read from an older ``results.json``)."""
    return _recorded(results, "run_depth")


def note_pools(results: Any, pools: Mapping[str, Any] | None) -> None:
    """Record in *results*' provenance the size of the largest candidate pool (*pools*:
    ``{query: doc ids}``, a dataset's ``doc_filter``); nothing without pools."""
    if pools:
        results.provenance["pool_depth"] = max(len(docs) for docs in pools.values())


def shallow(results: Any, measures: Sequence[str]) -> list[str]:
    """The *measures* beyond the depth of *results* (:func:`beyond_depth`), none when the system
    ranked every document of the largest candidate pool (:func:`note_pools`)."""
    depth, pool = depth_of(results), _recorded(results, "pool_depth")
    if depth is not None and pool is not None and depth >= pool:
        return []
    return beyond_depth(measures, depth)


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
