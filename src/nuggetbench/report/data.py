"""The numbers and texts a report shows, computed once in Python.

:func:`build_report_data` turns :class:`~nuggetbench.report.inputs.ReportInputs` into a
:class:`ReportData`: per-query values and their win/tie/loss outcomes against a baseline, the
summary (means, bootstrap CIs, paired test; the ``results.json`` comparison, or a new one when
another baseline is chosen), each system's top documents per query with a snippet, a grade
(``None`` when unjudged) and the nuggets they support, the first rank at which each system
supports each nugget, the evidence spans found inside each supporting passage (span-judged
benchmarks), the depth curves ``R@k`` and ``Coverage@k`` down to each run's depth, how differently
each system ranks each query than the baseline (``RBO_ext`` and weighted tau over the top 100:
:mod:`nuggetbench.report.rankdiff`), significance between every pair of systems
(:mod:`nuggetbench.report.pairwise`), the query the query view opens on, and the dataset's notes
(fastbook's chunking ceiling) and facts (its chunker). The page, the figures and the tests all
read this one value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.compare import Summary, check_settings, check_stored, compare, profile_summaries
from nuggetbench.compare.reporting import TIE_TOLERANCE  # one tie rule for the report and `compare`
from nuggetbench.corpus.spans import fix
from nuggetbench.data import NuggetQrels, Run
from nuggetbench.errors import InputError
from nuggetbench.measures import Results, score
from nuggetbench.report.inputs import ReportInputs
from nuggetbench.report.pairwise import Pairwise, pairwise
from nuggetbench.report.rankdiff import RANK_K, RBO_P, against_baseline, start_query
from nuggetbench.spec import short_labels

__all__ = [
    "ReportData",
    "build_report_data",
    "outcome",
    "system_keys",
    "TIE_TOLERANCE",
    "MISSING",
    "JUDGED_SHOWN",
    "LABEL_CHARS",
    "CURVE_MARKS",
    "DATASET_FACTS",
    "clip",
]

#: The snippet of a retrieved document that is not in the corpus.
MISSING = "[not in the corpus]"
#: Characters shown of a passage of a span-judged benchmark (whole passages, in practice).
SPAN_PASSAGE_CHARS = 4000
#: Judged documents listed per query in the query view (highest grades first).
JUDGED_SHOWN = 100
#: Characters of a system's display label (``spec.short_label``); the full name is in the legend.
LABEL_CHARS = 22
#: The depth curves have every k up to this one, then about 30 log-spaced cutoffs per run.
DENSE_UNTIL = 100
#: Cutoffs every depth curve includes when the runs are that deep (the depth tables' columns).
CURVE_MARKS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000)
#: The dataset's metadata shown with the provenance (how its corpus was made).
DATASET_FACTS = ("chunker", "restrict_to_chapter")


def clip(text: str, chars: int) -> str:
    """*text* in at most *chars* characters: cut at the last word boundary before the limit (or
    mid-word when a single word fills half of it) and ended with an ellipsis when cut."""
    if len(text) <= chars:
        return text
    cut = text[: max(chars - 1, 1)]
    word = re.search(r"\s\S*$", cut)
    if word is not None and word.start() >= chars // 2:
        cut = cut[: word.start()]
    return cut.rstrip(" \t\n,;:-") + "\u2026"


def system_keys(n: int) -> list[str]:
    """Short keys for *n* systems in results order: ``A``..``Z``, then ``AA``, ``AB``..."""
    out = []
    for i in range(n):
        key, i = "", i + 1
        while i:
            i, r = divmod(i - 1, 26)
            key = chr(65 + r) + key
        out.append(key)
    return out


def outcome(value: float, base: float) -> int | None:
    """``1`` (win), ``0`` (tie: ``|value - base| <= TIE_TOLERANCE``), ``-1`` (loss) or ``None``
    when either value is NaN (a query the measure does not average)."""
    if math.isnan(value) or math.isnan(base):
        return None
    d = value - base
    return 0 if abs(d) <= TIE_TOLERANCE else (1 if d > 0 else -1)


@dataclass
class ReportData:
    """The report's content (see the module docstring).

    Attributes:
        title: a heading (dataset id and query count).
        results: the ``results.json`` dict the report was built from.
        systems: system names, results order; ``baseline`` is one of them.
        measures: the measure strings of the results.
        query_ids: the evaluated queries (rows of every per-query array).
        per_query: ``{system: {measure: float array (len(query_ids),)}}``; NaN: not averaged.
        wtl: ``{system: {measure: (wins, ties, losses)}}`` against the baseline (the baseline's
            own entry is ``(0, n, 0)``).
        comparison: the comparison dict (``ComparisonReport.to_dict()``), ``None`` with one system.
        depth_k: the cutoffs of the depth curves: every k up to 100, then log-spaced ones (with
            :data:`CURVE_MARKS` and each run's depth) up to the deepest run (or *depth*).
        depth: ``{"R": {system: array}, "Coverage": {system: array}}`` (means at each cutoff of
            ``depth_k``, NaN beyond the system's run depth; ``Coverage`` only when the judgments
            have nuggets).
        payload: the JSON-ready dict embedded in the page.
        span_judged: whether the nuggets carry evidence spans (fastbook).
        summaries: the extra tables the dataset family or profile declares (BIRCO's bootstrap),
            one per title, rows ``"<system>: <label>"``.
        missing: what the inputs lack (a dataset absent here, runs not copied: see
            :attr:`~nuggetbench.report.inputs.ReportInputs.missing`), one line each; the views
            that need it are then empty.
        rank_diff: ``{"RBO": {system: array}, "tau": {system: array}}``: per query, how much each
            non-baseline system's top 100 agrees with the baseline's (``RBO_ext``, p = 0.9, and
            weighted Kendall's tau; NaN where tau is undefined).
        pairwise: the paired test between every two systems (``None`` with one system).
        start: the index (into ``query_ids``) of the query the query view opens on: the largest
            difference on the first measure between the baseline and the next system (ties: the
            lower RBO); with one system, the query nearest its median.
        notes: the results' notes, then the dataset's (fastbook's chunking ceiling).
        facts: ``(name, text)`` rows of the dataset's metadata (:data:`DATASET_FACTS`).
        run_depths: ``{system: documents of its deepest query}``.
    """

    title: str
    results: dict
    systems: list[str]
    baseline: str
    measures: list[str]
    query_ids: list[str]
    per_query: dict[str, dict[str, np.ndarray]]
    wtl: dict[str, dict[str, tuple[int, int, int]]]
    comparison: dict | None
    depth_k: list[int]
    depth: dict[str, dict[str, np.ndarray]]
    payload: dict = field(repr=False)
    span_judged: bool = False
    summaries: list[Summary] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    rank_diff: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    pairwise: Pairwise | None = None
    start: int = 0
    notes: list[str] = field(default_factory=list)
    facts: list[tuple[str, str]] = field(default_factory=list)
    run_depths: dict[str, int] = field(default_factory=dict)


def _per_query(results: dict, systems: Sequence[str]) -> tuple[list[str], dict]:
    """Per-query arrays aligned on the first system's query ids (all must evaluate the same)."""
    qids = [str(q) for q in results["systems"][systems[0]]["query_ids"]]
    out: dict[str, dict[str, np.ndarray]] = {}
    for name in systems:
        entry = results["systems"][name]
        if [str(q) for q in entry["query_ids"]] != qids:
            raise InputError(
                f"systems {systems[0]!r} and {name!r} were evaluated on different queries; "
                "a report compares systems on the same queries (rerun them together)"
            )
        out[name] = {
            m: np.array([np.nan if v is None else v for v in entry["per_query"][m]], np.float64)
            for m in results["measures"]
        }
    return qids, out


def _wtl(per_query: dict, baseline: str, measures: Sequence[str]) -> dict:
    out: dict[str, dict[str, tuple[int, int, int]]] = {}
    for name, values in per_query.items():
        out[name] = {}
        for m in measures:
            codes = [outcome(a, b) for a, b in zip(values[m], per_query[baseline][m])]
            out[name][m] = (codes.count(1), codes.count(0), codes.count(-1))
    return out


def _comparison(results: dict, per_query: dict, baseline: str, qids: list[str]) -> dict | None:
    """The stored comparison when its baseline is *baseline* (checked against the per-query
    values: :func:`nuggetbench.compare.check_stored`); else a new one with the stored settings
    (test, correction, alpha, CI level, resamples, seed, queries averaged, checked as well) or
    ``compare``'s defaults; what each system lacks is its ``missing_queries``."""
    if len(per_query) < 2:
        return None
    stored = results.get("comparison") or {}
    lacks = {n: results["systems"][n].get("missing_queries") or [] for n in per_query}
    if stored.get("baseline") == baseline and "estimates" in stored:
        values = {n: {m: v.tolist() for m, v in pq.items()} for n, pq in per_query.items()}
        check_stored(stored, values, qids, lacks)  # an edited comparison is refused, never shown
        return stored
    keys = ("test", "correction", "alpha", "ci", "n_resamples", "seed", "average_over")
    settings = {k: stored[k] for k in keys if k in stored and "estimates" in stored}
    check_settings(settings)
    report = compare(
        {n: {m: dict(zip(qids, v.tolist())) for m, v in pq.items()} for n, pq in per_query.items()},
        baseline=baseline,
        measures=results["measures"],
        missing=lacks,
        **settings,
    )
    return report.to_dict()


def _summaries(inputs: ReportInputs) -> list[Summary]:
    """What ``nuggetbench evaluate`` prints under the means (the family's or profile's tables,
    over the dataset's query order), for every system, merged by title."""
    family = inputs.target.family
    order = inputs.target.query_order
    merged: dict[str, dict[str, Any]] = {}
    for name, entry in inputs.results["systems"].items():
        res = Results.from_dict(entry)
        tables = family.summaries(res, order) if family else profile_summaries(res, order)
        for t in tables:
            table = merged.setdefault(t.title, {"rows": {}, "digits": t.digits})
            table["rows"].update({f"{name}: {label}": row for label, row in t.rows.items()})
    return [Summary(title, t["rows"], t["digits"]) for title, t in merged.items()]


def _run_depth(run: Run) -> int:
    """Documents of the run's deepest query (0 for an empty run)."""
    lengths = run.lengths()
    return int(lengths.max()) if len(lengths) else 0


def _depth_ks(kmax: int, depths: Iterable[int]) -> list[int]:
    """Every k up to :data:`DENSE_UNTIL`, then about 30 log-spaced cutoffs, the
    :data:`CURVE_MARKS` and each run's depth, up to *kmax*."""
    ks = set(range(1, min(kmax, DENSE_UNTIL) + 1))
    if kmax > DENSE_UNTIL:
        ks |= {int(round(k)) for k in np.geomspace(DENSE_UNTIL, kmax, 30)}
        ks |= {k for k in (*CURVE_MARKS, *depths) if 0 < k <= kmax}
    return sorted(ks)


def _depth(inputs: ReportInputs, depth: int | None) -> tuple[list[int], dict, dict[str, int]]:
    """Mean ``R@k`` (and ``Coverage@k`` with nuggets) under the profile at the cutoffs of
    :func:`_depth_ks` (to *depth*, default the deepest run), each run's curve stopping at its
    own depth (NaN beyond); and each run's depth."""
    depths = {name: _run_depth(run) for name, run in inputs.runs.items()}
    ks = _depth_ks(depth or max([*depths.values(), 1]), depths.values())
    if not inputs.runs:  # numbers only (runs or dataset not here): no curves
        return ks, {}, depths
    families = ["R"] + (["Coverage"] if inputs.qrels.nuggets is not None else [])
    out: dict[str, dict[str, np.ndarray]] = {f: {} for f in families}
    profile = inputs.results["profile"]
    for name, run in inputs.runs.items():
        mine = [k for k in ks if k <= max(depths[name], 1)]
        res = score(
            inputs.qrels, run, [f"{f}@{k}" for f in families for k in mine], profile=profile
        )
        for f in families:
            values = [res.means[f"{f}@{k}"] for k in mine] + [np.nan] * (len(ks) - len(mine))
            out[f][name] = np.array(values, dtype=np.float64)
    return ks, out, depths


class _Docs:
    """The shared table of shown documents: ``[doc_id, snippet]`` rows, one per document.

    With *fixed*, the text is ``ftfy.fix_text``-ed first (the span-judging rule), so evidence
    strings are found in it as the judge found them. A document missing from the corpus gets
    the snippet ``MISSING``.
    """

    def __init__(self, corpus: Any, snippet_chars: int, *, fixed: bool = False):
        self.corpus = corpus
        self.chars = snippet_chars
        self.fixed = fixed
        self.index: dict[str, int] = {}
        self.rows: list[list[Any]] = []

    def text(self, doc_id: str) -> str:
        if self.corpus is None:  # a judgments file: no texts
            return ""
        doc = self.corpus.get(doc_id)
        if doc is None:
            return MISSING
        return fix(doc.full_text) if self.fixed else doc.full_text

    def add(self, doc_id: str) -> int:
        i = self.index.get(doc_id)
        if i is None:
            i = self.index[doc_id] = len(self.rows)
            text = self.text(doc_id)
            self.rows.append([doc_id, clip(text, self.chars)])
        return i


def _supports(nuggets: NuggetQrels) -> dict[str, dict[str, set[str]]]:
    """``{query: {doc: {nugget ids}}}`` of the supporting judgments (support > 0)."""
    q, n, d, s = nuggets.arrays()
    out: dict[str, dict[str, set[str]]] = {}
    for qq, nn, dd in zip(q[s > 0].tolist(), n[s > 0].tolist(), d[s > 0].tolist()):
        out.setdefault(str(qq), {}).setdefault(str(dd), set()).add(str(nn))
    return out


def _highlights(text: str, spans: Sequence[str], nugget: int) -> list[list[int]]:
    """``[start, end, nugget]`` of every occurrence of each evidence span in *text* (fixed)."""
    out = []
    for span in spans:
        needle = fix(span)
        if not needle.strip():
            continue
        pos = text.find(needle)
        while pos >= 0:
            out.append([pos, pos + len(needle), nugget])
            pos = text.find(needle, pos + len(needle))
    return out


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _round(x: float, digits: int = 6) -> float | None:
    return None if math.isnan(x) else round(float(x), digits)


def _top_docs(
    inputs: ReportInputs, qids: list[str], top: int, docs: _Docs, span_judged: bool = False
) -> dict:
    """Per system: ``[[doc index...] per query]``, scores and grades (``None`` = unjudged). Span
    judging judges every passage: there a passage that supports no nugget has grade 0."""
    qrels = inputs.qrels
    missing = 0 if span_judged else None
    out: dict[str, dict[str, list]] = {}
    for name in inputs.systems:
        run = inputs.runs.get(name, {})  # no run (numbers only): no documents
        ids, scores, grades = [], [], []
        for qid in qids:
            ranked = run[qid][:top] if qid in run else []
            judged = qrels.get(qid, {})
            ids.append([docs.add(d) for d, _ in ranked])
            scores.append([_round(s, 4) for _, s in ranked])
            grades.append([judged.get(d, missing) for d, _ in ranked])
        out[name] = {"docs": ids, "scores": scores, "grades": grades}
    return out


def _query_docs(
    inputs: ReportInputs, qids: list[str], top: dict, docs: _Docs, span_judged: bool
) -> list[dict]:
    """Per query (``qids`` order): ``j``, the judged documents ``[[doc index, grade]...]`` (grade
    descending, at most ``JUDGED_SHOWN``; span judging lists the supporting passages, every other
    passage being judged 0), ``more``, how many judged documents were left out, and ``r``,
    ``{doc index: [rank or None per system]}`` over each system's whole run for every judged and
    every shown document (the query view's side-by-side rank differences)."""
    names = inputs.systems
    out = []
    for qi, qid in enumerate(qids):
        judged = inputs.qrels.get(qid, {})
        if span_judged:
            judged = {d: g for d, g in judged.items() if g > 0}
        runs = [inputs.runs.get(s, {}) for s in names]  # no run (numbers only): no ranks
        ranks = [{d: r for r, (d, _) in enumerate(run.get(qid, []), 1)} for run in runs]
        order = sorted(judged, key=lambda d: (-judged[d], min(r.get(d, 1e9) for r in ranks)))
        shown = order[:JUDGED_SHOWN]
        listed = [[docs.add(d), judged[d]] for d in shown]
        wanted = {i for s in names for i in top[s]["docs"][qi]} | {i for i, _ in listed}
        out.append(
            {
                "j": listed,
                "more": len(order) - len(shown),
                "r": {str(i): [r.get(docs.rows[i][0]) for r in ranks] for i in sorted(wanted)},
            }
        )
    return out


def _nugget_payload(inputs: ReportInputs, qids: list[str], top: int, docs: _Docs) -> dict | None:
    """Per query: the nuggets, each system's first supporting rank (whole run), the nuggets each
    shown document supports, and evidence-span highlights (span-judged judgments)."""
    nuggets = inputs.qrels.nuggets
    if nuggets is None:
        return None
    supports = _supports(nuggets)
    out: dict[str, Any] = {}
    for qi, qid in enumerate(qids):
        nugs = nuggets.nuggets_of(qid)
        if not nugs:
            continue
        pos = {n.nugget_id: i for i, n in enumerate(nugs)}
        sup = supports.get(qid, {})
        first: dict[str, list[int | None]] = {}
        per_doc: dict[int, list[Any]] = {}
        for name, run in inputs.runs.items():
            best: list[int | None] = [None] * len(nugs)
            for rank, (doc, _) in enumerate(run.get(qid, []), start=1):
                for nid in sup.get(doc, ()):
                    if best[pos[nid]] is None:
                        best[pos[nid]] = rank
                if rank <= top and doc in sup:
                    di = docs.add(doc)
                    if di not in per_doc:
                        found = sorted(pos[n] for n in sup[doc])
                        text = docs.rows[di][1]
                        marks = [h for j in found for h in _highlights(text, nugs[j].spans, j)]
                        per_doc[di] = [found, sorted(marks)]
            first[name] = best
        out[str(qi)] = {
            "ids": [n.nugget_id for n in nugs],
            "text": [n.text for n in nugs],
            "spans": [list(n.spans) for n in nugs],
            "first": first,
            "docs": {str(k): v for k, v in per_doc.items()},
        }
    return out


def _dataset_notes(inputs: ReportInputs) -> tuple[list[str], list[tuple[str, str]]]:
    """The results' notes then the dataset's (once each), and the dataset's facts."""
    notes = list(inputs.results.get("notes") or [])
    ds = inputs.dataset
    if ds is None:
        return notes, []
    notes += [n for n in ds.notes if n not in notes]
    facts = [(k, str(ds.metadata[k])) for k in DATASET_FACTS if ds.metadata.get(k) is not None]
    return notes, facts


def _payload(
    inputs: ReportInputs,
    qids: list[str],
    per_query: dict,
    baseline: str,
    top: int,
    docs: _Docs,
    span_judged: bool,
    query_chars: int,
) -> dict:
    """The JSON-ready dict the page's script reads (see :class:`ReportData`)."""
    results, systems = inputs.results, inputs.systems
    queries = inputs.queries
    top_docs = _top_docs(inputs, qids, top, docs, span_judged)
    payload = {
        "systems": systems,
        "keys": system_keys(len(systems)),
        "labels": short_labels(systems, LABEL_CHARS),  # distinct, whatever the names
        "baseline": baseline,
        "measures": results["measures"],
        "qids": qids,
        "qtext": [clip(queries.get(q) or "", query_chars) for q in qids],
        "pq": {s: {m: [_round(x) for x in v] for m, v in per_query[s].items()} for s in systems},
        "outcome": {
            s: {
                m: [outcome(a, b) for a, b in zip(v, per_query[baseline][m])] for m, v in pq.items()
            }
            for s, pq in per_query.items()
        },
        "top": top_docs,
        "qdocs": _query_docs(inputs, qids, top_docs, docs, span_judged),
        "k": top,
        "spanJudged": span_judged,
        "hasTexts": inputs.corpus is not None,
        "missing": " ".join(inputs.missing),
        "hasRuns": bool(inputs.runs),  # numbers only: no documents ranked
        "hasJudged": inputs.qrels.n_judgments > 0,  # numbers only: no judgments here
    }
    payload["nuggets"] = _nugget_payload(inputs, qids, top, docs)
    return payload


def _pairwise(results: dict, per_query: dict) -> Pairwise | None:
    """Every pair's test with the comparison's settings (``None`` with one system)."""
    if len(per_query) < 2:
        return None
    stored = results.get("comparison") or {}
    return pairwise(
        per_query, results["measures"], {k: v for k, v in stored.items() if k != "error"}
    )


def _baseline(inputs: ReportInputs, baseline: str | None) -> str:
    """The report's baseline: *baseline*, else the stored comparison's, else the first system.

    Raises:
        InputError: an unknown baseline, or a stored one that is not a system (an edited file).
    """
    systems = inputs.systems
    stored = (inputs.results.get("comparison") or {}).get("baseline")
    if baseline is None and stored is not None and stored not in systems:
        where = Path(inputs.source) / "results.json"
        raise InputError(
            f"{where}: comparison.baseline: {str(stored)[:40]!r} is not one of its systems; the "
            "file was edited or damaged: run the experiment again"
        )
    baseline = baseline or stored or systems[0]
    if baseline not in systems:
        raise InputError(f"unknown baseline {baseline!r}; the systems are {', '.join(systems)}")
    return baseline


def build_report_data(
    inputs: ReportInputs,
    *,
    baseline: str | None = None,
    top: int = 20,
    snippet_chars: int = 160,
    depth: int | None = None,
    query_chars: int = 2000,
) -> ReportData:
    """Compute everything a report shows.

    Args:
        inputs: from :func:`~nuggetbench.report.inputs.load_inputs`.
        baseline: the system the deltas, win/tie/loss counts and ranking differences are taken
            against (default: the results' comparison baseline, else the first system).
        top: documents kept per query and system (ranks ``1..top``), with snippets.
        snippet_chars: characters of each document's text shown (cut at a word, with an
            ellipsis); span-judged benchmarks show the whole passage (up to 4,000 characters,
            after ``ftfy.fix_text``, as the judging rule) so the evidence can be highlighted.
        depth: the largest cutoff of the depth curves (default: the deepest run's depth).
        query_chars: characters of each query's text kept (cut at a word, with an ellipsis).

    Raises:
        InputError: an unknown baseline, or systems evaluated on different queries.
    """
    results = inputs.results
    systems = inputs.systems
    baseline = _baseline(inputs, baseline)
    if top < 1 or (depth is not None and depth < 1):
        raise InputError(f"top ({top}) and depth ({depth}) must be at least 1")
    qids, per_query = _per_query(results, systems)
    nuggets = inputs.qrels.nuggets
    span_judged = nuggets is not None and any(n.spans for n in nuggets.iter_nuggets())
    chars = max(snippet_chars, SPAN_PASSAGE_CHARS) if span_judged else snippet_chars
    docs = _Docs(inputs.corpus, chars, fixed=span_judged)
    ks, curves, run_depths = _depth(inputs, depth)
    wtl = _wtl(per_query, baseline, results["measures"])
    try:
        comparison = _comparison(results, per_query, baseline, qids)
    except InputError as exc:  # an edited comparison block: the file and the field named
        where = "<experiment>" if inputs.source == "<experiment>" else inputs.source
        raise InputError(f"{Path(where) / 'results.json'}: {exc}") from None
    payload = _payload(inputs, qids, per_query, baseline, top, docs, span_judged, query_chars)
    payload["docs"] = docs.rows
    diff = against_baseline(inputs.runs, qids, baseline)
    payload.update(
        {f"rank{k}": {s: [_round(x, 4) for x in v] for s, v in d.items()} for k, d in diff.items()}
    )
    start = start_query(per_query, baseline, results["measures"][0], diff["RBO"])
    payload.update(start=start, rankK=RANK_K, rboP=RBO_P)
    counts = (_count(len(qids), "query", "queries"), _count(len(systems), "system", "systems"))
    notes, facts = _dataset_notes(inputs)
    return ReportData(
        f"{results['dataset']} \u00b7 {counts[0]} \u00b7 {counts[1]}",
        results,
        systems,
        baseline,
        list(results["measures"]),
        qids,
        per_query,
        wtl,
        comparison,
        ks,
        curves,
        payload,
        span_judged,
        _summaries(inputs),
        list(inputs.missing),
        rank_diff=diff,
        pairwise=_pairwise(results, per_query),
        start=start,
        notes=notes,
        facts=facts,
        run_depths=run_depths,
    )
