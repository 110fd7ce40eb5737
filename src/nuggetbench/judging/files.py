"""What the ``judge`` command does, from a dataset id and run files (one call per command)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data import Run
from ..data.io import load_run
from ..datasets import Dataset
from ..datasets.registry import load_target
from ..errors import InputError
from ..llm.client import LLMClient
from .agreement import AgreementOutcome, judge_agreement
from .holes import JudgeOutcome, judge_holes

__all__ = ["load_judging_inputs", "judge_run_files", "agreement_run_files"]


def load_judging_inputs(
    dataset: str | Path, runs: Sequence[str | Path], options: Mapping[str, Any] | None = None
) -> tuple[Dataset, dict[str, Run]]:
    """The dataset (with corpus and queries) and ``{file stem: run}`` (the dataset's run
    policies applied; a repeated stem is named by its whole path).

    Raises:
        InputError: *dataset* is a judgments file, not a dataset with texts.
    """
    target = load_target(dataset, **dict(options or {}))
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
        loaded[name] = target.dataset.postprocess_run(load_run(path, name=name))
    return target.dataset, loaded


def judge_run_files(
    dataset: str | Path,
    runs: Sequence[str | Path],
    depth: int,
    client: LLMClient,
    out_dir: str | Path,
    *,
    options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> JudgeOutcome:
    """:func:`~.holes.judge_holes` on a dataset id or folder and run files."""
    ds, loaded = load_judging_inputs(dataset, runs, options)
    return judge_holes(ds, loaded, depth, client, out_dir, **kwargs)


def agreement_run_files(
    dataset: str | Path,
    runs: Sequence[str | Path],
    client: LLMClient,
    out_dir: str | Path | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> AgreementOutcome:
    """:func:`~.agreement.judge_agreement` on a dataset id or folder and run files."""
    ds, loaded = load_judging_inputs(dataset, runs, options)
    return judge_agreement(ds, client, out_dir, runs=loaded or None, **kwargs)
