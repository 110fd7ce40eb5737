"""Can a recipe's condition run here, and if not, why: extras, a GPU, an LLM endpoint, the data.

Nothing here loads a dataset or a model: the checks read the installed distributions
(:mod:`importlib.metadata`, against the requirements nuggetbench declares for each extra), the
environment (``NUGGETBENCH_LLM_BASE_URL`` / ``OPENAI_BASE_URL``), torch's CUDA (imported only for
a condition that needs a GPU) and the data folders (``NUGGETBENCH_DATA``, then the home).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from nuggetbench import home as _home
from nuggetbench.datasets import is_dataset_id, local_folder
from nuggetbench.errors import NuggetbenchError
from nuggetbench.reproduce.recipe import Condition, Needs, Recipe, RunFile

__all__ = [
    "Readiness",
    "blocking_reason",
    "extra_missing",
    "find_run_file",
    "readiness",
]

#: Variables that name an OpenAI-compatible endpoint (the LLM client reads them).
LLM_ENV = ("NUGGETBENCH_LLM_BASE_URL", "OPENAI_BASE_URL")


@dataclass(frozen=True)
class Readiness:
    """Whether one (condition, dataset) can run here.

    Attributes:
        state: ``"ready"`` (everything on disk), ``"download"`` (it will be downloaded first) or
            ``"blocked"`` (it cannot run here: *reason* says why and what to do).
        reason: the why, one line (empty when ready).
    """

    state: str
    reason: str = ""


@cache
def _extra_requirements() -> dict[str, tuple[str, ...]] | None:
    """``{extra: distribution names}`` from nuggetbench's installed metadata, or ``None`` when
    nuggetbench's metadata is not found (run from a source tree)."""
    try:
        reqs = importlib.metadata.requires("nuggetbench") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    out: dict[str, list[str]] = {}
    for req in reqs:
        spec, _, marker = req.partition(";")
        found = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if not found:
            continue
        name = re.split(r"[\s<>=!~;\[]", spec.strip(), maxsplit=1)[0]
        if name.lower() != "nuggetbench":
            out.setdefault(found.group(1), []).append(name)
    return {k: tuple(v) for k, v in out.items()}


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def extra_missing(extra: str) -> str | None:
    """Why the nuggetbench extra *extra* is not usable here (what to install), or ``None``.

    An extra nuggetbench's metadata does not declare (or no metadata at all: a source tree)
    is not checked."""
    declared = _extra_requirements()
    if declared is None or extra not in declared:
        return None
    missing = [d for d in declared[extra] if not _installed(d)]
    if not missing:
        return None
    return f"needs the {extra} extra ({', '.join(missing)} missing): pip install 'nuggetbench[{extra}]'"


def _gpu_missing() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return "needs a GPU (torch is not installed, so none can be used)"
    import torch  # lazy: only for a condition that needs a GPU

    if not torch.cuda.is_available():
        return "needs a GPU (torch sees no CUDA device here)"
    return None


def blocking_reason(needs: Needs) -> str | None:
    """The first thing in *needs* this machine lacks (an extra, a GPU, an LLM endpoint), as one
    line saying what to do; ``None`` when nothing is missing."""
    for extra in needs.extras:
        why = extra_missing(extra)
        if why:
            return why
    if needs.gpu:
        why = _gpu_missing()
        if why:
            return why
    if needs.llm and not any(os.environ.get(v, "").strip() for v in LLM_ENV):
        return (
            "needs an OpenAI-compatible LLM endpoint: set NUGGETBENCH_LLM_BASE_URL (and the key's "
            "variable, OPENAI_API_KEY by default)"
        )
    return None


def find_run_file(run: RunFile) -> Path | None:
    """The published run file on disk: ``<folder>/<run.path>`` in ``NUGGETBENCH_DATA``, then the
    home; ``None`` when absent."""
    for root in _home.search_path():
        candidate = root / run.path
        if candidate.is_file():
            return candidate
    return None


def _dataset_state(dataset_id: str) -> Readiness:
    if not is_dataset_id(dataset_id) and Path(dataset_id).expanduser().is_dir():
        return Readiness("ready")  # a local dataset folder
    try:
        folder = local_folder(dataset_id)
    except NuggetbenchError as exc:
        return Readiness("blocked", str(exc))
    if folder is not None:
        return Readiness("ready")
    if _home.offline():
        return Readiness(
            "blocked",
            f"{dataset_id} is not on disk and downloads are off (NUGGETBENCH_OFFLINE=1); "
            f"`nuggetbench datasets info {dataset_id}` says what to fetch",
        )
    return Readiness("download", f"{dataset_id} is not on disk: it is downloaded first")


def readiness(recipe: Recipe, condition: Condition, dataset_id: str) -> Readiness:
    """Whether *condition* can run on *dataset_id* here (nothing is loaded or downloaded)."""
    why = blocking_reason(condition.needs)
    if why:
        return Readiness("blocked", why)
    state = _dataset_state(dataset_id)
    if state.state == "blocked":
        return state
    run = condition.run_file(dataset_id)
    if run is not None and find_run_file(run) is None:
        if _home.offline():
            return Readiness(
                "blocked",
                f"the run file {run.path} is not on disk and downloads are off "
                f"(NUGGETBENCH_OFFLINE=1); fetch {run.url} to {_home.home() / run.path}",
            )
        return Readiness("download", f"the run file {run.path} is downloaded first")
    return state
