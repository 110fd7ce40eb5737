"""Calibrating the automatic stages against a sample of human labels (FreshStack, section on human
calibration: an expert checks the generated nuggets and the support judgments).

Human labels, one JSON object per line of a labels file:

* ``{"type": "nugget", "query_id", "nugget_id", "hallucinated": bool, "minor_or_redundant": bool}``:
  is the nugget not stated by the accepted answer (hallucinated)? is it minor or a repetition?
* ``{"type": "missing", "query_id", "missing": int}``: how many facts of the answer no nugget holds;
* ``{"type": "support", "query_id", "nugget_id", "doc_id", "supported": bool}``: does the chunk
  support the nugget? (the judge's verdict for the pair is looked up in the build's judgments, or
  given as ``"judge": bool``). Instead of (or with) ``supported``, ``"relevance"`` gives the
  paper's three-level label: ``relevant``, ``partially_relevant`` or ``non_relevant``
  (``supported`` is then true unless non-relevant: the paper counts only non-relevant pairs as
  the judge's mistakes).

Nugget quality (FreshStack, Thakur et al., section 5.2.1, equations 2-4): per question with
``N = |Nuggets|`` nuggets, ``sum(A)`` of them hallucinated (question A), ``sum(B)`` minor or
redundant (question B) and ``C`` additional nuggets needed (question C):

* precision ``= (N - sum(B)) / N`` (eq. 2);
* recall ``= (N - sum(B)) / (N - sum(B) + C)`` (eq. 3);
* groundedness ``= (N - sum(A)) / N`` (eq. 4).

This is ``formula="freshstack"`` (the default). ``formula="strict"`` is nuggetbench's earlier
variant, which also takes the hallucinated nuggets out of precision and recall: with ``H``
hallucinated and ``R`` minor or redundant but not hallucinated, precision ``= (N - H - R) / N``
and recall ``= (N - H - R) / (N - H - R + C)`` (groundedness is the same). The paper does not
say how it aggregates its 60 questions, so both micro (pooled over nuggets) and macro (mean over
questions) values are returned.

Judgment quality (section 5.2.2, Table 5): the shares of sampled (nugget, document) pairs the
expert labels relevant, partially relevant and non-relevant (:func:`judgment_levels`).

Judge agreement: accuracy and Cohen's kappa (Cohen, 1960): ``kappa = (p_o - p_e) / (1 - p_e)`` with
``p_o`` the observed agreement and ``p_e = sum_c P_human(c) P_judge(c)`` the agreement expected by
chance; ``nan`` when ``p_e = 1`` (both raters used one single label: kappa is undefined).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nuggetbench.errors import FormatError, InputError
from nuggetbench.jsonl import iter_jsonl


@dataclass(frozen=True)
class NuggetLabel:
    """A human's verdict on one generated nugget."""

    query_id: str
    nugget_id: str
    hallucinated: bool
    minor_or_redundant: bool = False


@dataclass(frozen=True)
class SupportLabel:
    """A human's support verdict on one (nugget, chunk) pair, with the judge's when known."""

    query_id: str
    nugget_id: str
    doc_id: str
    supported: bool
    judge: bool | None = None
    relevance: str | None = None  # the three-level label, when given (see RELEVANCE_LEVELS)


#: The paper's three-level relevance labels (section 5.2.2), in Table 5's order.
RELEVANCE_LEVELS = ("relevant", "partially_relevant", "non_relevant")
#: Nugget quality formulas (see the module docstring).
FORMULAS = ("freshstack", "strict")


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' labels (same length, any hashable labels).

    Raises:
        InputError: the sequences differ in length or are empty.
    """
    if len(a) != len(b) or not len(a):
        raise InputError(
            f"kappa needs two non-empty label lists of one length, got {len(a)} and {len(b)}"
        )
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    labels = set(a) | set(b)
    p_e = sum((sum(x == c for x in a) / n) * (sum(y == c for y in b) / n) for c in labels)
    if math.isclose(p_e, 1.0):
        return float("nan")
    return (p_o - p_e) / (1.0 - p_e)


def agreement(human: Sequence[bool], judge: Sequence[bool]) -> dict[str, Any]:
    """Accuracy, Cohen's kappa and the confusion counts of the judge against the human."""
    kappa = cohen_kappa(list(human), list(judge))
    tp = sum(h and j for h, j in zip(human, judge))
    tn = sum((not h) and (not j) for h, j in zip(human, judge))
    fp = sum((not h) and j for h, j in zip(human, judge))
    fn = sum(h and (not j) for h, j in zip(human, judge))
    n = len(human)
    return {
        "pairs": n,
        "accuracy": (tp + tn) / n,
        "kappa": kappa,
        "confusion": {
            "both_supported": tp,
            "both_unsupported": tn,
            "judge_only": fp,
            "human_only": fn,
        },
    }


