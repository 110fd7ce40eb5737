"""The C/W/L measures of cwl_eval, as ir_measures computes them (provider ``cwl_eval``).

Source: ir_measures 0.4.3 ``providers/cwl_eval.py`` over cwl-eval 1.0.12 (``cwl/ruler``,
Azzopardi, Thomas & Moffat, SIGIR 2019). A C/W/L measure is the expected rate of gain of a user
who reads rank i+1 after rank i with probability ``c_i``: with ``P_0 = 1``,
``P_i = c_0 ... c_{i-1}``, the value is ``sum_i g_i P_i / sum_i P_i`` over the first
:data:`CWL_DEPTH` ranks (1000, the provider's ``max_n``; ranks below count as gain 0, the
padding of a shorter ranking too). Gains ``g_i`` in [0, 1], as the provider makes them:

* ``RBP(rel=r)``: binary, 1 for a document judged with ``max(grade, 0) >= r``;
* every other family: ``(clip(max(grade, 0), min_rel, max_rel) - min_rel) / (max_rel - min_rel)``
  for a judged document (``max_rel`` is required, as in ir_measures);
* an unjudged document has gain 0 (cwl_eval's "worse case").

=============  =====================  ===================================================
family         parameters (default)   ``c_i`` (i 0-based, rank = i + 1, G_i = g_0 + ... + g_i)
=============  =====================  ===================================================
``RBP``        p=0.8, rel=1           ``p`` (so ``(1-p) / (1-p^1000) sum p^i g_i``)
``SDCG@k``     min_rel=0, max_rel     ``log(i+2) / log(i+3)`` for rank < k, then 0: DCG@k of
                                      the scaled gains over the DCG@k of k gains of 1
``INSQ``       T=1, min_rel, max_rel  ``((rank + 2T - 1) / (rank + 2T))^2``
``INST``       T=1, min_rel, max_rel  ``((rank + T + T_i - 1) / (rank + T + T_i))^2``,
                                      ``T_i = T - G_i``
``NERR8@k``    min_rel, max_rel       ``1 - g_i`` for rank < k, then 0
``NERR9@k``    min_rel, max_rel       ``rank / (rank + 1) (1 - g_i)`` for rank < k, then 0
``NERR10``     p=0.9, min_rel,        ``p (1 - g_i)``
               max_rel
``NERR11``     T=1, min_rel, max_rel  ``((rank + 2T - 1) / (rank + 2T))^2 (1 - g_i)``
``BPM@k``      T=1, min_rel, max_rel  1 while ``G_i < T`` and ``rank < k``, then 0
=============  =====================  ===================================================

``RBP@k`` (which ir_measures' provider does not take) keeps the top k: ranks from k on count as
gain 0. ``RBP(depth=0)`` drops cwl_eval's 1000-rank window: ``(1 - p) sum_i p^i g_i`` over the
whole ranking, which with ``gain=grade`` (the grade itself when ``>= rel``, else 0) is ranx's
``rbp.95`` (``ranx/metrics/rank_biased_precision.py``).

Ranking and ties: the profile's order (trec_eval's doc id descending by default). ir_measures
hands cwl_eval each query sorted by score with Python's stable sort, so its ties keep the run's
input order: a profile with ``tie_break="input"`` reproduces it on tied runs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nuggetbench.errors import SpecError
from nuggetbench.measures.context import UNJUDGED, EvalContext
from nuggetbench.measures.measure import Measure
from nuggetbench.measures.params import REL
from nuggetbench.measures.registry import REQUIRED, MeasureFamily, get_family, register
from nuggetbench.spec import Param, params_table

__all__ = ["CWL_DEPTH", "cwl_gains", "expected_utility"]

#: The ranks cwl_eval reads (ir_measures' provider passes ``max_n=1000``).
CWL_DEPTH = 1000
#: Queries scored together: bounds the dense (queries x 1000) arrays to ~8 MB each.
_CHUNK = 1024
_SOURCE = "ir_measures 0.4.3 provider cwl_eval (cwl-eval 1.0.12)"

MIN_REL = Param("min_rel", int, 0, "grade scaled to gain 0 (cwl_eval; lower grades clipped)")
MAX_REL = Param(
    "max_rel", int, REQUIRED, "grade scaled to gain 1 (cwl_eval; higher grades clipped)"
)
TARGET = Param("T", float, 1.0, "total gain the user wants (cwl_eval's T)", minimum=0.0)
PATIENCE = Param("p", float, 0.8, "persistence: the chance of reading on", minimum=0.0, maximum=1.0)
GAIN_KIND = Param(
    "gain",
    str,
    "binary",
    "binary (1 when grade >= rel: cwl_eval) or grade (the grade when >= rel: ranx)",
    choices=("binary", "grade"),
)
WINDOW = Param(
    "depth",
    int,
    CWL_DEPTH,
    "ranks normalised over (cwl_eval's 1000); 0: the whole ranking, weights (1-p) p^i (ranx)",
    minimum=0,
)


def cwl_gains(grade: np.ndarray, measure: Measure) -> np.ndarray:
    """cwl_eval's gain of each int64 *grade* (:data:`UNJUDGED` for unjudged), float64.

    Binary at ``rel`` for a family without ``max_rel`` (``RBP``), else scaled to [0, 1] between
    ``min_rel`` and ``max_rel``.

    Raises:
        SpecError: ``min_rel >= max_rel`` (cwl_eval asserts ``min_rel < max_rel``).
    """
    judged = grade != UNJUDGED
    level = np.where(judged, np.maximum(grade, 0), 0).astype(np.float64)
    family = measure.family
    if "max_rel" not in get_family(family).params:
        rel = measure.param("rel")
        if measure.param("gain") == "grade":
            return np.where(judged & (level >= rel), level, 0.0)
        return np.where(judged & (level >= rel), 1.0, 0.0)
    low, high = measure.param("min_rel"), measure.param("max_rel")
    if low >= high:
        raise SpecError(
            f"measure {measure}: min_rel must be below max_rel (got {low} and {high}); "
            f"give the grade scale of the qrels, e.g. {family}(max_rel=3)"
        )
    return np.where(judged, (np.clip(level, low, high) - low) / (high - low), 0.0)


def _dense_gains(ctx: EvalContext, measure: Measure, depth: int) -> np.ndarray:
    """Gains of the first *depth* ranks of every query, float64 (Q, depth), 0 past the end."""
    view = ctx.ranked(cutoff=depth)
    gains = np.zeros((len(ctx.query_ids), depth), dtype=np.float64)
    gains[view.qidx, view.rank] = cwl_gains(view.grade, measure)
    return gains


def expected_utility(gains: np.ndarray, cvec: np.ndarray) -> np.ndarray:
    """cwl_eval's expected utility of each row: ``sum_i g_i P_i / sum_i P_i``.

    Args:
        gains, cvec: float64 (n, D): the gains and continuation probabilities ``c_i``.

    Returns:
        float64 (n,), as ``CWLMetric._do_score`` (``w_vector`` then ``dot``).
    """
    prod = np.ones_like(cvec)
    if cvec.shape[1] > 1:
        prod[:, 1:] = np.cumprod(cvec[:, :-1], axis=1)
    w1 = 1.0 / prod.sum(axis=1)
    return np.einsum("ij,ij->i", prod * w1[:, None], gains)


class _CWL(MeasureFamily):
    """A C/W/L family: :meth:`cvec` gives ``c_i`` of dense gains (n, D)."""

    cutoff = "forbidden"
    source = _SOURCE

    def cvec(self, gains: np.ndarray, measure: Measure) -> np.ndarray:
        raise NotImplementedError

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        out = np.zeros(len(ctx.query_ids), dtype=np.float64)
        gains = _dense_gains(ctx, measure, CWL_DEPTH)
        for start in range(0, len(out), _CHUNK):
            block = gains[start : start + _CHUNK]
            out[start : start + len(block)] = expected_utility(block, self.cvec(block, measure))
        return out


def _ranks(gains: np.ndarray) -> np.ndarray:
    """1-based ranks, float64 (1, D)."""
    return np.arange(1, gains.shape[1] + 1, dtype=np.float64)[None, :]


def _before(gains: np.ndarray, k: int) -> np.ndarray:
    """bool (1, D): rank < k (cwl_eval's ``while i < k - 1``, i 0-based)."""
    return (_ranks(gains) < k).astype(np.float64)


_SCALED: dict[str, Any] = params_table(MIN_REL, MAX_REL)


class RBP(MeasureFamily):
    name = "RBP"
    params: ClassVar[dict[str, Any]] = params_table(
        Param("p", float, 0.8, PATIENCE.description, minimum=0.0, maximum=1.0),
        REL,
        GAIN_KIND,
        WINDOW,
    )
    cutoff = "optional"
    description = (
        "rank-biased precision (Moffat & Zobel 2008): (1-p) sum p^i g_i, normalised over the "
        "1000 ranks cwl_eval reads; @k keeps the top k"
    )
    source = _SOURCE + "; gain=grade, depth=0: ranx rbp"

    def compute(self, ctx: EvalContext, measure: Measure) -> np.ndarray:
        p, depth = float(measure.param("p")), int(measure.param("depth"))
        cut = measure.cutoff
        if depth:
            cut = depth if cut is None else min(cut, depth)
        view = ctx.ranked(cutoff=cut)
        gain = cwl_gains(view.grade, measure)
        weight = p ** view.rank.astype(np.float64)
        if not depth:
            norm = 1.0 - p
        elif p == 1.0:
            norm = 1.0 / depth
        else:
            norm = (1.0 - p) / (1.0 - p**depth)
        total = np.bincount(view.qidx, weights=gain * weight, minlength=len(ctx.query_ids))
        return total.astype(np.float64) * norm


class SDCG(_CWL):
    name = "SDCG"
    params: ClassVar[dict[str, Any]] = params_table(
        Param("dcg", str, "log2", "DCG formulation (cwl_eval's log2 discount)", choices=("log2",)),
        MIN_REL,
        MAX_REL,
    )
    cutoff = "required"
    description = (
        "scaled DCG@k: DCG of gains scaled to [0, 1] over the DCG of k fully relevant documents"
    )

    def cvec(self, gains: np.ndarray, measure: Measure) -> np.ndarray:
        i = _ranks(gains) - 1.0
        c = np.log(i + 2.0) / np.log(i + 3.0) * _before(gains, measure.cutoff)
        return np.broadcast_to(c, gains.shape)


class INSQ(_CWL):
    name = "INSQ"
    params: ClassVar[dict[str, Any]] = params_table(TARGET, *_SCALED.values())
    description = "INSQ (Moffat et al. 2012): reading on with ((rank+2T-1)/(rank+2T))^2"

    def cvec(self, gains: np.ndarray, measure: Measure) -> np.ndarray:
        t = float(measure.param("T"))
        r = _ranks(gains)
        return np.broadcast_to(((r + 2.0 * t - 1.0) / (r + 2.0 * t)) ** 2.0, gains.shape)


class INST(_CWL):
    name = "INST"
    params: ClassVar[dict[str, Any]] = params_table(TARGET, *_SCALED.values())
    description = "INST (Bailey et al. 2015): INSQ whose target T shrinks by the gain found"

    def cvec(self, gains: np.ndarray, measure: Measure) -> np.ndarray:
        t = float(measure.param("T"))
        r = _ranks(gains)
        left = t - np.cumsum(gains, axis=1)
        return ((r + t + left - 1.0) / (r + t + left)) ** 2.0


class NERR8(_CWL):
    name = "NERR8"
    params = _SCALED
    cutoff = "required"
    description = "not-but-nearly ERR@k, eq. 8 of Azzopardi et al. 2021: c_i = 1 - g_i"

    def cvec(self, gains: np.ndarray, measure: Measure) -> np.ndarray:
        return (1.0 - gains) * _before(gains, measure.cutoff)


class NERR9(_CWL):
    name = "NERR9"
    params = _SCALED
    cutoff = "required"
    description = "not-but-nearly ERR@k, eq. 9: c_i = rank / (rank + 1) (1 - g_i)"

    def cvec(self, gains: np.ndarray, measure: Measure) -> np.ndarray:
        r = _ranks(gains)
        return (r / (r + 1.0)) * (1.0 - gains) * _before(gains, measure.cutoff)


class NERR10(_CWL):
    name = "NERR10"
    params: ClassVar[dict[str, Any]] = params_table(
        Param("p", float, 0.9, PATIENCE.description, minimum=0.0, maximum=1.0),
        *_SCALED.values(),
    )
    description = "not-but-nearly ERR, eq. 10: c_i = p (1 - g_i), RBP's patience"

    def cvec(self, gains: np.ndarray, measure: Measure) -> np.ndarray:
        return float(measure.param("p")) * (1.0 - gains)


class NERR11(_CWL):
    name = "NERR11"
    params: ClassVar[dict[str, Any]] = params_table(TARGET, *_SCALED.values())
    description = "not-but-nearly ERR, eq. 11: c_i = ((rank+2T-1)/(rank+2T))^2 (1 - g_i)"

    def cvec(self, gains: np.ndarray, measure: Measure) -> np.ndarray:
        t = float(measure.param("T"))
        r = _ranks(gains)
        return ((r + 2.0 * t - 1.0) / (r + 2.0 * t)) ** 2.0 * (1.0 - gains)


class BPM(_CWL):
    name = "BPM"
    params: ClassVar[dict[str, Any]] = params_table(TARGET, *_SCALED.values())
    cutoff = "required"
    description = "Bejeweled player model, static (Zhang et al. 2017): read until gain T or rank k"

    def cvec(self, gains: np.ndarray, measure: Measure) -> np.ndarray:
        t = float(measure.param("T"))
        wanting = np.cumsum(gains, axis=1) < t
        return (wanting & (_ranks(gains) < measure.cutoff)).astype(np.float64)


for _family in (RBP(), SDCG(), INSQ(), INST(), NERR8(), NERR9(), NERR10(), NERR11(), BPM()):
    register(_family)
