"""Agreement of LLM judgments with human qrels: ``nuggetbench judge DATASET --agreement``.

Judged pairs of the dataset (all, or ``sample`` drawn without replacement by
``numpy.random.default_rng(seed)`` from the pairs sorted by (query id, doc id)) are judged again by the model
(:func:`~.grading.judge_pairs`) and compared with the human grades:

* **raw agreement** ``p_o``: the share of pairs the model grades as the human did, on the grades
  (``raw_agreement``) and on the binary labels (``raw_agreement_binary``), always defined;
* **Cohen's kappa** (Cohen, 1960): ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of
  pairs given the same label and ``p_e = sum_l p_human(l) * p_model(l)``; on the grades as they
  are (``cohen_kappa``) and on binary labels ``grade >= rel_level`` (``cohen_kappa_binary``).
  Unweighted, as ``sklearn.metrics.cohen_kappa_score`` computes it. Undefined (NaN; ``null``
  in JSON, with ``cohen_kappa_note`` saying why) when ``p_e = 1``: both sides gave every pair
  one and the same label, e.g. on a qrels of one grade (SciFact) whose pairs the model all
  calls relevant, where the raw agreement is 1.
* the **confusion matrix**: rows the human grades, columns the model's, over
  ``0..max(3, largest human grade)``;
* given runs, **Kendall's tau** (``scipy.stats.kendalltau``, tau-b) between the order of the
  systems by their mean of ``measure`` under the human grades of the re-judged pairs and under the
  model's grades of the same pairs.

Pairs whose judgment failed (no grade after the repairs) are counted and left out of every figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import kendalltau

from nuggetbench._outfolder import writing
from nuggetbench.data import Qrels, Run
from nuggetbench.datasets import Dataset
from nuggetbench.errors import InputError
from nuggetbench.judging.grading import JUDGE_PROMPT, Judgment, judge_pairs
from nuggetbench.judging.holes import text_lookups, write_json, write_rows
from nuggetbench.llm.client import LLMClient
from nuggetbench.llm.prompts import load_prompt
from nuggetbench.measures import get_profile, score

__all__ = [
    "AgreementOutcome",
    "cohen_kappa",
    "raw_agreement",
    "confusion_matrix",
    "sample_pairs",
    "default_rel_level",
    "system_order_tau",
    "judge_agreement",
]


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Unweighted Cohen's kappa of two label sequences of equal length (see module docstring).

    Raises:
        InputError: lengths differ or the sequences are empty.
    """
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.shape != b_arr.shape or a_arr.size == 0:
        raise InputError(
            f"kappa needs two equally long, non-empty label lists ({a_arr.size}, {b_arr.size})"
        )
    labels = np.union1d(a_arr, b_arr)
    p_o = float(np.mean(a_arr == b_arr))
    pa = np.array([np.mean(a_arr == lab) for lab in labels])
    pb = np.array([np.mean(b_arr == lab) for lab in labels])
    p_e = float(np.sum(pa * pb))
    if p_e >= 1.0:
        return float("nan")
    return (p_o - p_e) / (1.0 - p_e)


def raw_agreement(a: Sequence[int], b: Sequence[int]) -> float:
    """The share of positions where *a* and *b* hold the same label (``p_o`` of kappa); 0.0
    for empty sequences."""
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    return float(np.mean(a_arr == b_arr)) if a_arr.size else 0.0


#: Why a figure of :class:`AgreementOutcome` can be undefined (its JSON says so beside the null).
UNDEFINED = {
    "cohen_kappa": "undefined: the human and the model gave every pair the same single grade "
    "(expected agreement 1); see raw_agreement",
    "cohen_kappa_binary": "undefined: the human and the model gave every pair the same binary "
    "label (expected agreement 1); see raw_agreement_binary",
    "kendall_tau": "undefined: fewer than two runs, or one side ranks every system equal",
}


def confusion_matrix(
    human: Sequence[int], model: Sequence[int], grades: Sequence[int]
) -> list[list[int]]:
    """``m[i][j]`` = pairs with human grade ``grades[i]`` and model grade ``grades[j]``."""
    index = {g: i for i, g in enumerate(grades)}
    m = [[0] * len(grades) for _ in grades]
    for h, g in zip(human, model):
        m[index[h]][index[g]] += 1
    return m


def sample_pairs(qrels: Qrels, n: int | None, seed: int) -> list[tuple[str, str]]:
    """Every judged pair of *qrels* sorted by (query id, doc id) as strings, or *n* of them drawn
    without replacement with ``numpy.random.default_rng(seed).choice(len, n, replace=False)``
    (kept in that sorted order).

    Raises:
        InputError: *n* < 1.
    """
    pairs = sorted((str(q), str(d)) for q in qrels for d in qrels[q])
    if n is None or n >= len(pairs):
        return pairs
    if n < 1:
        raise InputError(f"--sample must be at least 1, got {n}")
    idx = np.sort(np.random.default_rng(seed).choice(len(pairs), size=n, replace=False))
    return [pairs[i] for i in idx]