def nugget_quality(
    labels: Sequence[NuggetLabel], missing: Mapping[str, int], *, formula: str = "freshstack"
) -> dict[str, Any]:
    """Precision, recall and groundedness of generated nuggets (see the module docstring).

    Args:
        labels: one per labelled nugget.
        missing: ``{query_id: C}``, the additional nuggets a question needs (a labelled question
            absent here counts 0).
        formula: ``"freshstack"`` (the paper's equations 2-4, default) or ``"strict"``
            (hallucinated nuggets also left out of precision and recall).

    Returns:
        ``{"questions", "nuggets", "formula", "micro": {...}, "macro": {...},
        "per_query": {qid: {...}}}``; each holds ``precision``, ``recall``, ``groundedness``
        (recall is ``nan`` for a question with ``N - sum(B) + C = 0``, left out of the macro mean).

    Raises:
        InputError: no labels, a count of missing nuggets that is negative, or an unknown
            *formula*.
    """
    if formula not in FORMULAS:
        raise InputError(f"unknown calibration formula {formula!r}; use one of {FORMULAS}")
    if not labels:
        raise InputError("nugget quality needs at least one labelled nugget")
    per: dict[str, list[int]] = {}
    strict = formula == "strict"
    for lab in labels:
        row = per.setdefault(lab.query_id, [0, 0, 0])  # N, sum(A), sum(B)
        row[0] += 1
        row[1] += bool(lab.hallucinated)
        row[2] += bool(lab.minor_or_redundant) and not (strict and lab.hallucinated)
    for q, k in missing.items():
        if int(k) < 0:
            raise InputError(f"question {q!r}: the number of missing nuggets must be >= 0, got {k}")

    def scores(n: int, h: int, r: int, k: int) -> dict[str, float]:
        good = n - h - r if strict else n - r
        return {
            "groundedness": (n - h) / n,
            "precision": good / n,
            "recall": good / (good + k) if good + k else float("nan"),
        }

    per_query = {q: scores(n, h, r, int(missing.get(q, 0))) for q, (n, h, r) in per.items()}
    tn = sum(v[0] for v in per.values())
    th = sum(v[1] for v in per.values())
    tr = sum(v[2] for v in per.values())
    tk = sum(int(missing.get(q, 0)) for q in per)
    macro = {
        m: sum(s[m] for s in per_query.values() if not math.isnan(s[m]))
        / max(1, sum(not math.isnan(s[m]) for s in per_query.values()))
        for m in ("groundedness", "precision", "recall")
    }
    return {
        "questions": len(per),
        "nuggets": tn,
        "formula": formula,
        "micro": scores(tn, th, tr, tk),
        "macro": macro,
        "per_query": per_query,
    }


