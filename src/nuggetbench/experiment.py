"""``run_experiment``: retrieve on a dataset with several retrievers, score, and save everything.

This is the library function behind ``nuggetbench run``. Every run is written as a TREC file as
soon as it exists, and ``results.json`` is rewritten (atomically) after each system, so an
interrupted experiment loses nothing that finished.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import home as _home
from ._atomic import atomic_write
from ._version import __version__
from .compare import ComparisonReport, compare
from .data import Run, write_run
from .datasets import Dataset, load_dataset
from .errors import InputError
from .measures import Results, evaluate, get_profile, measure_keys
from .measures.checks import Finding, query_findings
from .retrieval import CachedRetriever, parse_retriever, search, uses_objective
from .text.analyzers import adapt_to_language

log = logging.getLogger(__name__)


@dataclass
class SystemOutcome:
    """One retriever's run and scores.

    Attributes:
        spec: the retriever spec as given (``bm25:k1=0.9,b=0.4``).
        run: the run (after the dataset's declared post-processing, e.g. self-hit removal).
        results: a :class:`nuggetbench.measures.Results`.
        run_path: where the TREC file was written (``None`` without an output folder).
        seconds: wall-clock seconds of ``index`` and ``search``.
    """

    spec: str
    run: Run
    results: Results
    run_path: Path | None = None
    seconds: dict = field(default_factory=dict)


@dataclass
class Experiment:
    """Everything ``run_experiment`` produced."""

    dataset_id: str
    measures: list[str]
    profile: str
    k: int
    systems: dict[str, SystemOutcome] = field(default_factory=dict)
    outdir: Path | None = None
    provenance: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def n_queries(self) -> int:
        """Queries evaluated (those of the first system's results)."""
        return len(next(iter(self.systems.values())).results.query_ids) if self.systems else 0

    def findings(self) -> list[Finding]:
        """Warnings to show people: the experiment's notes (an objective a retriever cannot
        take...) and the run queries that have no judgments (ignored)."""
        out = [Finding("warning", "experiment_note", note) for note in self.notes]
        if self.systems:
            first = next(iter(self.systems.values())).results
            out += [
                f
                for f in query_findings(first, get_profile(self.profile))
                if f.kind == "run_only_queries"
            ]
        return out

    def means(self) -> dict[str, dict[str, float]]:
        """``{retriever spec: {measure: mean}}``."""
        return {
            name: {m: float(s.results.means[m]) for m in self.measures}
            for name, s in self.systems.items()
        }

    def comparison(self, *, baseline: str | None = None, **options: Any) -> ComparisonReport:
        """Paired comparison of the systems (first one is the baseline by default): bootstrap
        CIs of every mean and difference, paired t-test, Holm correction with more than two
        systems. Returns a :class:`nuggetbench.compare.ComparisonReport`."""
        return compare(
            {name: s.results for name, s in self.systems.items()},
            baseline=baseline or next(iter(self.systems)),
            measures=self.measures,
            **options,
        )

    def to_dict(self, *, per_query: bool = True) -> dict:
        """A JSON-ready description: provenance, means and (optionally) per-query values."""
        systems = {}
        for name, s in self.systems.items():
            entry = s.results.to_dict() if per_query else {"means": dict(s.results.means)}
            entry["run_file"] = str(s.run_path) if s.run_path else None
            entry["seconds"] = s.seconds
            entry["run_metadata"] = _jsonable(s.run.metadata)
            systems[name] = entry
        return {
            "dataset": self.dataset_id,
            "measures": self.measures,
            "profile": self.profile,
            "k": self.k,
            "provenance": self.provenance,
            "notes": self.notes,
            "systems": systems,
            "comparison": self.comparison().to_dict() if len(self.systems) > 1 else None,
        }


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        return json.loads(json.dumps(value, default=str))


def default_outdir(dataset: Dataset) -> Path:
    """``$NUGGETBENCH_HOME/outputs/<dataset>/<YYYYmmdd-HHMMSS>``: where ``nuggetbench run`` saves
    an experiment when no folder is named."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return _home.home() / "outputs" / slug(dataset.id) / stamp


def slug(spec: str) -> str:
    """A file-name-safe form of a retriever spec."""
    text = re.sub(r"[^A-Za-z0-9._=,+-]+", "_", spec).strip("_")
    return text[:120] or "run"


def run_experiment(
    dataset: Dataset | str,
    retrievers: Sequence[str],
    *,
    measures: Sequence[str] | None = None,
    k: int = 1000,
    profile: str | None = None,
    outdir: str | Path | None = None,
    with_objective: bool = False,
    show_progress: bool = False,
    cache_runs: bool = True,
) -> Experiment:
    """Retrieve with each retriever spec, apply the dataset's policies, save and score the runs.

    Args:
        dataset: a :class:`nuggetbench.datasets.Dataset` (or an id, loaded with defaults).
        retrievers: retriever specs (``bm25``, ``bm25:k1=0.9,b=0.4``, ...), at least one.
        measures: measure strings; default: the dataset's ``default_measures``.
        k: retrieval depth per query.
        profile: semantics profile name; default: the dataset's ``default_profile``.
        outdir: folder for ``runs/<spec>.trec`` and ``results.json`` (created); ``None`` keeps
            everything in memory.
        with_objective: pass the dataset's task objective to retrievers that use instructions
            (BIRCO's "+O" setting; ``Retriever.uses_objective``).
        show_progress: progress bars on indexing and search.
        cache_runs: serve each retriever's run from the run cache under the home folder when
            the same retriever, corpus, queries, filter and objective were searched before at the
            same or a greater depth (so several specs sharing a first stage reuse it).

    Returns:
        An :class:`Experiment` with a :class:`SystemOutcome` per retriever.

    Raises:
        InputError: no retriever, a duplicate spec, or a bad measure/spec string (before any work).
    """
    if isinstance(dataset, str):
        dataset = load_dataset(dataset)
    if not retrievers:
        raise InputError("give at least one retriever (-r bm25)")
    if len(set(retrievers)) != len(retrievers):
        raise InputError("the same retriever spec is given twice; give each once")
    measures = measure_keys(list(measures or dataset.default_measures))  # fails before any work
    parsed = _retrievers(retrievers, dataset, cache_runs=cache_runs)  # fail before any work
    exp = _new_experiment(dataset, measures, profile or dataset.default_profile, k, outdir)
    exp.provenance["with_objective"] = with_objective
    objective = dataset.objective if with_objective else None
    if with_objective and not objective:
        exp.notes.append(f"{dataset.id} declares no task objective; --with-objective had no effect")
    for spec, retriever in parsed:
        if objective and not uses_objective(retriever):
            exp.notes.append(f"{spec} does not take instructions; the task objective was not used")
        use = objective if uses_objective(retriever) else None
        exp.systems[spec] = _run_one(exp, dataset, spec, retriever, use, show_progress)
        if exp.outdir:
            save_experiment(exp)
    exp.provenance["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if exp.outdir:
        save_experiment(exp)
    return exp


def _retrievers(
    specs: Sequence[str], dataset: Dataset, *, cache_runs: bool
) -> list[tuple[str, Any]]:
    """``(spec, retriever)`` per spec: parsed, adapted to the dataset's language (unless the spec
    names an analyzer), and wrapped in the run cache."""
    parsed = [(spec, parse_retriever(spec)) for spec in specs]
    language = dataset.metadata.get("language")
    if language:
        parsed = [(spec, adapt_to_language(r, language)) for spec, r in parsed]
    if cache_runs:
        parsed = [(spec, CachedRetriever(r)) for spec, r in parsed]
    return parsed


def _new_experiment(
    dataset: Dataset, measures: list[str], profile: str, k: int, outdir: str | Path | None
) -> Experiment:
    exp = Experiment(
        dataset_id=dataset.id,
        measures=measures,
        profile=profile,
        k=k,
        outdir=Path(outdir) if outdir else None,
    )
    exp.provenance = {
        "dataset": dataset.id,
        "dataset_fingerprint": dataset.fingerprint(),
        "split": dataset.split,
        "nuggetbench_version": __version__,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "k": k,
        "profile": profile,
        "remove_self_hits": bool(dataset.remove_self_hits),
    }
    if exp.outdir:
        (exp.outdir / "runs").mkdir(parents=True, exist_ok=True)
    return exp


def _run_one(
    exp: Experiment,
    dataset: Dataset,
    spec: str,
    retriever: Any,
    objective: str | None,
    show_progress: bool,
) -> SystemOutcome:
    """Index, search (with the dataset's candidate pools), post-process, save and score."""
    log.info("retrieving with %s", spec)
    t0 = time.perf_counter()
    index = retriever.index(dataset.corpus, show_progress=show_progress)
    t1 = time.perf_counter()
    run = search(
        index,
        dataset.queries,
        exp.k,
        doc_filter=dataset.doc_filter,
        show_progress=show_progress,
        objective=objective,
    )
    t2 = time.perf_counter()
    run = dataset.postprocess_run(run)
    run = run.with_name(spec, {**run.metadata, "retriever": spec, "k": exp.k})
    run_path = None
    if exp.outdir:
        run_path = write_run(run, exp.outdir / "runs" / f"{slug(spec)}.trec", tag=slug(spec))
    results = evaluate(dataset.qrels, run, exp.measures, profile=exp.profile)
    seconds = {"index": round(t1 - t0, 3), "search": round(t2 - t1, 3)}
    return SystemOutcome(spec, run, results, run_path, seconds)


def save_experiment(exp: Experiment) -> Path:
    """Write ``results.json`` (means, per-query values, provenance) atomically."""
    assert exp.outdir is not None
    path = exp.outdir / "results.json"
    with atomic_write(path) as fh:
        json.dump(_jsonable(exp.to_dict()), fh, indent=1, default=str)
    return path
