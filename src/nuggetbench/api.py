"""The functions ``import nuggetbench as nb`` gives, taking what users already hold.

``nb.evaluate`` scores qrels and a run given as our own values, plain dicts (pytrec_eval, ranx),
pandas DataFrames (ir_measures, PyTerrier), ir_measures records, files, a :class:`Dataset` or a
dataset id, on measures given as strings or ir_measures measure objects; everything is converted
here, at the edge, and the measures layer sees only :class:`Qrels`, :class:`Run` and measure
strings. ``nb.read_qrels`` / ``nb.read_run`` are the format-detecting readers (the older names
``load_qrels`` / ``load_run`` are aliases). ``nb.compare_runs`` takes what ``nb.evaluate`` takes,
several runs at once. ``nb.read_run`` *is* :func:`nuggetbench.data.read_run`
(one name, one object); ``nb.read_qrels`` also reads the judgments files of the dataset families
(a FreshStack queries file), which the data layer below the families cannot.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nuggetbench.compare import ComparisonReport
from nuggetbench.compare.runs import compare_runs as _compare_runs
from nuggetbench.data import Qrels, Run, read_run
from nuggetbench.data.checks import check_findings, unlogged
from nuggetbench.data.convert import as_qrels, as_run
from nuggetbench.datasets import Dataset, Target, is_dataset_id, load_target
from nuggetbench.errors import EvaluationWarning, InputError
from nuggetbench.measures import Measure, Profile, Results, get_profile
from nuggetbench.measures import score as _evaluate
from nuggetbench.measures.compute import measure_keys
from nuggetbench.measures.results import scoring_findings

__all__ = ["compare_runs", "evaluate", "read_qrels", "read_run", "load_qrels", "load_run"]


def read_qrels(path: str | Path, *, name: str | None = None) -> Qrels:
    """Read judgments from a file, whatever its format.

    Formats (detected from the content): TREC qrels (``qid iter docid grade``), BEIR tsv (with
    its ``query-id corpus-id score`` header), JSON ``{qid: {docid: grade}}``, ndeval / TREC Web
    diversity qrels (``topic subtopic docno judgment``; nugget-level, see
    :func:`nuggetbench.data.formats.diversity.sniff_nugget_qrels` for how they are told apart) and a
    FreshStack queries file (JSONL with ``nuggets``). ``.gz`` TREC files are read transparently.

    Args:
        path: the file.
        name: a label for the qrels (default: the file name).

    Returns:
        :class:`Qrels`; nugget-level files carry their nugget judgments in ``qrels.nuggets``.

    Raises:
        InputError: the path does not exist or is a folder (load a dataset folder with
            ``nb.load_dataset``); FormatError / DuplicateError from the readers (file and line
            named).
    """
    path = Path(path)
    if not path.is_file():
        hint = " (a dataset folder: nb.load_dataset(path))" if path.is_dir() else ""
        raise InputError(f"qrels file {path} does not exist or is not a file{hint}")
    qrels = load_target(path).qrels
    if name is not None:
        qrels.name = name
    return qrels


#: Older names of the format-detecting readers, kept as aliases.
load_qrels = read_qrels
load_run = read_run


def evaluate(
    qrels: Any,
    run: Any,
    measures: Any = None,
    *,
    profile: str | Profile | None = None,
    checks: bool = True,
) -> Results:
    """Score *run* against *qrels* on *measures*; anything a Python user holds is accepted.

    Args:
        qrels: a :class:`Qrels`; ``{query_id: {doc_id: grade}}``; a DataFrame with ``query_id``
            (or ``qid``), ``doc_id`` (or ``docno``) and ``relevance`` (or ``label``) columns;
            ir_measures ``Qrel`` records; a judgments file path (:func:`read_qrels`); a
            :class:`Dataset`; or a dataset id (``"beir/scifact"``, loaded with defaults).
        run: a :class:`Run`; ``{query_id: {doc_id: score}}``; ``{query_id: [doc_id, ...]}`` best
            first; a DataFrame with query, doc and ``score`` columns; ir_measures ``ScoredDoc``
            records; or a run file path (:func:`read_run`; a TREC file's rank column is kept
            for the ``ndeval`` profile, as ``nuggetbench evaluate`` does).
        measures: measure strings (``"nDCG@10"``), :class:`Measure` values or ir_measures measure
            objects (``ir_measures.nDCG@10``), one or a list, or one string of several
            (``"nDCG@10 AP"``); default: the dataset's measures (``nDCG@10 R@100 RR@10 AP`` for
            plain qrels).
        profile: a profile name or value; default: the dataset's (``"trec_eval -c"`` for plain
            qrels). See :mod:`nuggetbench.measures.profiles`.
        checks: run the trap checks and warn their findings and the query-set ones (as
            ``nuggetbench evaluate`` prints them); ``False`` skips both (the checks take about
            as long as the scores on a large run: ``benchmarks/nb_evaluate_checks.py``).

    Returns:
        :class:`Results` (per-query values, means, provenance), exactly as
        :func:`nuggetbench.measures.compute` computes them.

    Warns:
        EvaluationWarning: each warning ``nuggetbench evaluate`` prints (one source:
            :func:`nuggetbench.measures.results.scoring_findings`): judged queries missing from
            the run (scored 0 or left out, as the profile says), run queries without judgments,
            and the trap checks' (ids that never match, a run outside the corpus, a rank column
            that contradicts the scores...).

    Raises:
        InputError: a value of an unsupported type or shape (the message lists the shapes taken).
        UnknownNameError, SpecError: an unknown dataset, measure or profile.
        FormatError, DatasetError: from the readers and loaders.
    """
    target = _target(qrels)
    texts = _measure_texts(measures) if measures is not None else list(target.default_measures)
    run_value = read_run(run, keep_rank=True) if isinstance(run, (str, Path)) else as_run(run)
    prof = get_profile(profile or target.default_profile or "trec_eval -c")
    if not checks:
        return _evaluate(target.qrels, run_value, texts, profile=prof)
    with unlogged():  # each finding is warned once, below
        found = check_findings(target.qrels, run_value, target.corpus, metadata=target.metadata)
    results = _evaluate(target.qrels, run_value, texts, profile=prof)
    for finding in scoring_findings(found, results, prof):
        if finding.is_warning:
            warnings.warn(finding.message, EvaluationWarning, stacklevel=2)
    return results


def compare_runs(
    qrels: Any,
    runs: Mapping[str, Any] | Sequence[Any],
    measures: Any = None,
    *,
    profile: str | Profile | None = None,
    **compare_options: Any,
) -> ComparisonReport:
    """Score several runs on *qrels* and compare them with paired tests and bootstrap intervals
    (:func:`nuggetbench.compare.runs.compare_runs`, what ``nuggetbench compare`` does).

    Args:
        qrels: anything :func:`evaluate` takes (our values, nested dicts, DataFrames,
            ir_measures records, a judgments file, a :class:`Dataset` or a dataset id; a
            dataset's candidate pools are checked as ``compare`` does).
        runs: ``{name: run}`` or a sequence of runs, each anything :func:`evaluate` takes as a
            run (a :class:`Run`, nested dicts, ranked lists, a DataFrame, ir_measures records, a
            run file path); a sequence's runs are named by ``run.name`` or the file's stem.
        measures: as :func:`evaluate` (default: the dataset's).
        profile: as :func:`evaluate` (default: the dataset's).
        **compare_options: ``baseline`` (a name, default the first), ``test``, ``correction``,
            ``alpha``, ``ci``, ``n_resamples``, ``seed``, ``average_over`` (``"qrels"``: a query
            a run lacks scores 0; ``"common"``: the queries every run has; see
            :func:`nuggetbench.compare.compare`).

    Returns:
        A :class:`~nuggetbench.compare.ComparisonReport` (``print`` it for the table).

    Raises:
        InputError: fewer than two runs, or a value of an unsupported type or shape (the
            message lists the shapes taken); and as :func:`evaluate`.
    """
    target = _target(qrels)
    if isinstance(runs, (str, Path)) or not isinstance(runs, (Mapping, Sequence)):
        raise InputError(
            f"runs: {type(runs).__name__}; give several runs, as {{name: run}} or a list of runs"
        )
    named: dict[str, Run] | list[Run] = (
        {str(k): _run_value(v, str(k)) for k, v in runs.items()}
        if isinstance(runs, Mapping)
        else [_run_value(v, None) for v in runs]  # named by run.name (a file's stem)
    )
    texts = _measure_texts(measures) if measures is not None else list(target.default_measures)
    return _compare_runs(
        target.qrels,
        named,
        measure_keys(texts),
        profile=get_profile(profile or target.default_profile or "trec_eval -c").name,
        doc_filter=target.doc_filter,
        **compare_options,
    )


def _run_value(run: Any, name: str | None) -> Run:
    """One run of :func:`compare_runs` as a :class:`Run` (a path read, any other shape
    converted as :func:`evaluate` converts it)."""
    if isinstance(run, (str, Path)):
        return read_run(run, keep_rank=True, name=name or Path(run).stem)
    return as_run(run, name=name)


def _target(qrels: Any) -> Target:
    """Judgments and their conventions from any accepted *qrels* value."""
    if isinstance(qrels, Dataset):
        return load_target(qrels)
    if isinstance(qrels, (str, Path)):
        text = str(qrels)
        if Path(text).expanduser().exists() or is_dataset_id(text):
            return load_target(
                Path(text).expanduser() if Path(text).expanduser().exists() else text
            )
        raise InputError(
            f"qrels {text!r} is neither a file, a folder nor a dataset id; give a path, an id "
            "(nuggetbench datasets list) or the judgments themselves"
        )
    return Target(as_qrels(qrels))


def _measure_texts(measures: Any) -> str | list[str | Measure]:
    """Measure strings or values from strings, :class:`Measure` values and ir_measures objects.

    An ir_measures measure prints itself in the same spelling (``str(ir_measures.nDCG@10) ==
    "nDCG@10"``), so it is converted with ``str``; anything else is left to the parser, which
    names it in its error.
    """
    if isinstance(measures, str):
        return measures  # one measure, or several separated by spaces or commas
    if isinstance(measures, Measure) or not isinstance(measures, Iterable):
        measures = [measures]
    out: list[str | Measure] = []
    for m in measures:
        if isinstance(m, (str, Measure)):
            out.append(m)
        elif type(m).__module__.split(".")[0] == "ir_measures":
            out.append(str(m))
        else:
            raise InputError(
                f"measure {m!r} ({type(m).__name__}) is not a measure string, a nuggetbench "
                "Measure or an ir_measures measure; write it as text, e.g. 'nDCG@10'"
            )
    return out
