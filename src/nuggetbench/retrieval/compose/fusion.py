"""Fusion of runs: reciprocal rank fusion, CombSUM / CombMNZ / CombANZ / CombMAX / CombMIN.

``fuse(runs, method=..., depth=..., norm=..., weights=..., k=60)`` works on the ranked order of each
run (a :class:`~nuggetbench.data.Run` is always ranked by trec_eval's rule at construction, so the
inputs need not arrive sorted), keeps each run's top ``depth`` per query, and combines:

* ``rrf`` (Cormack, Clarke & Buettcher, SIGIR 2009): ``sum_i w_i / (k + rank_i(d))``, rank 1-based;
  ``norm`` does not apply.
* ``sum`` (CombSUM, Fox & Shaw 1994): ``sum_i w_i * s_i(d)``, with ``s_i`` the (normalised) score,
  0 for a document a run did not retrieve;
* ``mnz`` (CombMNZ): ``|{i : d in run_i}| * CombSUM``; ``anz`` (CombANZ): CombSUM / that count;
* ``max`` / ``min`` (CombMAX / CombMIN) over the runs that retrieved *d* (weights multiply scores).

Normalisations, per query over the kept entries of each run: ``minmax`` ``(s - min) / (max - min)``
(1.0 when all scores are equal), ``zscore`` ``(s - mean) / std`` (population std; 0.0 when std is 0),
``max`` ``s / max``, or ``None``. Presets: ``freshstack`` = ``method=sum, norm=minmax, depth=100``
computed as the ``freshstack`` package's ``util.fusion(method="normalized_sum")`` does (tested
against it): min-max as ``(s - min) / (max - min + 1e-8)`` (0.0 when all scores are equal) and the
fused scores rounded to 3 decimals (Python's ``round``), whose ties trec_eval then breaks by doc id.
The package takes each run's first ``depth`` entries in its dict's order, which is the top
``depth`` when the runs it is given are sorted by score; the depth, 100, is the paper's ("sum the
top 100 of each retriever"; the package's own default is 50).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from nuggetbench.data import Run
from nuggetbench.errors import InputError, UnknownNameError, suggest
from nuggetbench.retrieval.models.topk import with_empty_queries

log = logging.getLogger(__name__)

METHODS = {
    "rrf": "rrf",
    "sum": "sum",
    "combsum": "sum",
    "mnz": "mnz",
    "combmnz": "mnz",
    "anz": "anz",
    "combanz": "anz",
    "max": "max",
    "combmax": "max",
    "min": "min",
    "combmin": "min",
}
NORMS = ("minmax", "zscore", "max")
PRESETS: dict[str, dict[str, Any]] = {
    "freshstack": {"method": "sum", "norm": "minmax", "depth": 100, "epsilon": 1e-8, "decimals": 3}
}


def _normalise(
    scores: np.ndarray, starts: np.ndarray, norm: str | None, epsilon: float = 0.0
) -> np.ndarray:
    """*scores* normalised per query (*starts*: the queries' offsets); *epsilon* is added to
    min-max's denominator (the freshstack preset's ``max - min + 1e-8``)."""
    if norm is None or len(scores) == 0:
        return scores
    lengths = np.diff(starts)
    nonempty = lengths > 0
    seg = starts[:-1][nonempty]
    rep = lengths[nonempty]
    if norm == "minmax":
        lo = np.repeat(np.minimum.reduceat(scores, seg), rep)
        hi = np.repeat(np.maximum.reduceat(scores, seg), rep)
        span = hi - lo
        if epsilon:
            return (scores - lo) / (span + epsilon)
        return np.where(span > 0, (scores - lo) / np.where(span > 0, span, 1.0), 1.0)
    if norm == "zscore":
        n = np.repeat(rep, rep).astype(np.float64)
        mean = np.repeat(np.add.reduceat(scores, seg), rep) / n
        var = np.repeat(np.add.reduceat((scores - mean) ** 2, seg), rep) / n
        std = np.sqrt(var)
        return np.where(std > 0, (scores - mean) / np.where(std > 0, std, 1.0), 0.0)
    if norm == "max":
        hi = np.repeat(np.maximum.reduceat(scores, seg), rep)
        return np.where(hi != 0, scores / np.where(hi != 0, hi, 1.0), 0.0)
    raise UnknownNameError(
        f"unknown normalisation {norm!r}.{suggest(norm, NORMS)} Use one of {', '.join(NORMS)} or None"
    )


def _settings(
    n_runs: int,
    method: str | None,
    depth: int | None,
    norm: str | None,
    weights: Sequence[float] | None,
    k: float,
    preset: str | None,
) -> tuple[str, int | None, str | None, np.ndarray]:
    """``(method kind, depth, norm, weights (n_runs,))`` after the preset's defaults, checked
    (see :func:`fuse` for the errors)."""
    if preset is not None:
        if preset not in PRESETS:
            raise UnknownNameError(
                f"unknown fusion preset {preset!r}.{suggest(preset, list(PRESETS))} "
                f"Presets: {', '.join(PRESETS)}"
            )
        p = PRESETS[preset]
        method = p["method"] if method is None else method
        norm = p["norm"] if norm is None else norm
        depth = p["depth"] if depth is None else depth
    method = "rrf" if method is None else method
    if not n_runs:
        raise InputError("fuse() needs at least one run")
    kind = METHODS.get(str(method).lower())
    if kind is None:
        raise UnknownNameError(
            f"unknown fusion method {method!r}.{suggest(str(method), list(METHODS))} "
            f"Methods: rrf, sum, mnz, anz, max, min"
        )
    if norm is not None and str(norm).lower() in ("none", ""):
        norm = None
    if kind == "rrf" and norm is not None:
        raise InputError(
            "norm does not apply to rrf (it uses ranks); drop norm or use method=sum/mnz"
        )
    if norm is not None and norm not in NORMS:
        raise UnknownNameError(
            f"unknown normalisation {norm!r}.{suggest(str(norm), NORMS)} "
            f"Use one of {', '.join(NORMS)} or None"
        )
    if depth is not None and depth < 1:
        raise InputError(f"fusion depth must be >= 1, got {depth}")
    w = np.ones(n_runs) if weights is None else np.asarray(list(weights), dtype=np.float64)
    if len(w) != n_runs:
        raise InputError(f"{len(w)} weights for {n_runs} runs; give one weight per run")
    if (w < 0).any():
        raise InputError(f"fusion weights must be >= 0, got {w.tolist()}")
    if kind == "rrf" and k < 0:
        raise InputError(f"the RRF constant k must be >= 0, got {k}")

    return kind, depth, norm, w


def fuse(
    runs: Sequence[Run],
    *,
    method: str | None = None,
    depth: int | None = None,
    norm: str | None = None,
    weights: Sequence[float] | None = None,
    k: float = 60,
    preset: str | None = None,
    name: str | None = None,
) -> Run:
    """Fuse several runs into one (see the module docstring for the formulas).

    Args:
        runs: two or more runs (one is allowed: it is re-scored).
        method: ``rrf`` (default) | ``sum`` | ``mnz`` | ``anz`` | ``max`` | ``min`` (``comb*`` spellings
            accepted).
        depth: entries kept per query of each run before fusing (``None``: all).
        norm: ``minmax`` | ``zscore`` | ``max`` | ``None`` (not with ``rrf``).
        weights: one non-negative weight per run (default all 1).
        k: the RRF constant (default 60).
        preset: ``freshstack`` (its values are defaults; explicit arguments win).
        name: name of the fused run (default ``fuse(<names>; method=...)``).

    Returns:
        A :class:`Run` over the union of the queries and of the documents (within depth) of the runs;
        metadata records the method, depth, normalisation, weights and input run names.

    Raises:
        InputError: no runs, wrong number of weights, a negative weight or depth, ``norm`` with ``rrf``.
        UnknownNameError: unknown method, normalisation or preset.
    """
    runs = list(runs)
    kind, depth, norm, w = _settings(len(runs), method, depth, norm, weights, k, preset)
    exact = PRESETS.get(preset or "", {})  # the preset's own arithmetic (freshstack's)
    columns = _contributions(runs, kind, w, k, depth, norm, exact.get("epsilon", 0.0))
    agg = _aggregate(columns, kind)
    if exact.get("decimals") is not None:
        agg[:] = [round(float(v), exact["decimals"]) for v in agg.to_numpy()]
    params = {"method": kind, "depth": depth, "weights": w.tolist()}
    if kind == "rrf":
        params["k"] = k
    else:
        params["norm"] = norm
    label = (
        name
        or "fuse("
        + ", ".join(r.name or f"run{i}" for i, r in enumerate(runs))
        + f"; method={kind}"
        + (f",depth={depth}" if depth else "")
        + (f",norm={norm}" if norm else "")
        + ")"
    )
    fused = Run(
        agg.index.get_level_values(0).to_numpy(dtype=object),
        agg.index.get_level_values(1).to_numpy(dtype=object),
        agg.to_numpy(dtype=np.float64),
        name=label,
        metadata={"fusion": params, "inputs": [r.name for r in runs]},
    )
    all_q = sorted(set().union(*(set(r.query_ids) for r in runs)))
    missing = sorted(set(all_q) - set(fused.query_ids))
    if missing:
        fused = with_empty_queries(fused, missing)
    return fused


def _contributions(
    runs: Sequence[Run],
    kind: str,
    w: np.ndarray,
    k: float,
    depth: int | None,
    norm: str | None,
    epsilon: float = 0.0,
) -> dict[str, np.ndarray]:
    """Every entry's contribution, as columns ``q``, ``d``, ``v`` (the weighted reciprocal rank
    for RRF, else the weighted normalised score) and ``r`` (the run's position)."""
    q_cols, d_cols, v_cols, r_cols = [], [], [], []
    for i, run in enumerate(runs):
        r = run.truncate(depth) if depth is not None else run
        qids, starts, docids, scores = r.arrays()
        lengths = np.diff(starts)
        if kind == "rrf":
            rank = np.arange(len(docids)) - np.repeat(starts[:-1], lengths) + 1
            values = w[i] / (k + rank.astype(np.float64))
        else:
            values = w[i] * _normalise(scores.astype(np.float64), starts, norm, epsilon)
        q_cols.append(np.repeat(qids, lengths))
        d_cols.append(docids)
        v_cols.append(values)
        r_cols.append(np.full(len(docids), i))
    return {
        "q": np.concatenate(q_cols),
        "d": np.concatenate(d_cols),
        "v": np.concatenate(v_cols),
        "r": np.concatenate(r_cols),
    }


def _aggregate(columns: dict[str, np.ndarray], kind: str):
    """The fused score of each (query, doc) pair, a pandas Series indexed by ``(q, d)`` in
    order of first appearance: CombSUM (and RRF's sum), CombMNZ, CombANZ, CombMAX, CombMIN."""
    import pandas as pd

    grouped = pd.DataFrame(columns).groupby(["q", "d"], sort=False)["v"]
    if kind in ("rrf", "sum"):
        return grouped.sum()
    if kind == "mnz":
        return grouped.sum() * grouped.count()
    if kind == "anz":
        return grouped.sum() / grouped.count()
    return grouped.max() if kind == "max" else grouped.min()