def default_rel_level(profile: str | None) -> int:
    """The relevance threshold of *profile* (its ``-l`` / ``measure_defaults['rel']``), else 1."""
    options = get_profile(profile).options
    return int(dict(options.get("measure_defaults", {})).get("rel", 1))


def system_order_tau(
    human: Qrels, model: Qrels, runs: Mapping[str, Run], measure: str, profile: str | None
) -> tuple[float, dict[str, float], dict[str, float]]:
    """Kendall's tau-b between the systems' means of *measure* under *human* and *model* qrels.

    Returns:
        ``(tau, human means, model means)``; tau is NaN with fewer than two runs.
    """
    h = {
        n: float(score(human, r, [measure], profile=profile).mean(measure)) for n, r in runs.items()
    }
    m = {
        n: float(score(model, r, [measure], profile=profile).mean(measure)) for n, r in runs.items()
    }
    if len(runs) < 2:
        return float("nan"), h, m
    tau = kendalltau([h[n] for n in runs], [m[n] for n in runs]).statistic
    return float(tau), h, m


def _qrels_of(pairs: Sequence[tuple[str, str, int]], name: str) -> Qrels:
    return Qrels([p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs], name=name)


@dataclass
class AgreementOutcome:
    """The agreement figures (see module docstring) and the judgments behind them."""

    pairs: int
    judged: int
    failures: int
    sent: int
    rel_level: int
    cohen_kappa: float
    cohen_kappa_binary: float
    grades: list[int]
    confusion: list[list[int]]
    confusion_binary: list[list[int]]
    usage: dict[str, Any]
    tau: float | None = None
    measure: str | None = None
    human_means: dict[str, float] = field(default_factory=dict)
    model_means: dict[str, float] = field(default_factory=dict)
    judgments: list[Judgment] = field(default_factory=list, repr=False)
    files: dict[str, str] = field(default_factory=dict)
    raw_agreement: float = float("nan")
    raw_agreement_binary: float = float("nan")
    queries: dict[str, Any] | None = None  # the query subset (Dataset.query_subset)

    def to_dict(self) -> dict[str, Any]:
        """The figures as JSON values: an undefined one is ``None`` with ``<name>_note`` beside
        it (:data:`UNDEFINED`), never NaN."""
        out = {
            "pairs": self.pairs,
            "judged": self.judged,
            "failures": self.failures,
            "requests_sent": self.sent,
            "rel_level": self.rel_level,
            "raw_agreement": self.raw_agreement,
            "raw_agreement_binary": self.raw_agreement_binary,
            "cohen_kappa": self.cohen_kappa,
            "cohen_kappa_binary": self.cohen_kappa_binary,
            "grades": self.grades,
            "confusion": self.confusion,
            "confusion_binary": self.confusion_binary,
            "usage": self.usage,
        }
        if self.queries is not None:
            out["queries"] = self.queries
        if self.measure is not None:
            out.update(
                kendall_tau=self.tau,
                measure=self.measure,
                human_means=self.human_means,
                model_means=self.model_means,
            )
        for key in list(out):
            value = out[key]
            if key in UNDEFINED and (value is None or not np.isfinite(value)):
                out[key] = None
                out[f"{key}_note"] = UNDEFINED[key]
        return out


def judge_agreement(
    dataset: Dataset,
    client: LLMClient,
    out_dir: str | Path | None = None,
    *,
    sample: int | None = None,
    seed: int = 0,
    rel_level: int | None = None,
    runs: Mapping[str, Run] | None = None,
    measure: str | None = None,
    profile: str | None = None,
    max_repairs: int = 2,
    max_words: int = 400,
    progress=None,
) -> AgreementOutcome:
    """Re-judge judged pairs of *dataset* and measure the agreement with its qrels.

    Args:
        dataset: the dataset (qrels, corpus, queries).
        client: the LLM client.
        out_dir: when given, ``judgments.jsonl`` and ``agreement.json`` are written there
            (locked from the start, refused when it holds another kind of output, the two
            files replaced together: :func:`nuggetbench._outfolder.writing`).
        sample, seed: how many judged pairs to draw (default all), and the seed.
        rel_level: binary threshold (default: the profile's, see :func:`default_rel_level`).
        runs: ``{name: run}`` for Kendall's tau of the system orders.
        measure: the measure ordering the systems (default: the dataset's first).
        profile: the profile (default: the dataset's).

    Raises:
        InputError: the dataset has no judged pair, or every judgment failed.
        LLMError / BudgetError: from the client.
    """
    settings = {
        "sample": sample,
        "seed": seed,
        "rel_level": rel_level,
        "runs": runs,
        "measure": measure,
        "profile": profile,
        "max_repairs": max_repairs,
        "max_words": max_words,
        "progress": progress,
    }
    if out_dir is None:
        return _agreement(dataset, client, None, **settings)
    command = "nuggetbench judge --agreement -o"
    with writing(out_dir, "agreement", command) as stage:  # refused before any request
        outcome = _agreement(dataset, client, stage, **settings)
    outcome.files = {k: str(Path(out_dir) / Path(v).name) for k, v in outcome.files.items()}
    return outcome


