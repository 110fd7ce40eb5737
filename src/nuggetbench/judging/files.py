"""What the ``judge`` command does, from a dataset id and run files (one call per command)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nuggetbench._outfolder import writing
from nuggetbench.compare import baseline_at, compare
from nuggetbench.data import Run
from nuggetbench.data.formats.sniff import read_run
from nuggetbench.data.subset import QuerySubset, query_subset
from nuggetbench.datasets import Dataset
from nuggetbench.datasets.registry import load_target
from nuggetbench.errors import InputError
from nuggetbench.judging.agreement import AgreementOutcome, default_rel_level, judge_agreement
from nuggetbench.judging.answers import AnswersOutcome, assign_answers, read_answers, read_nuggets
from nuggetbench.judging.document_nuggets import NuggetCreation, create_nuggets_file
from nuggetbench.judging.holes import JudgeOutcome, judge_holes, write_json, write_rows
from nuggetbench.llm.client import LLMClient

__all__ = [
    "load_judging_inputs",
    "judge_run_files",
    "agreement_run_files",
    "answers_files",
    "nuggets_for_dataset",
]


def load_judging_inputs(
    dataset: str | Path,
    runs: Sequence[str | Path],
    options: Mapping[str, Any] | None = None,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
) -> tuple[Dataset, dict[str, Run]]:
    """The dataset (with corpus and queries) and ``{file stem: run}`` (the dataset's run
    policies applied; a repeated stem is named by its whole path), both restricted to the
    query subset *queries* asks for (:func:`nuggetbench.datasets.load_dataset`'s *queries*;
    the outputs record it as ``queries``).

    Raises:
        InputError: *dataset* is a judgments file, not a dataset with texts; query ids that
            are not the dataset's (named).
    """
    target = load_target(dataset, queries=queries, **dict(options or {}))
    if target.dataset is None:
        raise InputError(
            f"{dataset}: judging needs a dataset with its corpus and queries (an id such as "
            "birco/clinical-trial or a dataset folder), not a qrels file"
        )
    loaded: dict[str, Run] = {}
    for path in runs:
        name = Path(path).stem
        if name in loaded:
            name = str(path)
        loaded[name] = target.restrict_run(
            target.dataset.postprocess_run(read_run(path, name=name))
        )
    return target.dataset, loaded


def judge_run_files(
    dataset: str | Path,
    runs: Sequence[str | Path],
    depth: int,
    client: LLMClient,
    out_dir: str | Path,
    *,
    options: Mapping[str, Any] | None = None,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
    **kwargs: Any,
) -> JudgeOutcome:
    """:func:`~.holes.judge_holes` on a dataset id or folder and run files (only the queries
    *queries* asks for: :func:`load_judging_inputs`)."""
    ds, loaded = load_judging_inputs(dataset, runs, options, queries)
    return judge_holes(ds, loaded, depth, client, out_dir, **kwargs)


def agreement_run_files(
    dataset: str | Path,
    runs: Sequence[str | Path],
    client: LLMClient,
    out_dir: str | Path | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
    **kwargs: Any,
) -> AgreementOutcome:
    """:func:`~.agreement.judge_agreement` on a dataset id or folder and run files (the judged
    pairs of the queries *queries* asks for: :func:`load_judging_inputs`)."""
    ds, loaded = load_judging_inputs(dataset, runs, options, queries)
    return judge_agreement(ds, client, out_dir, runs=loaded or None, **kwargs)


def answers_files(
    nuggets: str | Path,
    answers: Sequence[str | Path],
    client: LLMClient,
    out_dir: str | Path | None = None,
    *,
    max_repairs: int = 2,
    progress: Callable[[int], None] | None = None,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
    **compare_options: Any,
) -> AnswersOutcome:
    """What ``nuggetbench answers`` does: read the nuggets and each system's answers (a system is
    named by its file's stem, the whole path when two stems are equal), assign and score
    (:func:`~.answers.assign_answers`), compare the systems as ``compare`` does
    (:func:`nuggetbench.compare.compare` with *compare_options*: ``baseline``, ``test``,
    ``correction``, ``alpha``, ``ci``, ``n_resamples``, ``seed``, ``average_over``; a question a
    system did not answer is what it lacks) when there are two or more, and
    with *out_dir* write ``assignments.jsonl`` (one row per system, question and nugget) and
    ``answers.json`` (the summary), named in the outcome's ``files`` (the folder locked from
    the start, refused when it holds another kind of output, both files replaced together:
    :func:`nuggetbench._outfolder.writing`). *queries* keeps only some questions (a
    :class:`~nuggetbench.data.subset.QuerySubset`, ids, or a file of ids, chosen among the
    nuggets file's questions in its order; recorded in ``answers.json`` as ``queries``).

    With ``average_over="common"`` the means (and the comparison) are over the questions every
    system answered; by default (``"qrels"``) over every question, an unanswered one scored 0.

    Raises:
        InputError / FormatError: from the readers; question ids that are not the nuggets
            file's (named); no question answered by every system under ``"common"``;
            LLMError / BudgetError: from the client.
    """
    sets, record = _questions(read_nuggets(nuggets), query_subset(queries), str(nuggets))
    systems: dict[str, dict[str, str]] = {}
    for path in answers:
        name = Path(path).stem
        systems[str(path) if name in systems else name] = read_answers(path)
    if out_dir is None:
        outcome = _assigned(sets, systems, client, max_repairs, progress, compare_options)
        outcome.queries = record
        return outcome
    with writing(out_dir, "answers", "nuggetbench answers -o") as stage:  # before any request
        outcome = _assigned(sets, systems, client, max_repairs, progress, compare_options)
        outcome.queries = record
        write_rows(stage / "assignments.jsonl", outcome.assignments)
        outcome.files = {
            "assignments": str(Path(out_dir) / "assignments.jsonl"),
            "summary": str(Path(out_dir) / "answers.json"),
        }
        write_json(stage / "answers.json", outcome.to_dict())
    return outcome


def _questions(sets: dict, subset: QuerySubset | None, where: str) -> tuple[dict, dict | None]:
    """The questions of *sets* that *subset* chooses (in the file's order) and the subset's
    record; every question and ``None`` without a subset."""
    if subset is None:
        return sets, None
    chosen = subset.select(list(sets), what=f"the nuggets file {where}")
    return {q: sets[q] for q in chosen}, subset.record(chosen, len(sets))


def _assigned(
    sets: Any,
    systems: dict[str, dict[str, str]],
    client: LLMClient,
    max_repairs: int,
    progress: Callable[[int], None] | None,
    compare_options: dict[str, Any],
) -> AnswersOutcome:
    """The assignments and scores of :func:`answers_files` (under ``average_over="common"``
    the means over the questions every system answered), and the comparison of 2+ systems
    (a question a system did not answer is what it lacks)."""
    outcome = assign_answers(sets, systems, client, max_repairs=max_repairs, progress=progress)
    unanswered = {s: [q for q in sets if q not in answered] for s, answered in systems.items()}
    outcome.average_over = compare_options.get("average_over", "qrels")
    if outcome.average_over == "common":  # the means too: over the questions every system answered
        common = [q for q in sets if not any(q in lacks for lacks in unanswered.values())]
        if not common:
            raise InputError("--average-over common: no question is answered by every system")
        outcome.results = {
            s: {m: sum(v[q] for q in common) / len(common) for m, v in per.items()}
            for s, per in outcome.per_query.items()
        }
        outcome.averaged = len(common)
    if len(systems) > 1:
        options = dict(compare_options)
        options["baseline"] = baseline_at(options.get("baseline"), list(systems))  # 1-based
        outcome.comparison = compare(outcome.per_query, missing=unanswered, **options)
    return outcome


def nuggets_for_dataset(
    dataset: str | Path,
    client: LLMClient,
    out: str | Path,
    *,
    options: Mapping[str, Any] | None = None,
    rel_level: int | None = None,
    queries: QuerySubset | str | Path | Sequence[str] | None = None,
    **kwargs: Any,
) -> NuggetCreation:
    """What ``nuggetbench nuggets`` does: :func:`~.creation.create_nuggets` on a dataset id or
    folder (relevant at *rel_level*, default the dataset profile's; only the queries *queries*
    asks for), rows written to *out*."""
    ds, _ = load_judging_inputs(dataset, [], options, queries)
    level = default_rel_level(ds.default_profile) if rel_level is None else rel_level
    return create_nuggets_file(ds, client, out, rel_level=level, **kwargs)
