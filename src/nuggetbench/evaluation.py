"""``evaluate_dataset``: score a run against a dataset or judgments file, with its conventions.

This is the library function behind ``nuggetbench evaluate``. It names no benchmark: what differs
between benchmarks (default measures and profile, span judging of a passage corpus, a bootstrap
under the means, a judgments file in a family's own format) comes from the dataset family
(:class:`~nuggetbench.datasets.DatasetFamily`) and the profile.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench._outfolder.results import check_recorded_dataset
from nuggetbench._runtime import alongside, usable_cpus
from nuggetbench.compare import ComparisonReport, Summary, baseline_at, profile_summaries
from nuggetbench.compare.runs import compare_runs
from nuggetbench.data import Corpus, JsonlCorpus, Run, read_run
from nuggetbench.data.checks import Finding, check_findings
from nuggetbench.data.formats.prefs import read_prefs, read_qrels_prefs
from nuggetbench.data.formats.qrels_jg import read_qrels_jg
from nuggetbench.data.subset import QuerySubset, query_subset
from nuggetbench.datasets import Dataset, Target, family_of, is_dataset_id, load_target
from nuggetbench.errors import InputError, UnknownNameError
from nuggetbench.measures import EvalContext, Profile, Results, evaluate_groups, get_profile, score
from nuggetbench.measures.compute import Measures, log_query_sets, measure_keys, measure_pairs
from nuggetbench.measures.compute import score_quietly as evaluate_quietly
from nuggetbench.measures.depth import note_pools
from nuggetbench.measures.profiles import trec_eval_version
from nuggetbench.measures.registry import get_family
from nuggetbench.measures.results import averaging, scoring_findings
from nuggetbench.measures.trec.judgment_groups import evaluate_judgment_groups
from nuggetbench.measures.trec.names import (
    TrecEntry,
    format_trec_eval,
    prefs_requested,
    relstrings,
    trec_selection,
)
from nuggetbench.measures.trec.prefs import (
    PREFS_COUNTS,
    PREFS_MEASURES,
    evaluate_prefs_values,
    prefs_mean,
)
from nuggetbench.measures.trec.zscores import standardise

__all__ = [
    "Evaluation",
    "compare_run_files",
    "evaluate_dataset",
    "trec_eval_options",
    "trec_eval_text",
]

log = logging.getLogger(__name__)

#: trec_eval's ``-R`` formats of preference judgments and their readers.
PREFS_READERS = {"prefs": read_prefs, "qrels_prefs": read_qrels_prefs}

MEASURES_BESIDE_CHECKS_MIN = 1 << 19
"""From this many run entries (and two usable CPUs) ``evaluate_dataset`` computes the measures
in a thread while the trap checks run (1M entries: 0.27 and 0.26 s, then at once; 10M: about
1 s each). Their temporaries then add up: the checks look at the run in blocks
(``checks.RANK_CHECK_BLOCK``) and the join keeps no run-sized copy of the codes, so the peak of a
1M-entry evaluation stays that of reading its two files."""


@dataclass
class Evaluation:
    """Everything :func:`evaluate_dataset` produced.

    Attributes:
        results: the :class:`~nuggetbench.measures.Results` (per-query values and means).
        measures: the measure strings scored, in order.
        profile: the profile's name.
        findings: typed trap checks and query-set findings (:class:`~nuggetbench.data.checks.Finding`),
            to show people before the scores.
        summaries: extra tables (a profile's bootstrap) to show under the means.
        notes: lines from the dataset or its family (a chunking ceiling).
        target: the judgments and conventions the run was scored against.
        run: the run scored.
    """

    results: Results
    measures: list[str]
    profile: str
    findings: list[Finding] = field(default_factory=list)
    summaries: list[Summary] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    target: Target | None = None
    run: Run | None = None

    def averaging(self) -> dict[str, Any]:
        """Which queries the means average (:func:`nuggetbench.measures.results.averaging`),
        as every output of ``evaluate`` states it."""
        return averaging(self.results, _known_profile(self.profile))


def evaluate_dataset(
    dataset: str | Path | Dataset,
    run: Run | str | Path,
    measures: Sequence[str] | None = None,
    profile: str | Profile | None = None,
    *,
    corpus: Corpus | str | Path | None = None,
    options: Mapping[str, Any] | None = None,
    trailing: str = "error",
    duplicates: str | None = None,
    judgment_groups: bool = False,
    preferences: str | None = None,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
) -> Evaluation:
    """Score *run* against *dataset* as ``nuggetbench evaluate DATASET RUN`` does.

    Args:
        dataset: a dataset id (``beir/scifact``), a local dataset folder, a :class:`Dataset`, or a
            judgments file (TREC qrels, BEIR tsv, JSON, ndeval diversity qrels, a FreshStack
            queries file).
        run: a :class:`Run`, or a run file (TREC, ``.gz``, JSON, a BIRCO rank file); a TREC
            file's rank column is kept for the ``ndeval`` profile.
        measures: measure strings; default: the dataset's (``nDCG@10 R@100 RR@10 AP`` for a plain
            qrels file).
        profile: a profile name or value; default: the dataset's (``trec_eval -c``).
        corpus: for span-judged families (fastbook): the passage corpus the run retrieved from
            (a ``corpus.jsonl`` path or a :class:`Corpus`); its passages are judged against the
            dataset's evidence spans instead of loading the dataset.
        options: dataset loader options (``{"split": "dev"}``).
        trailing: TREC run lines with more than six fields: ``"error"`` (default) or ``"ignore"``
            (trec_eval's behaviour).
        duplicates: a run file listing a (query, doc) pair twice: ``"first"`` (the first
            occurrence wins, with a warning), ``"error"``, or ``None`` (the format's default:
            ``"first"`` for rank files, ``"error"`` for TREC and JSON runs); see
            :func:`nuggetbench.data.read_run`.
        judgment_groups: *dataset* is a ``qrels_jg`` file (trec_eval ``-R qrels_jg``): every
            measure is averaged per query over the judgment groups (``map_avgjg``...).
        preferences: ``"prefs"`` or ``"qrels_prefs"`` (trec_eval ``-R``): *dataset* is a file of
            preference judgments (:mod:`nuggetbench.data.formats.prefs`), scored by trec_eval's
            preference measures (``all_prefs``: :mod:`nuggetbench.measures.trec.prefs`).
        queries: only these queries, as ``load_dataset``'s *queries*; a note says which.

    Returns:
        An :class:`Evaluation`. A dataset whose metadata declares ``mean_of_groups`` (a
        separator; ``beir/cqadupstack``) is evaluated group by group
        (:func:`~nuggetbench.measures.evaluate_groups`): its means are the mean of the groups'
        means and the first summary is the per-group table.

    Raises:
        UnknownNameError, SpecError: an unknown dataset, measure or profile (before any reading).
        InputError: *corpus* given for a dataset whose judgments do not depend on a corpus; a
            run file of an output folder (``OUT/runs/``) made on this dataset with other data
            (another chunker), which would score 0; a query subset that does not fit (ids named);
            preference measures without *preferences*, or other measures with it.
        FormatError, DatasetError: from the readers and loaders.
    """
    measures = list(measures) if measures else None  # translated once, here: a bad name
    keyed = dict(measure_pairs(measures)) if measures else None  # fails before any reading
    if profile is not None:
        get_profile(profile)  # an unknown profile fails before any reading too
    if (subset := query_subset(queries)) and (preferences is not None or judgment_groups):
        raise InputError("a query subset applies to document judgments, not to -R prefs/qrels_jg")
    if preferences is not None:
        return _evaluate_prefs(dataset, run, measures, profile, trailing, preferences)
    if measures and prefs_requested(measures):
        raise InputError(
            "trec_eval's preference measures (all_prefs, prefs_*) are computed from preference "
            "judgments: give them with -R prefs or -R qrels_prefs"
        )
    if judgment_groups:
        return _evaluate_groups(dataset, run, measures, profile, trailing)
    path = Path(run) if isinstance(run, (str, Path)) else None
    reading = {"trailing": trailing, "duplicates": duplicates}
    target, run = _load(dataset, run, corpus, options, subset, **reading)
    check_recorded_dataset(target.dataset, path)  # a run file of an output folder
    measures = keyed if keyed is not None else dict(measure_pairs(list(target.default_measures)))
    prof = get_profile(profile or target.default_profile)
    results, groups, findings = _check_and_score(target, run, measures, prof)
    note_pools(results, target.doc_filter)
    return _summarise(target, run, measures, prof, results, groups, findings)


def _load(
    dataset: Any,
    run: Any,
    corpus: Any,
    options: Any,
    subset: QuerySubset | None,
    *,
    trailing: str,
    duplicates: str | None,
) -> tuple[Target, Run]:
    """The judgments and the run, restricted to the query *subset* (if any): a run file is read
    in a thread while the judgments load (numpy and pyarrow release the GIL for their long
    steps); a judgments error comes first."""

    def read_target() -> Target:
        return _target(dataset, corpus, dict(options or {})).subset(subset, what=str(dataset))

    if isinstance(run, Run):
        target = read_target()
    else:
        reading = {"keep_rank": True, "trailing": trailing, "duplicates": duplicates}
        target, run = alongside(read_target, read_run, run, **reading)
    return target, target.restrict_run(run)


def _check_and_score(
    target: Target, run: Run, measures: Measures, prof: Profile
) -> tuple[Results, dict[str, Results], list[Finding]]:
    """The trap checks and the measures: a long run is scored in a thread while the checks run
    (:data:`MEASURES_BESIDE_CHECKS_MIN`); the log lines come in the order of one after the
    other (the checks', then the measures')."""

    def check() -> list[Finding]:
        return check_findings(target.qrels, run, target.corpus, metadata=target.metadata)

    sep = (target.metadata or {}).get("mean_of_groups")
    if sep:  # a dataset scored as the mean of its groups (beir/cqadupstack's forums)
        findings = check()
        results, groups = evaluate_groups(target.qrels, run, measures, profile=prof, sep=sep)
        return results, groups, findings
    beside = run.n_entries >= MEASURES_BESIDE_CHECKS_MIN and usable_cpus() >= 2
    scorer = evaluate_quietly if beside else score  # the quiet one logs after the checks
    findings, results = alongside(
        check, scorer, target.qrels, run, measures, profile=prof, thread=beside
    )
    if beside:
        log_query_sets(results, prof)
    return results, {}, findings


def _summarise(
    target: Target,
    run: Run,
    measures: Measures,
    prof: Profile,
    results: Results,
    groups: dict[str, Results],
    findings: list[Finding],
) -> Evaluation:
    """The :class:`Evaluation`: query-set findings, the family's or profile's summaries."""
    findings = _overlap_as_evaluated(findings, results, target.qrels, run)
    findings = scoring_findings(findings, results, prof)
    if target.family is not None:
        summaries = target.family.summaries(results, target.query_order)
    else:
        summaries = profile_summaries(results, target.query_order, profile=prof)
    if groups:
        summaries = [_group_table(groups, results), *summaries]
    shown = list(measures)  # the keys of the translated pairs (P_5, P_10 of P.5,10)
    return Evaluation(
        results, shown, prof.name, findings, summaries, list(target.notes), target, run
    )


def _overlap_as_evaluated(
    findings: list[Finding], results: Results, qrels: Any, run: Run
) -> list[Finding]:
    """*findings* with the query-overlap line counted as the header counts: when the profile
    evaluates queries the judgments do not hold (fastbook: a query whose nuggets no passage of
    the corpus supports scores 0), they are named as evaluated, not as ignored."""
    evaluated = {str(q) for q in results.query_ids}
    judged = {str(q) for q in qrels.query_ids}
    unjudged = evaluated - judged
    if not unjudged:
        return findings
    ran = {str(q) for q in run.query_ids}
    text = (
        f"{len(evaluated)} queries evaluated (profile {results.profile!r}): "
        f"{len(evaluated & judged)} have judgments, {len(unjudged)} have none and score 0; "
        f"{len(ran - evaluated)} run queries are not evaluated, "
        f"{len((evaluated & judged) - ran)} judged queries are missing from the run"
    )
    data = {
        "evaluated": len(evaluated),
        "judged": len(evaluated & judged),
        "unjudged_scored_0": len(unjudged),
        "run_only": len(ran - evaluated),
        "missing": len((evaluated & judged) - ran),
    }
    return [
        Finding(f.severity, f.kind, text, data) if f.kind == "query_overlap" else f
        for f in findings
    ]


def _evaluate_groups(
    qrels: Any, run: Run | str | Path, measures: Any, profile: Any, trailing: str
) -> Evaluation:
    """``evaluate_dataset`` for a ``qrels_jg`` file: each query averaged over its groups."""
    if not isinstance(qrels, (str, Path)) or is_dataset_id(str(qrels)):
        raise InputError(f"judgment groups are read from a qrels_jg file, got {qrels!r}")
    groups = read_qrels_jg(qrels)
    measures = list(measures or ["qrels_jg"])
    prof = get_profile(profile or "trec_eval")
    if not isinstance(run, Run):
        run = read_run(run, trailing=trailing)
    results = evaluate_judgment_groups(groups, run, measures, profile=prof)
    return Evaluation(results, list(results.measures), prof.name, run=run)


def _evaluate_prefs(
    path: Any, run: Run | str | Path, measures: Any, profile: Any, trailing: str, kind: str
) -> Evaluation:
    """``evaluate_dataset`` for preference judgments (trec_eval ``-R prefs`` / ``qrels_prefs``)."""
    if kind not in PREFS_READERS:
        raise InputError(f"preference judgments are 'prefs' or 'qrels_prefs', got {kind!r}")
    if not isinstance(path, (str, Path)) or is_dataset_id(str(path)):
        raise InputError(f"preference judgments are read from a {kind} file, got {path!r}")
    measures = list(measures or ["all_prefs"])
    # trec_eval computes its preference measures, runid and num_q from preference judgments
    # (measures.c's all_prefs); any other measure stops it ("Can't calculate measure")
    entries = trec_selection(measures)
    wrong = [e.key for e in entries if e.text not in ("prefs", "runid") and e.key != "num_q"]
    if wrong:
        raise InputError(
            f"with -R {kind} only trec_eval's preference measures (all_prefs, prefs_simp...), "
            f"runid and num_q can be computed, not {', '.join(wrong)}"
        )
    judgments = PREFS_READERS[kind](path)
    prof = get_profile(profile or "trec_eval")
    if not isinstance(run, Run):
        run = read_run(run, trailing=trailing)
    in_run = set(run.query_ids)
    missing = [q for q in judgments if q not in in_run]
    queries = (
        list(judgments) if prof.average_over == "qrels" else [q for q in judgments if q in in_run]
    )
    if not queries:
        raise InputError("no query has both preference judgments and results in the run")
    per_query = evaluate_prefs_values(judgments, run, queries, prof.options.get("max_docs"))
    per_query["num_q"] = np.ones(len(queries))
    means = {m: prefs_mean(m, v) for m, v in per_query.items()}
    means["num_q"] = float(len(queries))
    results = Results(
        query_ids=queries,
        measures=["num_q", *PREFS_MEASURES],
        per_query={m: per_query[m] for m in ["num_q", *PREFS_MEASURES]},
        means=means,
        profile=prof.name,
        run_only_queries=sorted(in_run - set(judgments)),
        missing_queries=missing,
        provenance={"judgments": str(path), "format": kind},
    )
    return Evaluation(results, [e.key for e in entries if e.text != "runid"], prof.name, run=run)


def trec_eval_options(
    profile: str | Profile | None,
    *,
    complete: bool = False,
    max_docs: int | None = None,
    rel_level: int | None = None,
    judged_only: bool = False,
    drop_in: bool = False,
) -> str | Profile | None:
    """The profile of trec_eval's flags ``-c``, ``-M``, ``-l``, ``-J`` added to *profile*.

    One command line has one averaging, whatever it prints: the output format plays no part.
    ``nuggetbench evaluate`` (*drop_in* false) adds the flags to *profile*, or to the default
    ``trec_eval -c`` (every judged query, a query missing from the run scored 0), and with no
    flag returns *profile* as given (``None``: the dataset's default). The drop-in
    ``nuggetbench trec_eval`` (*drop_in*) takes trec_eval's own defaults: without ``-c`` only the
    queries in both the run and the qrels are averaged, as trec_eval does.

    Raises:
        InputError: a flag is combined with a *profile* that is not trec_eval's.
    """
    flags = complete or judged_only or max_docs is not None or rel_level is not None
    if not flags and (profile is not None or not drop_in):
        return profile
    if profile is not None and not str(profile).startswith("trec_eval"):
        raise InputError(
            f"trec_eval's -c/-M/-l/-J cannot be combined with profile {str(profile)!r}: "
            "drop --profile or the flags"
        )
    if profile is not None and not flags:
        return profile
    base = str(profile or ("trec_eval" if drop_in else "trec_eval -c"))
    words = [base]  # the flags add to a trec_eval profile's own
    words += ["-c"] * (complete and "-c" not in base.split()) + ["-J"] * judged_only
    words += [f"-M {max_docs}"] * (max_docs is not None) + [f"-l {rel_level}"] * (
        rel_level is not None
    )
    return get_profile(" ".join(words))


def trec_eval_text(
    ev: Evaluation,
    measures: Sequence[str],
    *,
    per_query: bool = False,
    zscores: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
) -> str:
    """trec_eval's own text output for *ev* (``nuggetbench evaluate --format trec_eval``).

    Args:
        ev: from :func:`evaluate_dataset` (its target and run are used for ``relstring``).
        measures: the measure items as given (``["all_trec", "relstring.20"]``), which name the
            text measures ``runid`` and ``relstring`` too.
        per_query: trec_eval ``-q``: per-query lines first, for every evaluated query (under
            ``-c`` a judged query missing from the run too, as trec_eval 10.0; the
            ``trec_eval-9.0.8`` profiles print only the run's queries, as 9.0.8).
        zscores: trec_eval ``-Z``: ``{query: {name: (mean, stddev)}}``
            (:func:`~nuggetbench.data.formats.zscores.read_zscores`); every value is printed
            as its z-score, names prefixed ``Z`` (:mod:`nuggetbench.measures.trec.zscores`).

    Returns:
        The text (see :func:`~nuggetbench.measures.trec.names.format_trec_eval`).
    """
    results = ev.results
    prof = _known_profile(ev.profile)
    version = trec_eval_version(prof)
    entries = trec_selection(measures, version=version)
    wanted = [e for e in entries if e.text == "relstring"]
    rel = None
    if wanted and per_query and ev.target is not None and ev.run is not None:
        ctx = EvalContext(ev.target.qrels, ev.run, prof or "trec_eval")
        rel = relstrings(ctx, wanted[0].length)
    missing = set(results.missing_queries) if version == "9.0.8" else set()
    printed = [q for q in results.query_ids if q not in missing] if per_query else None
    # alone, 'P.5' was keyed as given (our P@5): find each entry's key by its measure
    given = {m: k for k, m in measure_pairs(list(measures))}
    source = {
        e.key: e.key if e.key in results.per_query else given[e.measure]
        for e in entries
        if e.measure is not None
    }
    source.update({e.key: e.key for e in entries if e.text == "prefs"})
    values = {k: results.per_query[v] for k, v in source.items()}
    means = {k: results.means[v] for k, v in source.items()}
    totals = {}
    if (
        "num_rel" in means
        and ev.target is not None
        and prof is not None
        and prof.average_over == "qrels"
    ):
        # -c: trec_eval's all line counts every judgment with grade > 0 of every judged query,
        # whatever -l, -J, -M or -Z say (m_num_rel.c, te_calc_avg_num_rel runs after the z)
        totals["num_rel"] = means["num_rel"] = float((ev.target.qrels.arrays()[3] > 0).sum())
    if zscores is not None:
        aggregates = {k: "total" if k in totals else how for k, how in _aggregates(entries).items()}
        values, means = standardise(
            aggregates, values, results.query_ids, zscores, totals=totals, unevaluated=missing
        )
    return format_trec_eval(
        entries,
        values,
        means,
        results.query_ids,
        printed_queries=printed,
        runid=(ev.run.name if ev.run is not None else None) or "",
        relstring=rel,
        zscores=zscores is not None,
    )


def _known_profile(name: str) -> Profile | None:
    """The profile named *name*, or None for a :class:`Profile` built by the caller and never
    registered (its name finds nothing)."""
    try:
        return get_profile(name)
    except UnknownNameError:
        return None


def _aggregates(entries: Sequence[TrecEntry]) -> dict[str, str]:
    """``{name: how its mean is taken}`` of trec_eval's numeric entries (for ``-Z``)."""
    out = {}
    for e in entries:
        if e.text == "prefs":
            out[e.key] = "sum" if e.key in PREFS_COUNTS else "mean"
        elif e.measure is not None:
            family = e.measure.family
            out[e.key] = "count" if family == "NumQ" else get_family(family).aggregate
    return out


def _group_table(groups: Mapping[str, Results], combined: Results) -> Summary:
    """The per-group means and their mean (the reported score), one row each."""
    rows = {g: dict(r.means) for g, r in groups.items()}
    rows[f"mean of {len(groups)}"] = dict(combined.means)
    return Summary(f"per group ({len(groups)}; the score is their unweighted mean)", rows, 4)


def _target(dataset: str | Path | Dataset, corpus: Any, options: dict) -> Target:
    if corpus is None:
        return load_target(dataset, **options)
    if isinstance(dataset, Dataset) or not is_dataset_id(str(dataset)):
        raise InputError(
            f"a passage corpus applies to span-judged datasets given by id (e.g. fastbook), "
            f"not {str(getattr(dataset, 'id', dataset))!r}"
        )
    family = family_of(str(dataset))
    passages = corpus if isinstance(corpus, Corpus) else JsonlCorpus(corpus)
    judged = family.judge_corpus(str(dataset), passages)
    return Target(
        judged.qrels,
        default_measures=family.default_measures,
        default_profile=family.default_profile,
        family=family,
        notes=list(judged.notes),
    )


def compare_run_files(
    dataset: str | Path | Dataset,
    runs: Sequence[str | Path],
    measures: Sequence[str] | None = None,
    profile: str | None = None,
    *,
    baseline: str | int | None = None,
    options: Mapping[str, Any] | None = None,
    trailing: str = "error",
    duplicates: str | None = None,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
    **compare_options: Any,
) -> ComparisonReport:
    """Compare run files on a dataset or judgments file, as ``nuggetbench compare`` does.

    Args:
        dataset: as :func:`evaluate_dataset` (its measures, profile and candidate pools apply).
        runs: run files (TREC, JSON, BIRCO rank files); each is named by its file stem (the
            whole path when two stems are equal).
        measures, profile: as :func:`evaluate_dataset`.
        baseline: a run's name, or its 1-based position (as text or int); default the first.
        options: dataset loader options.
        trailing, duplicates: how run files are read, as :func:`evaluate_dataset` (a TREC
            file's rank column is kept for the ``ndeval`` profile).
        queries: compare on some queries only, as :func:`evaluate_dataset` (a note in the
            report's ``notes`` says which).
        **compare_options: passed to :func:`nuggetbench.compare.compare` (``test``,
            ``correction``, ``alpha``, ``ci``, ``n_resamples``, ``seed``).

    Returns:
        A :class:`~nuggetbench.compare.ComparisonReport`.

    Raises:
        InputError: fewer than two runs; and as :func:`evaluate_dataset`.
    """
    subset = query_subset(queries)
    target = load_target(dataset, **dict(options or {})).subset(subset, what=str(dataset))
    loaded: dict[str, Run] = {}
    for path in runs:
        check_recorded_dataset(target.dataset, Path(path))
        name = Path(path).stem
        if name in loaded:
            name = str(path)
        run = read_run(path, name=name, keep_rank=True, trailing=trailing, duplicates=duplicates)
        loaded[name] = target.restrict_run(run)
    baseline = baseline_at(baseline, list(loaded))  # a 1-based position (0 is refused) or name
    report = compare_runs(
        target.qrels,
        loaded,
        measure_keys(list(measures or target.default_measures)),
        profile=profile or target.default_profile,
        doc_filter=target.doc_filter,
        baseline=baseline,
        **compare_options,
    )
    report.notes[:0] = [n for n in target.notes if n.startswith("queries: ")]
    return report