def _agreement(
    dataset: Dataset,
    client: LLMClient,
    stage: Path | None,
    *,
    sample: int | None,
    seed: int,
    rel_level: int | None,
    runs: Mapping[str, Run] | None,
    measure: str | None,
    profile: str | None,
    max_repairs: int,
    max_words: int,
    progress: Any,
) -> AgreementOutcome:
    """:func:`judge_agreement`, its files written into *stage* (if given)."""
    profile = profile or dataset.default_profile
    level = default_rel_level(profile) if rel_level is None else int(rel_level)
    pairs = sample_pairs(dataset.qrels, sample, seed)
    if not pairs:
        raise InputError(f"{dataset.id}: the qrels judge no pair; nothing to agree on")
    query_text, doc_text = text_lookups(dataset)
    paid = client.ledger.paid()[0]
    judgments = judge_pairs(
        client,
        pairs,
        query_text,
        doc_text,
        human=lambda q, d: int(dataset.qrels[q][d]),
        max_repairs=max_repairs,
        max_words=max_words,
        progress=progress,
    )
    ok = [j for j in judgments if j.grade is not None]
    if not ok:
        raise InputError(f"{dataset.id}: every one of the {len(pairs)} judgments failed")
    outcome = AgreementOutcome(
        pairs=len(pairs),
        judged=len(ok),
        failures=len(judgments) - len(ok),
        sent=client.ledger.paid()[0] - paid,
        rel_level=level,
        **_figures([int(j.human_grade) for j in ok], [int(j.grade) for j in ok], level),
        usage={
            "model": client.settings.model,
            "prompt": load_prompt(JUDGE_PROMPT).version,
            **client.ledger.totals(),
        },
        judgments=judgments,
        queries=dataset.query_subset,
    )
    if runs:
        measure = measure or dataset.default_measures[0]
        _add_system_order(outcome, ok, runs, measure, profile)
    if stage is not None:
        _save(outcome, stage, client.settings.model)
    return outcome


def _figures(h: list[int], m: list[int], level: int) -> dict[str, Any]:
    """Agreement, kappa and confusion of the human grades *h* and the model's *m*, on the
    grades and on binary labels (grade >= *level*)."""
    hb, mb = [int(x >= level) for x in h], [int(x >= level) for x in m]
    grades = list(range(max(3, *h) + 1))
    return {
        "cohen_kappa": cohen_kappa(h, m),
        "cohen_kappa_binary": cohen_kappa(hb, mb),
        "raw_agreement": raw_agreement(h, m),
        "raw_agreement_binary": raw_agreement(hb, mb),
        "grades": grades,
        "confusion": confusion_matrix(h, m, grades),
        "confusion_binary": confusion_matrix(hb, mb, [0, 1]),
    }


def _add_system_order(
    outcome: AgreementOutcome, ok: list[Judgment], runs: Any, measure: str, profile: Any
) -> None:
    """Kendall's tau of the systems' order under the human and the model's grades of the
    same pairs, with each side's means, into *outcome*."""
    human_q = _qrels_of([(j.query_id, j.doc_id, int(j.human_grade)) for j in ok], "human")
    model_q = _qrels_of([(j.query_id, j.doc_id, int(j.grade)) for j in ok], "llm")
    tau, hm, mm = system_order_tau(human_q, model_q, runs, measure, profile)
    outcome.tau, outcome.measure, outcome.human_means, outcome.model_means = tau, measure, hm, mm


def _save(outcome: AgreementOutcome, out: Path, model: str) -> None:
    """``judgments.jsonl`` and ``agreement.json`` into the folder *out* (created)."""
    out.mkdir(parents=True, exist_ok=True)
    version = load_prompt(JUDGE_PROMPT).version
    rows = [j.record(model, version) for j in outcome.judgments]
    outcome.files = {
        "judgments": str(write_rows(out / "judgments.jsonl", rows)),
        "summary": str(out / "agreement.json"),
    }
    write_json(out / "agreement.json", {"agreement": outcome.to_dict()})
