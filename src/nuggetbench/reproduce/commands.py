"""The ``nuggetbench run`` / ``evaluate`` commands that give a recipe's numbers (``--dry-run``).

A retriever condition is ``nuggetbench run DATASET -r SPEC -m ...``; a condition read from a
summary row (``statistic``, e.g. BIRCO's bootstrap mean) adds ``-o DIR`` and an ``evaluate`` of
the run file ``run`` wrote there, which prints that summary. A condition of published run files is
``nuggetbench evaluate DATASET FILE -m ...``, preceded by a comment naming the URL and checksum
when the file is not on disk yet. Values under a profile with a ``scale`` (BIRCO's x100) are
printed by those commands on that scale; the recipe and ``reproduce`` keep fractions.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from nuggetbench.experiment import slug, system_labels
from nuggetbench.reproduce.needs import find_run_file
from nuggetbench.reproduce.recipe import Condition, DatasetRef, Recipe
from nuggetbench.reproduce.runfiles import checksum_of, home_path
from nuggetbench.retrieval.spec import public_spec

__all__ = ["commands_for", "substitute_models"]

#: Where a model id may stand in a retriever spec: after ``:``, ``(``, ``,`` or ``=``, before
#: ``,``, ``@``, ``)``, ``;``, a space or the end.
_BEFORE, _AFTER = r"(?<=[:(,=\s])", r"(?=[,@);\s]|$)"


def substitute_models(spec: str, models: Mapping[str, str]) -> str:
    """*spec* with each model id of *models* replaced by its local folder
    (``dense:sentence-transformers/all-MiniLM-L6-v2`` -> ``dense:/path/to/folder``)."""
    for model, folder in models.items():
        spec = re.sub(_BEFORE + re.escape(model) + _AFTER, lambda _m, f=folder: f, spec)
    return spec


def _quote(args: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


def _common(cond: Condition, ref: DatasetRef) -> list[str]:
    """``-m`` per measure, ``--profile`` when the condition names one, ``-O`` per loader option."""
    args: list[str] = []
    for m in cond.measures:
        args += ["-m", m]
    if cond.profile:
        args += ["--profile", cond.profile]
    for key, value in ref.options.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        args += ["-O", f"{key}={text}"]
    return args


def commands_for(
    recipe: Recipe,
    cond: Condition,
    ref: DatasetRef,
    *,
    models: Mapping[str, str] | None = None,
    outdir: str | None = None,
) -> list[str]:
    """The command lines (a ``#`` line is a comment) that give *cond*'s values on *ref*.

    Args:
        recipe: the recipe (for the output folder's name).
        cond: the condition.
        ref: the dataset.
        models: model substitutions (``--model ID=FOLDER``).
        outdir: the ``-o`` folder a ``run`` writes into when an ``evaluate`` reads its run
            (default ``reproduce-<recipe>/<dataset>``).
    """
    common = _common(cond, ref)
    if cond.retriever is None:
        run = cond.run_file(ref.id)
        assert run is not None  # validated: an expected value has its run file
        found = find_run_file(run)
        lines = []
        if found is None:
            algorithm, digest = checksum_of(run)
            lines.append(f"# fetch {run.url} ({algorithm} {digest}) to {home_path(run)}")
        path = str(found or home_path(run))
        return [*lines, _quote(["nuggetbench", "evaluate", ref.id, path, *common])]
    spec = substitute_models(cond.retriever, models or {})
    args = ["nuggetbench", "run", ref.id, "-r", spec, *common]
    if cond.depth != 1000:
        args += ["-k", str(cond.depth)]
    if cond.with_objective:
        args.append("--with-objective")
    if cond.statistic == "mean":
        return [_quote(args)]
    folder = outdir or f"reproduce-{recipe.name}/{slug(ref.id)}"
    label = system_labels([public_spec(spec)])[0]
    run_file = f"{folder}/runs/{slug(label)}.trec"
    return [
        _quote([*args, "-o", folder]),
        _quote(["nuggetbench", "evaluate", ref.id, run_file, *common]),
    ]
