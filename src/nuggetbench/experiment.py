"""``run_experiment``: retrieve on a dataset with several retrievers, score, and save everything.

This is the library function behind ``nuggetbench run``. Every run is written as a TREC file as
soon as it exists, and ``results.json`` is rewritten (atomically) after each system, so an
interrupted experiment loses nothing that finished.

Saving never costs the scores: a file that cannot be written (a full disk) is
recorded in :attr:`Experiment.unsaved` (path and reason; its partial file is removed by the atomic
writer) and the experiment goes on; :meth:`Experiment.unsaved_message` says what could not be saved
and where (``nuggetbench run`` prints the scores, then that message, and exits non-zero). An
output folder that cannot be created or locked at all (read-only, under a file) is an ``OSError``
before any work, and one that another process is writing an ``InputError``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nuggetbench import home as _home
from nuggetbench._atomic import atomic_write, copy_file, fault_point
from nuggetbench._outfolder import (
    folder_lock,
    read_results_file,
    relative_run_file,
    reuse,
    run_file,
    staged,
)
from nuggetbench._version import __version__
from nuggetbench.compare import ComparisonReport, compare
from nuggetbench.data import Run, read_trec_run, write_run
from nuggetbench.data.checks import Finding, check_corpus_coverage, unlogged
from nuggetbench.data.subset import QuerySubset, query_subset
from nuggetbench.datasets import Dataset, load_dataset
from nuggetbench.errors import InputError
from nuggetbench.jsonl import json_text
from nuggetbench.measures import Results, get_profile, plain_measures, score
from nuggetbench.measures.compute import restrict_common
from nuggetbench.measures.depth import depth_of, note_pools
from nuggetbench.measures.results import query_findings
from nuggetbench.retrieval import CachedRetriever, parse_retriever, search, uses_objective
from nuggetbench.retrieval.compose.caching import UNUSABLE, failed_answers, raise_if_empty
from nuggetbench.retrieval.distributed import ray_address, use_ray
from nuggetbench.retrieval.spec import baseline_label, public_spec, system_labels
from nuggetbench.store import spec_file_name
from nuggetbench.text.analyzers import adapt_to_language

log = logging.getLogger(__name__)


@dataclass
class SystemOutcome:
    """One retriever's run and scores.

    Attributes:
        spec: the retriever spec as given (``bm25:k1=0.9,b=0.4``); the system's label (its
            key in ``Experiment.systems``) is its ``name=`` or a short form of the spec.
        run: the run (after the dataset's declared post-processing, e.g. self-hit removal).
        results: a :class:`nuggetbench.measures.Results`.
        run_path: where the TREC file was written (``None`` without an output folder).
        seconds: wall-clock seconds of ``index`` and ``search``.
    """

    spec: str
    run: Run | None
    results: Results
    run_path: Path | None = None
    seconds: dict = field(default_factory=dict)
    run_metadata: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<SystemOutcome {self.spec!r}: {self.results!r}>"


@dataclass(repr=False)
class Experiment:
    """Everything ``run_experiment`` produced (or :meth:`load` read back from its folder).

    Attributes:
        dataset_id, measures, profile, k: what was run (``k`` ``None``: a saved comparison of
            runs of other or unknown depths).
        systems: ``{name: SystemOutcome}`` in the order run.
        outdir: the folder of ``results.json`` and ``runs/`` (``None``: in memory only).
        provenance: dataset fingerprint, version, times, and each system's full spec.
        notes: warnings to show with the results.
        baseline: the system the others are compared with (default: the first).
    """

    dataset_id: str
    measures: list[str]
    profile: str
    k: int | None
    systems: dict[str, SystemOutcome] = field(default_factory=dict)
    outdir: Path | None = None
    provenance: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    baseline: str | None = None

    def __repr__(self) -> str:
        where = f"; {self.outdir}" if self.outdir else ""
        return (
            f"<Experiment {self.dataset_id!r}: {len(self.systems)} system(s) x "
            f"{len(self.measures)} measure(s), {self.n_queries} queries, profile "
            f"{self.profile!r}{where}>"
        )

    @classmethod
    def load(cls, path: str | Path, *, runs: bool = True) -> Experiment:
        """Read an experiment back from its folder (or its ``results.json``).

        Args:
            path: the folder ``nuggetbench run -o`` or ``nuggetbench compare -o`` wrote, or its
                ``results.json`` (a comparison's ``k`` is ``None`` when its runs' depths differ
                or are not known; its runs are read where they are, when they are there).
            runs: also read each system's run file (``SystemOutcome.run``; ``None`` when the
                file is gone or *runs* is false).

        Raises:
            InputError: no ``results.json``, an invalid one (file and field named), or a run
                file that is not the run scored (its fingerprint differs from the recorded one).
        """
        data, file = read_results_file(path)  # validated: one-line errors naming the field
        try:
            exp = cls(
                dataset_id=str(data["dataset"]),
                measures=[str(m) for m in data["measures"]],
                profile=str(data["profile"]),
                k=None if data.get("k") is None else int(data["k"]),  # compare -o: runs' own
                outdir=file.parent,
                provenance=dict(data.get("provenance") or {}),
                notes=list(data.get("notes") or []),
                baseline=data.get("baseline") or (data.get("comparison") or {}).get("baseline"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{file}: not an experiment's results.json ({exc!r})") from exc
        for name, entry in data["systems"].items():
            exp.systems[name] = _load_outcome(name, entry, file.parent, runs)
        return exp

    def to_pandas(self):
        """A long DataFrame with columns ``system, query_id, measure, value``: every per-query
        value of every system, the shape of :meth:`nuggetbench.Results.to_pandas` (the means
        are ``df.groupby(["system", "measure"]).value.mean()`` for mean-aggregated measures)."""
        import pandas as pd

        frames = []
        for name, s in self.systems.items():
            for m in self.measures:
                frames.append(
                    pd.DataFrame(
                        {
                            "system": name,
                            "query_id": s.results.query_ids,
                            "measure": m,
                            "value": s.results.per_query[m],
                        }
                    )
                )
        if not frames:
            return pd.DataFrame(columns=["system", "query_id", "measure", "value"])
        return pd.concat(frames, ignore_index=True)

    unsaved: dict[str, str] = field(default_factory=dict)

    def unsaved_message(self) -> str | None:
        """What could not be saved, where and why, and what to do; ``None`` when all was saved."""
        if not self.unsaved:
            return None
        items = "; ".join(f"{path} ({why})" for path, why in self.unsaved.items())
        n = len(self.unsaved)
        return (
            f"the scores were computed (shown above) but {n} output file{'s' if n > 1 else ''} "
            f"could not be saved: {items}. Free space in {self.outdir} or fix its permissions "
            "(or save elsewhere with -o DIR or NUGGETBENCH_HOME) and run again"
        )

    def system(self, name: str) -> SystemOutcome:
        """One system's outcome, by its label (a key of :attr:`systems`) or by the spec it was
        run with (a spec's ``base_url`` / ``api_key_env`` may be given; they are never stored).

        Raises:
            KeyError: no such system (the labels are named).
        """
        if name in self.systems:
            return self.systems[name]
        wanted = {name, public_spec(name)}
        full = self.provenance.get("systems", {})
        for label, outcome in self.systems.items():
            if outcome.spec in wanted or full.get(label) in wanted:
                return outcome
        raise KeyError(
            f"no system {name!r} in this experiment; its systems: {', '.join(self.systems)}"
        )

    @property
    def n_queries(self) -> int:
        """Queries evaluated (those of the first system's results)."""
        return len(next(iter(self.systems.values())).results.query_ids) if self.systems else 0

    def findings(self) -> list[Finding]:
        """Warnings to show people: the experiment's notes, systems with unusable LLM answers
        and the run queries that have no judgments (ignored)."""
        out = [Finding("warning", "experiment_note", note) for note in self.notes]
        out += [
            Finding("warning", "llm_failures", f"{n}: {k} {UNUSABLE}")
            for n, s in self.systems.items()
            if (k := failed_answers(s.run.metadata if s.run is not None else s.run_metadata))
        ]
        if self.systems:
            first = next(iter(self.systems.values())).results
            out += [
                f
                for f in query_findings(first, get_profile(self.profile))
                if f.kind == "run_only_queries"
            ]
        return out

    def means(self) -> dict[str, dict[str, float]]:
        """``{system label: {measure: mean}}``."""
        return {
            name: {m: float(s.results.means[m]) for m in self.measures}
            for name, s in self.systems.items()
        }

    def comparison(self, *, baseline: str | None = None, **options: Any) -> ComparisonReport:
        """Paired comparison of the systems (first one is the baseline by default): bootstrap
        CIs of every mean and difference, paired t-test, Holm correction with more than two
        systems. Under ``average_over: common`` (recorded by :func:`run_experiment`) the
        results already hold only the queries every system has, and the legend says how many
        were left out. Returns a :class:`nuggetbench.compare.ComparisonReport`."""
        report = compare(
            {name: s.results for name, s in self.systems.items()},
            baseline=baseline or self.baseline or next(iter(self.systems)),
            measures=self.measures,
            **{"average_over": self.provenance.get("average_over", "qrels"), **options},
        )
        report.left_out = max(report.left_out, int(self.provenance.get("left_out") or 0))
        return report

    def to_dict(self, *, per_query: bool = True) -> dict:
        """A JSON-ready description: provenance, means and (optionally) per-query values."""
        systems = {}
        for name, s in self.systems.items():
            entry = s.results.to_dict() if per_query else {"means": dict(s.results.means)}
            entry["run_file"] = (
                relative_run_file(s.run_path, self.outdir or Path.cwd()) if s.run_path else None
            )
            entry["seconds"] = s.seconds
            entry["depth"] = depth_of(s.results)  # the most documents it ranked for a query
            entry["run_metadata"] = _jsonable(
                s.run.metadata if s.run is not None else s.run_metadata
            )
            systems[name] = entry
        return {
            "dataset": self.dataset_id,
            "measures": self.measures,
            "profile": self.profile,
            "k": self.k,
            "provenance": self.provenance,
            "notes": self.notes,
            "baseline": self.baseline,
            "systems": systems,
            "comparison": _comparison_dict(self),
        }


def _comparison_dict(exp: Experiment) -> dict | None:
    """The comparison for ``results.json``; a comparison that cannot be made (one query) is
    recorded as ``{"error": why}`` rather than losing the scores."""
    if len(exp.systems) < 2:
        return None
    try:
        return exp.comparison().to_dict()
    except InputError as exc:
        return {"error": str(exc)}


def _load_outcome(name: str, entry: dict, folder: Path, read_runs: bool) -> SystemOutcome:
    """One system of a saved experiment; its run is read when its file is there (a relative
    path is the folder's own: :func:`nuggetbench._outfolder.run_file`) and must be the run
    scored (the recorded fingerprint)."""
    results = Results.from_dict(entry)
    run_path = run_file(folder, entry["run_file"]) if entry.get("run_file") else None
    metadata = dict(entry.get("run_metadata") or {})
    run = None
    if read_runs and run_path is not None and run_path.exists():
        run = read_trec_run(run_path, name=name).with_name(name, metadata)
        recorded = (entry.get("provenance") or {}).get("run_fingerprint")
        if recorded and recorded != run.fingerprint():
            raise InputError(
                f"{run_path}: this run (fingerprint {run.fingerprint()}) is not the one scored "
                f"in {folder / 'results.json'} for {name!r} ({recorded}); it changed since, or "
                "is another folder's: keep each folder's runs/ beside its results.json"
            )
    return SystemOutcome(name, run, results, run_path, dict(entry.get("seconds") or {}), metadata)


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


#: A file-name-safe form of a retriever spec (``runs/<slug>.trec``).
slug = spec_file_name


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
    existing: str = "error",
    baseline: str | None = None,
    ray: str | None = None,
    average_over: str = "qrels",
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
) -> Experiment:
    """Retrieve with each retriever spec, apply the dataset's policies, save and score the runs.

    Args:
        dataset: a :class:`nuggetbench.datasets.Dataset` (or an id, loaded with defaults).
        retrievers: retriever specs (``bm25``, ``bm25:k1=0.9,b=0.4``, ...), at least one; a
            spec's ``base_url`` / ``api_key_env`` options are left out of the names saved
            (:func:`~nuggetbench.retrieval.spec.public_spec`).
        measures: measure strings; default: the dataset's ``default_measures``.
        k: retrieval depth per query.
        profile: semantics profile name; default: the dataset's ``default_profile``.
        outdir: folder for ``runs/<spec>.trec`` and ``results.json`` (created); ``None`` keeps
            everything in memory. Files that cannot be written are listed in
            :attr:`Experiment.unsaved` (never raised: the scores are kept); a folder that cannot
            be created or locked at all is an ``OSError`` before any work.
        with_objective: pass the dataset's task objective to retrievers that use instructions
            (BIRCO's "+O" setting; ``Retriever.uses_objective``).
        show_progress: progress bars on indexing and search.
        cache_runs: serve each retriever's run from the run cache (home folder) when the same
            retriever, corpus, queries, filter and objective were searched before at the same or
            a greater depth (several specs sharing a first stage reuse it).
        existing: what to do when *outdir* already holds an experiment: ``"error"`` (default:
            refuse, before any work; an interrupted experiment of the same systems and settings
            is resumed instead), ``"overwrite"`` (build the new experiment beside it and commit
            it in one step once every file is written, then delete the files the old
            ``results.json`` names: :func:`nuggetbench._outfolder.staged`) or ``"append"``
            (add these systems to it; dataset, measures, profile and depth must match, and a
            system already there is an error). The folder is locked (another kind of output
            refused: :func:`nuggetbench._outfolder.folder_lock`); ``results.json`` names each
            run file before it is written and records ``finished`` when every system is done.
        baseline: the system the comparison measures the others against: a spec (or ``name=``
            label) given, or its 1-based position; default the first.
        average_over: ``"qrels"`` (a query a run lacks scores 0) or ``"common"``: the results
            kept on the queries every run has (:func:`_average`; means, comparison, file).
        queries: only these queries, as ``load_dataset``'s *queries* (``provenance["queries"]``).

    Returns:
        An :class:`Experiment` with a :class:`SystemOutcome` per retriever.

    Raises:
        InputError: no retriever, a duplicate spec, a bad measure/spec string, or an *outdir*
            holding an experiment that *existing* does not allow, or an *outdir* another
            process is writing (all before any work).
        OSError: *outdir* cannot be created or locked (read-only, not a folder; before any work).
    """
    dataset, measures, parsed = _prepare(
        dataset, retrievers, measures, cache_runs, average_over, queries
    )
    public = [public_spec(spec) for spec in retrievers]  # what may be printed and saved
    labels = system_labels(public)
    exp = _new_experiment(dataset, measures, profile or dataset.default_profile, k, outdir)
    command = f"nuggetbench run {dataset.id} " + " ".join(f"-r {p}" for p in public)
    lock = folder_lock(exp.outdir, command, kind="run") if exp.outdir else None
    with lock or contextlib.nullcontext():
        old = reuse(exp, existing, labels) if exp.outdir is not None else None
        _plan(exp, dataset, retrievers, labels, public, baseline, with_objective)
        objective = dataset.objective if with_objective else None
        with staged(exp, old), use_ray(ray_address(ray)):  # --overwrite: committed when whole
            _save(exp)  # the plan first: results.json names every run file before it exists
            _run_all(exp, dataset, labels, parsed, objective, show_progress)
            _average(exp, average_over)
            exp.provenance["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            _save(exp)
    return exp


def _prepare(dataset, retrievers, measures, cache_runs, average_over, queries) -> tuple:
    """``(dataset, measures, [(spec, retriever)])`` loaded, restricted to the query subset,
    parsed and checked before any work.

    Raises:
        InputError: no retriever, a duplicate spec, a bad measure/spec string, an unknown
            *average_over*, query ids that are not the dataset's.
    """
    dataset = load_dataset(dataset) if isinstance(dataset, str) else dataset
    dataset = dataset.subset(query_subset(queries))
    if not retrievers:
        raise InputError("give at least one retriever (-r bm25)")
    if len(set(retrievers)) != len(retrievers):
        raise InputError("the same retriever spec is given twice; give each once")
    if average_over not in ("qrels", "common"):
        raise InputError(f"average_over must be qrels or common, got {average_over!r}")
    measures = plain_measures(measures or dataset.default_measures)
    return dataset, measures, _retrievers(retrievers, dataset, cache_runs=cache_runs)


def _save(exp: Experiment) -> None:
    """Write ``results.json`` into the output folder (if any); a failure is recorded in
    ``exp.unsaved``."""
    path = exp.outdir / "results.json" if exp.outdir else None
    if path is not None and _saving(exp, path, save_experiment, exp) is not None:
        fault_point("save.results-written")


def _plan(exp, dataset, retrievers, labels, public, baseline, with_objective) -> None:
    """Record the systems to run (provenance, baseline) before any work."""
    exp.provenance["systems"] = {
        **exp.provenance.get("systems", {}),
        **dict(zip(labels, public)),
    }
    exp.baseline = baseline_label(
        baseline,
        [*exp.systems, *labels],
        aliases={**dict(zip(retrievers, labels)), **dict(zip(public, labels))},
    )
    exp.provenance["with_objective"] = with_objective
    if with_objective and not dataset.objective:
        exp.notes.append(f"{dataset.id} declares no task objective; --with-objective had no effect")


def _run_all(exp, dataset, labels, parsed, objective, show_progress) -> None:
    """Retrieve with each system in turn, saving ``results.json`` after each; then note the
    judged documents missing from the corpus (as ``evaluate`` warns)."""
    for label, (spec, retriever) in zip(labels, parsed):
        if label in exp.systems:  # a resumed experiment: finished before it was interrupted
            continue
        if objective and not uses_objective(retriever):
            exp.notes.append(f"{label} does not take instructions; the task objective was not used")
        use = objective if uses_objective(retriever) else None
        outcome = _run_one(exp, dataset, label, retriever, use, show_progress)
        outcome.spec = spec
        exp.systems[label] = outcome
        _save(exp)
    with unlogged():  # said once, as a note
        found = check_corpus_coverage(dataset.qrels, dataset.corpus, metadata=dataset.metadata)
    for finding in found:
        if finding.message not in exp.notes:
            exp.notes.append(finding.message)


def _average(exp: Experiment, average_over: str) -> None:
    """``"common"``: every system's results kept on the queries every system's run has
    (:func:`~nuggetbench.measures.compute.restrict_common`), recorded in the provenance."""
    if average_over == "common":
        kept, left_out = restrict_common(
            {n: s.results for n, s in exp.systems.items()}, exp.profile
        )
        for name, outcome in exp.systems.items():
            outcome.results = kept[name]
        exp.provenance.update(average_over="common", left_out=left_out)


def _saving(exp: Experiment, path: Path, write: Any, *args: Any, **kwargs: Any) -> Any:
    """``write(*args, **kwargs)``; an ``OSError`` is recorded in ``exp.unsaved[path]`` instead of
    raised, and ``None`` returned. A later success clears the record."""
    try:
        out = write(*args, **kwargs)
    except OSError as exc:
        why = f"{exc.strerror or exc}" + (f" [errno {exc.errno}]" if exc.errno else "")
        exp.unsaved[str(path)] = why
        log.info("could not save %s: %s", path, why)  # reported once, by unsaved_message()
        return None
    exp.unsaved.pop(str(path), None)
    return out


def _retrievers(
    specs: Sequence[str], dataset: Dataset, *, cache_runs: bool
) -> list[tuple[str, Any]]:
    """``(spec, retriever)`` per spec: parsed, adapted to the dataset's language (unless the spec
    names an analyzer), and wrapped in the run cache."""
    parsed = [(public_spec(spec), parse_retriever(spec)) for spec in specs]
    if len({spec for spec, _ in parsed}) != len(parsed):
        raise InputError(
            "two retriever specs differ only in base_url or api_key_env; give each endpoint "
            "its own run (those options are never written to the results)"
        )
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
        "dataset_options": _jsonable(dataset.options),
        "nuggetbench_version": __version__,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "k": k,
        "profile": profile,
        "remove_self_hits": bool(dataset.remove_self_hits),
    }
    if dataset.query_subset is not None:
        exp.provenance["queries"] = dataset.query_subset
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
    searched = run
    run = dataset.postprocess_run(run)
    raise_if_empty(run, spec, dataset, searched.n_entries)  # why, not only "has no entries"
    # a TREC file that already holds exactly this run with this tag (the run cache's) is copied
    held = getattr(index, "run_file", None)
    source = held[0] if held and run is searched and held[1] == slug(spec) else None
    full = exp.provenance.get("systems", {}).get(spec, spec)
    run = run.with_name(spec, {**run.metadata, "retriever": full, "k": exp.k})
    run_path = None
    if exp.outdir:
        path = exp.outdir / exp.provenance["run_files"][spec]  # never another system's file
        if source is not None:
            run_path = _saving(exp, path, copy_file, source, path)
        else:
            run_path = _saving(exp, path, write_run, run, path, tag=slug(spec))
        if run_path is not None:
            fault_point("save.run-written")
    results = score(dataset.qrels, run, exp.measures, profile=exp.profile)
    note_pools(results, dataset.doc_filter)  # ranking a whole pool is not a cut depth
    # a cached retriever builds its index inside the first search that misses the cache
    built = float(getattr(index, "index_seconds", 0.0))
    seconds = {"index": round(t1 - t0 + built, 3), "search": round(t2 - t1 - built, 3)}
    return SystemOutcome(spec, run, results, run_path, seconds)


def save_experiment(exp: Experiment) -> Path:
    """Write ``results.json`` (means, per-query values, provenance) atomically."""
    assert exp.outdir is not None
    path = exp.outdir / "results.json"
    with atomic_write(path) as fh:
        fh.write(json_text(_jsonable(exp.to_dict()), indent=1, default=str))
    return path