def read_labels(path: str | Path) -> tuple[list[NuggetLabel], dict[str, int], list[SupportLabel]]:
    """Read a labels file (see the module docstring).

    Raises:
        FormatError: a line that is not a label object of a known ``type`` (file and line named).
        InputError: the file does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"labels file {path} does not exist")
    nuggets: list[NuggetLabel] = []
    missing: dict[str, int] = {}
    support: list[SupportLabel] = []
    hint = "each line is an object with type 'nugget', 'missing' or 'support'"
    for lineno, obj in iter_jsonl(path, hint=hint, encoding="utf-8"):
        try:
            kind = obj["type"]
            if kind == "nugget":
                nuggets.append(
                    NuggetLabel(
                        str(obj["query_id"]),
                        str(obj["nugget_id"]),
                        _bool(obj["hallucinated"]),
                        _bool(obj.get("minor_or_redundant", False)),
                    )
                )
            elif kind == "missing":
                missing[str(obj["query_id"])] = int(obj["missing"])
            elif kind == "support":
                judge = obj.get("judge")
                level = _level(obj["relevance"]) if "relevance" in obj else None
                if "supported" in obj:
                    supported = _bool(obj["supported"])
                elif level is not None:
                    supported = level != "non_relevant"
                else:
                    raise KeyError("'supported' or 'relevance'")
                support.append(
                    SupportLabel(
                        str(obj["query_id"]),
                        str(obj["nugget_id"]),
                        str(obj["doc_id"]),
                        supported,
                        None if judge is None else _bool(judge),
                        level,
                    )
                )
            else:
                raise ValueError(f"unknown type {kind!r}")
        except (ValueError, KeyError, TypeError) as exc:
            raise FormatError(
                path,
                lineno,
                f"not a label ({exc}); each line is an object with type "
                "'nugget', 'missing' or 'support' (see nuggetbench.builder.calibration)",
            ) from None
    return nuggets, missing, support


def _level(value: Any) -> str:
    """A three-level relevance label, spelled with spaces, hyphens or underscores."""
    text = str(value).strip().lower().replace(" ", "_").replace("-", "_")
    if text not in RELEVANCE_LEVELS:
        raise ValueError(f"relevance {value!r} is not one of {', '.join(RELEVANCE_LEVELS)}")
    return text


def judgment_levels(support: Sequence[SupportLabel]) -> dict[str, Any] | None:
    """The paper's judgment quality (Table 5): shares of the three relevance levels.

    Args:
        support: support labels; those with a three-level ``relevance`` are counted.

    Returns:
        ``{"pairs": n, "relevant": share, "partially_relevant": share, "non_relevant": share,
        "counts": {level: count}}`` (shares in [0, 1], summing to 1), or ``None`` when no label
        has a level.
    """
    levels = [lab.relevance for lab in support if lab.relevance is not None]
    if not levels:
        return None
    counts = {level: sum(x == level for x in levels) for level in RELEVANCE_LEVELS}
    n = len(levels)
    return {"pairs": n, **{k: v / n for k, v in counts.items()}, "counts": counts}


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("yes", "true", "1", "no", "false", "0"):
        return value.strip().lower() in ("yes", "true", "1")
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{value!r} is not a yes/no value")


def calibrate(
    nugget_labels: Sequence[NuggetLabel],
    missing: Mapping[str, int],
    support: Sequence[SupportLabel],
    verdicts: Mapping[str, Mapping[tuple[str, str], tuple[bool, str]]] | None = None,
    *,
    formula: str = "freshstack",
) -> dict[str, Any]:
    """Nugget quality, judgment quality and judge agreement in one report.

    Args:
        nugget_labels, missing, support: the human labels (:func:`read_labels`).
        verdicts: the build's judgments ``{qid: {(nugget_id, doc_id): (supported, reasoning)}}``,
            used for support labels without a ``judge`` value.
        formula: the nugget quality formula (:data:`FORMULAS`; default the paper's).

    Returns:
        ``{"nuggets": nugget_quality(...) or None, "judgments": judgment_levels(...) (None
        without three-level labels), "judge": agreement(...) or None,
        "support_pairs_without_verdict": n}``.
    """
    out: dict[str, Any] = {
        "nuggets": nugget_quality(nugget_labels, missing, formula=formula)
        if nugget_labels
        else None,
        "judgments": judgment_levels(support),
    }
    human, judge, unmatched = [], [], 0
    for lab in support:
        verdict = lab.judge
        if verdict is None and verdicts is not None:
            hit = verdicts.get(lab.query_id, {}).get((lab.nugget_id, lab.doc_id))
            verdict = None if hit is None else hit[0]
        if verdict is None:
            unmatched += 1
            continue
        human.append(lab.supported)
        judge.append(verdict)
    out["judge"] = agreement(human, judge) if human else None
    out["support_pairs_without_verdict"] = unmatched
    return out


__all__ = [
    "NuggetLabel",
    "SupportLabel",
    "cohen_kappa",
    "agreement",
    "nugget_quality",
    "judgment_levels",
    "RELEVANCE_LEVELS",
    "FORMULAS",
    "read_labels",
    "calibrate",
]
