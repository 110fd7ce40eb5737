"""Evaluation profiles: named semantics that differ between tools.

A :class:`Profile` fixes what tools disagree on: which queries are averaged, the order of tied
scores, a scale for the reported values, and optional hooks that choose the queries or transform
the qrels and run before evaluation (for tool-specific conventions such as self-hit removal).
``evaluate()`` only reads these fields, so a new convention is a new profile, not a new branch in
``evaluate()``.

Registered here:

* ``"trec_eval -c"`` (the default): every judged query counts; a judged query missing from the run
  is scored on an empty ranking (0 on every measure but ``NumRel``), as ``trec_eval -c``.
* ``"trec_eval"``: only queries present in both the run and the qrels, as plain ``trec_eval``
  (and ``pytrec_eval``).
* ``"trec_eval-9.0.8"`` and ``"trec_eval-9.0.8 -c"`` (and any ``trec_eval-9.0.8`` command line):
  trec_eval 9.0.8, where the plain ``trec_eval`` names are trec_eval 10.0 (:data:`TREC_EVAL_9`).
* ``"ndeval"``, ``"ndeval -c"``, ``"ndeval -traditional"`` (and any ndeval command line,
  ``"ndeval -c -M 10"``): ndeval 4.5's ordering and averaging for the diversity families.
* ``"freshstack"``: FreshStack's evaluation code, its three tie orders (Coverage: run file order;
  alpha-nDCG: the top 20 in file order, then doc id ascending as pyndeval; Recall: doc id
  descending as pytrec_eval); every query with nuggets (:func:`freshstack_profile`).
* ``"beir"`` (and ``"beir -keep-identical-ids"``): BEIR's ``EvaluateRetrieval.evaluate`` and
  ``evaluate_custom`` (:func:`beir_profile`).
* ``"fastbook"``: every query that declares nuggets, ties as trec_eval.
* ``"birco"``: BIRCO's ``rank2metric.py`` (queries with a relevant document, values x100).

Every profile lives in this module; a plug-in registers its own with :func:`register_profile`, or
names a module in :data:`PROFILE_MODULES` that does so when imported.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from nuggetbench.data.ranking import TIE_BREAKS
from nuggetbench.errors import InputError, UnknownNameError
from nuggetbench.plugins import Registry

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.data.qrels import Qrels
    from nuggetbench.data.run import Run

logger = logging.getLogger(__name__)

__all__ = [
    "Profile",
    "register_profile",
    "get_profile",
    "PROFILES",
    "DEFAULT_PROFILE",
    "PROFILE_MODULES",
    "AVERAGE_OVER",
    "BIRCO_MEASURES",
    "ndeval_profile",
    "freshstack_profile",
    "beir_profile",
    "trec_eval_profile",
    "trec_eval_version",
    "TREC_EVAL_9",
    "nugget_queries",
    "queries_with_relevant",
]

#: ``"qrels"``: every judged query counts (missing from the run = empty ranking);
#: ``"run_and_qrels"``: only queries in both.
AVERAGE_OVER = ("qrels", "run_and_qrels")
DEFAULT_PROFILE = "trec_eval -c"
#: The profile-name prefix of trec_eval 9.0.8's conventions (the plain ``trec_eval`` is 10.0's):
#: ``iprec_at_recall`` and ``11pt_avg`` find the k-th relevant document as floor(r R + 0.9)
#: (10.0: round(r R)), and ``-c -q`` prints no line for a judged query missing from the run
#: (10.0 prints its measures on an empty ranking).
TREC_EVAL_9 = "trec_eval-9.0.8"
#: Modules that register profiles, imported when a profile name is not found (append yours).
PROFILE_MODULES: list[str] = []


@dataclass(frozen=True)
class Profile:
    """A named set of evaluation conventions.

    Attributes:
        name: the profile's name (``"trec_eval -c"``).
        description: one line for listings and provenance.
        average_over: ``"qrels"`` or ``"run_and_qrels"`` (see :data:`AVERAGE_OVER`); ignored when
            *select_queries* is given.
        tie_break: order of tied scores inside a query: ``"docid_desc"`` (trec_eval),
            ``"docid_asc"`` (pyndeval) or ``"input"`` (the order the entries arrived in,
            ``Run.input_order``). ``options["family_tie_break"]`` (``{family name: order}``)
            overrides it for some families (see :meth:`tie_break_for`).
        scale: factor applied to per-query values of scalable families (e.g. 100 for percent).
        select_queries: optional ``f(qrels, run) -> iterable of query ids``: the evaluated
            queries (a query absent from the run is scored on an empty ranking; one absent from
            the qrels has no relevant documents).
        transform: optional ``f(qrels, run) -> (qrels, run)`` applied before anything else
            (e.g. removing self-hits, restricting to a candidate pool).
        options: free-form settings that families of this profile may read
            (``ctx.profile.options``).
    """

    name: str
    description: str = ""
    average_over: str = "qrels"
    tie_break: str = "docid_desc"
    scale: float = 1.0
    select_queries: Callable[[Qrels, Run], Iterable[str]] | None = field(
        default=None, compare=False
    )
    transform: Callable[[Qrels, Run], tuple[Qrels, Run]] | None = field(default=None, compare=False)
    options: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.average_over not in AVERAGE_OVER:
            raise ValueError(
                f"profile {self.name!r}: average_over must be one of {AVERAGE_OVER}, got {self.average_over!r}"
            )
        for order in (self.tie_break, *dict(self.options.get("family_tie_break", {})).values()):
            if order not in TIE_BREAKS:
                raise ValueError(
                    f"profile {self.name!r}: a tie break must be one of {TIE_BREAKS}, got {order!r}"
                )
        if not (isinstance(self.scale, (int, float)) and self.scale > 0):
            raise ValueError(
                f"profile {self.name!r}: scale must be a positive number, got {self.scale!r}"
            )

    def __str__(self) -> str:
        return self.name

    def tie_break_for(self, family: str | None) -> str:
        """The tie order the measure family named *family* uses under this profile."""
        return dict(self.options.get("family_tie_break", {})).get(family, self.tie_break)

    def mean(self, family: str, values: np.ndarray, n_judged: int) -> float:
        """The reported mean of a mean-aggregated family's per-query *values* (shape (Q,)).

        ``values.mean()``, except for the families named in ``options["sum_over_judged"]``,
        whose sum is divided by *n_judged* (the number of judged queries: BEIR's custom metrics
        divide by ``len(qrels)``); rounded to ``options["round_means"]`` decimals when set.
        """
        if family in self.options.get("sum_over_judged", ()):
            mean = float(values.sum()) / max(int(n_judged), 1)
        else:
            mean = float(values.mean())
        digits = self.options.get("round_means")
        return mean if digits is None else round(mean, int(digits))


#: The profile registry (names -> :class:`Profile`); its providers are :data:`PROFILE_MODULES`.
REGISTRY = Registry(
    "evaluation profile",
    providers=PROFILE_MODULES,
    hint="Run `nuggetbench measures` for the profiles.",
)
#: Registered profiles by name (the registry's table).
PROFILES: dict[str, Profile] = REGISTRY


def register_profile(profile: Profile, *, replace: bool = False) -> Profile:
    """Register *profile* under its name; returns it.

    Raises:
        ValueError: a different profile already has that name and *replace* is false.
    """
    old = PROFILES.get(profile.name)
    if old is not None and old is not profile and not replace:
        raise ValueError(
            f"profile {profile.name!r} is already registered (pass replace=True to override)"
        )
    REGISTRY.register(profile.name, profile)
    return profile


def get_profile(profile: str | Profile | None = None) -> Profile:
    """The profile named *profile* (``None``: the default, ``"trec_eval -c"``).

    A :class:`Profile` value is returned as is; an ndeval command line (``"ndeval -c -M 10"``)
    builds its profile, and so does ``"freshstack -cut N"`` (:func:`freshstack_profile`).

    Raises:
        UnknownNameError: no such profile; the nearest name is suggested.
    """
    if isinstance(profile, Profile):
        return profile
    name = DEFAULT_PROFILE if profile is None else profile
    found = REGISTRY.find(name)
    if found is not None:
        return found
    if name.split()[:1] == ["ndeval"]:
        return _ndeval_command_line(name)
    if name.split()[:1] in (["trec_eval"], [TREC_EVAL_9]):
        return _trec_eval_command_line(name)
    words = name.split()
    if len(words) == 3 and words[:2] == ["freshstack", "-cut"] and words[2].isdigit():
        return freshstack_profile(cut=int(words[2]))
    raise REGISTRY.unknown(name)


def _trec_eval_command_line(name: str) -> Profile:
    """``trec_eval [-c] [-J] [-M N] [-l N]`` spelled as on trec_eval's command line (the
    program named ``trec_eval-9.0.8``: that version's conventions)."""
    words, i = name.split()[1:], 0
    options: dict[str, Any] = {"version": "9.0.8"} if name.split()[0] == TREC_EVAL_9 else {}
    while i < len(words):
        word = words[i]
        if word in ("-c", "-J"):
            options["complete" if word == "-c" else "judged_only"] = True
        elif word in ("-M", "-l") and i + 1 < len(words) and words[i + 1].lstrip("-").isdigit():
            options["max_docs" if word == "-M" else "rel_level"] = int(words[i + 1])
            i += 1
        else:
            raise UnknownNameError(
                f"unknown trec_eval option {word!r} in profile {name!r}: the profile takes -c, "
                "-J, -M N and -l N, e.g. 'trec_eval -c' or 'trec_eval-9.0.8 -c' (measures are "
                "named with -m)"
            )
        i += 1
    return trec_eval_profile(**options)


def trec_eval_profile(
    *,
    complete: bool = False,
    max_docs: int | None = None,
    rel_level: int | None = None,
    judged_only: bool = False,
    version: str = "10.0",
) -> Profile:
    """A trec_eval profile: ``trec_eval [-c] [-J] [-M max_docs] [-l rel_level]``.

    Args:
        complete: ``-c``: average over every judged query (a missing one scores 0).
        max_docs: ``-M``: keep the first *max_docs* documents of each ranking (after ranking).
        rel_level: ``-l``: the default ``rel`` of every measure taking it (grade >= rel_level
            is relevant).
        judged_only: ``-J``: the default ``judged_only`` of every measure taking it.
        version: ``"10.0"`` (the current release) or ``"9.0.8"`` (see :data:`TREC_EVAL_9`:
            ``legacy`` interpolation, no per-query lines for missing queries).

    Returns:
        A :class:`Profile` named like the command line (``"trec_eval -c -M 100"``,
        ``"trec_eval-9.0.8 -c"``); its ``options["measure_defaults"]`` hold ``rel`` /
        ``judged_only`` / ``legacy``, which ``evaluate()`` gives to the measures that do not
        set them; ``options["trec_eval_version"]`` the version.

    Raises:
        InputError: *max_docs* is not a positive integer, *version* is neither, or
            *rel_level* is negative.
    """
    if max_docs is not None and (isinstance(max_docs, bool) or int(max_docs) <= 0):
        raise InputError(f"trec_eval's -M must be a positive integer, got {max_docs!r}")
    if version not in ("10.0", "9.0.8"):
        raise InputError(f"trec_eval version must be '10.0' or '9.0.8', got {version!r}")
    if rel_level is not None and int(rel_level) < 0:
        raise InputError(
            f"trec_eval's -l must be 0 or more, got {rel_level}: at a negative level trec_eval "
            "10.0 counts documents missing from the qrels as relevant where it reads the ranking "
            "(P@k) but not in num_rel or num_rel_ret, which nuggetbench does not reproduce; "
            "give -l 0 to count every judged document as relevant"
        )
    name = "trec_eval" if version == "10.0" else TREC_EVAL_9
    name += (" -c" if complete else "") + (" -J" if judged_only else "")
    name += f" -M {int(max_docs)}" if max_docs is not None else ""
    name += f" -l {int(rel_level)}" if rel_level is not None else ""
    defaults: dict[str, Any] = {}
    if rel_level is not None:
        defaults["rel"] = int(rel_level)
    if judged_only:
        defaults["judged_only"] = True
    if version != "10.0":
        defaults["legacy"] = True
    depth = int(max_docs) if max_docs is not None else None
    flags = name.partition(" ")[2]
    options: dict[str, Any] = {"measure_defaults": defaults} if defaults else {}
    if depth:
        options["max_docs"] = depth  # for readers of the run that rank it themselves (prefs)
    return Profile(
        name=name,
        description=f"trec_eval {version} with " + (flags or "no options"),
        average_over="qrels" if complete else "run_and_qrels",
        transform=(lambda qrels, run: (qrels, run.truncate(depth))) if depth else None,
        options={**options, "trec_eval_version": version},
    )


def trec_eval_version(profile: str | Profile | None) -> str:
    """The trec_eval release whose conventions *profile* follows: ``"9.0.8"`` for the
    ``trec_eval-9.0.8`` profiles, else ``"10.0"`` (every other profile, the default included)."""
    if isinstance(profile, str) and profile.split()[:1] == [TREC_EVAL_9]:
        return "9.0.8"
    prof = get_profile(profile) if isinstance(profile, (str, type(None))) else profile
    return str(prof.options.get("trec_eval_version", "10.0"))


def _ndeval_command_line(name: str) -> Profile:
    """``ndeval [-c] [-traditional] [-M N]`` spelled as on ndeval's command line, in any order."""
    words = name.split()[1:]
    options: dict = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-c":
            options["complete"] = True
        elif word == "-traditional":
            options["traditional"] = True
        elif word == "-M" and i + 1 < len(words) and words[i + 1].isdigit():
            options["depth"] = int(words[i + 1])
            i += 1
        else:
            raise UnknownNameError(
                f"unknown ndeval option {word!r} in profile {name!r}: the profile takes -c, "
                "-traditional and -M N (-alpha and -beta are measure parameters: "
                "alpha_nDCG(alpha=0.8)@20, NRBP(alpha=0.8,beta=0.7))"
            )
        i += 1
    return ndeval_profile(**options)


def ndeval_profile(
    *, complete: bool = False, traditional: bool = False, depth: int | None = None
) -> Profile:
    """An ndeval profile: ``ndeval [-c] [-traditional] [-M depth]``.

    Args:
        complete: ``-c``: average over every judged query (a missing one scores 0) instead of
            the run's judged queries.
        traditional: ``-traditional``: order by score, then doc id descending, instead of the
            run file's rank column.
        depth: ``-M depth``: keep the first *depth* documents of each ranking (diversity
            families only).

    Returns:
        A :class:`Profile` named like the ndeval command line (``"ndeval -c -M 10"``); the
        three named ones are registered.

    Raises:
        InputError: *depth* is not a positive integer.
    """
    if depth is not None and (isinstance(depth, bool) or int(depth) <= 0):
        raise InputError(f"ndeval's -M depth must be a positive integer, got {depth!r}")
    name = "ndeval" + (" -c" if complete else "") + (" -traditional" if traditional else "")
    name += f" -M {int(depth)}" if depth is not None else ""
    options: dict = {"diversity_order": "trec" if traditional else "rank"}
    if depth is not None:
        options["depth"] = int(depth)
    order = "score desc, doc id desc" if traditional else "the run file's rank column"
    averaged = (
        "every judged query (a missing one scores 0)" if complete else "the run's judged queries"
    )
    return Profile(
        name=name,
        description=f"ndeval 4.5: order by {order}; average over {averaged}",
        average_over="qrels" if complete else "run_and_qrels",
        options=options,
    )


def freshstack_profile(cut: int = 20) -> Profile:
    """FreshStack's ``EvaluateRetrieval.evaluate`` (``freshstack`` 0.0.6), its three tie orders.

    * ``Coverage@k`` (and ``AC_MRR@k``): ties keep the run's input order (``coverage()`` sorts a
      ``{doc: score}`` dict filled in file order with Python's stable sort).
    * the diversity families (``alpha_nDCG@k``...): ``alpha_ndcg()`` keeps each query's top
      *cut* by the same stable sort, then pyndeval orders that cut by score descending and doc id
      ascending. FreshStack cuts at its largest ``k_values`` entry up to 20: 20 for its
      published ``k_values=[10, 20, 50]``; pass ``cut`` for other ``k_values``.
    * every other family (``R@k`` through ``pytrec_eval``): doc id descending, as trec_eval.

    Every query with nuggets is averaged (a query missing from the run scores 0). FreshStack
    rounds to 4 decimals (Coverage per query to 5 first); values here are unrounded.

    Raises:
        InputError: *cut* is not a positive integer.
    """
    if isinstance(cut, bool) or not isinstance(cut, int) or cut <= 0:
        raise InputError(f"the freshstack profile's cut must be a positive integer, got {cut!r}")
    return Profile(
        name="freshstack" if cut == 20 else f"freshstack -cut {cut}",
        description="FreshStack 0.0.6: Coverage ties in run file order; alpha-nDCG on the top "
        f"{cut} in file order, then doc id ascending (pyndeval); Recall and the rest by doc id "
        "descending (pytrec_eval); every query with nuggets averaged, a missing one scoring 0",
        tie_break="docid_desc",
        select_queries=nugget_queries,
        options={
            "family_tie_break": {"Coverage": "input", "AC_MRR": "input"},
            "diversity_order": "docid_asc",
            "diversity_cut": {"order": "input", "depth": cut},
        },
    )


def beir_profile(*, ignore_identical_ids: bool = True) -> Profile:
    """BEIR's ``EvaluateRetrieval.evaluate`` and ``evaluate_custom`` (``beir`` 2.2.0).

    * ``evaluate`` (``nDCG@k``, ``AP@k`` = its ``MAP@k``, ``R@k``, ``P@k``) calls pytrec_eval:
      ties by doc id descending, averaged over the run's queries that are judged (a query whose
      every entry was a self hit still counts, with 0).
    * ``evaluate_custom`` (``RR@k`` = its ``MRR@k``, ``R_cap@k``, ``Hole@k``, ``Success@k`` = its
      ``Accuracy@k``) sorts each query's ``{doc: score}`` dict with Python's stable sort (ties in
      input order) and divides the sum over the run's queries by the number of judged queries
      (``len(qrels)``): ``options["sum_over_judged"]``. BEIR's ``hole`` also adds the run-only
      queries (its other custom metrics raise ``KeyError`` on them); here they are ignored.
    * *ignore_identical_ids* (BEIR's default ``True``): entries whose doc id equals the query id
      are dropped before every measure (BEIR's ``evaluate`` pops them from the results dict it
      is given, which its custom metrics then see).
    * Means are rounded to 5 decimals (``options["round_means"]``), as BEIR returns them;
      per-query values are not rounded.

    Returns:
        The profile ``"beir"`` (or ``"beir -keep-identical-ids"``).
    """
    return Profile(
        name="beir" if ignore_identical_ids else "beir -keep-identical-ids",
        description="BEIR 2.2.0 EvaluateRetrieval: nDCG/MAP/Recall/P via pytrec_eval over the run's "
        "judged queries; MRR, R_cap, Hole, Accuracy (Success) with ties in input order, summed "
        "over the run's queries and divided by the judged queries"
        + ("; doc id == query id dropped" if ignore_identical_ids else "")
        + "; means rounded to 5 decimals",
        tie_break="docid_desc",
        select_queries=_run_queries_judged,
        transform=_drop_identical_ids if ignore_identical_ids else None,
        options={
            "family_tie_break": {f: "input" for f in _BEIR_CUSTOM},
            "sum_over_judged": _BEIR_CUSTOM,
            "round_means": 5,
        },
    )


#: The families computed by BEIR's ``evaluate_custom`` (ties in input order, sum / len(qrels)).
_BEIR_CUSTOM = ("RR", "R_cap", "Hole", "Success")


def _run_queries_judged(qrels: Qrels, run: Run) -> list[str]:
    """The run's queries that have judgments, empty ones included (pytrec_eval scores them)."""
    return sorted(set(run.query_ids) & set(qrels.query_ids))


def _drop_identical_ids(qrels: Qrels, run: Run) -> tuple[Qrels, Run]:
    """BEIR's ``ignore_identical_ids``: drop the entries whose doc id equals the query id."""
    qids, _, docids, _ = run.arrays()
    if not len(docids):
        return qrels, run
    self_hit = np.repeat(qids, run.lengths()) == docids
    return qrels, (run.filter_entries(~self_hit) if self_hit.any() else run)


# --- query selectors ----------------------------------------------------------------------------
def nugget_queries(qrels: Qrels, run: Run | None = None, *, with_judged: bool = False) -> list[str]:
    """The queries that declare nuggets: the ones a nugget benchmark averages over.

    Args:
        qrels: document qrels, with ``qrels.nuggets`` when the benchmark has nuggets.
        run: unused (the profile hook's signature).
        with_judged: also every query with document judgments (fastbook: a question whose
            components no passage supports still counts).

    Returns:
        Query ids: ``qrels.query_ids`` when there are no nuggets; else the nugget queries in
        their order (with *with_judged*: the sorted union with the judged queries).
    """
    nuggets = qrels.nuggets
    if nuggets is None:
        return list(qrels.query_ids)
    if with_judged:
        return sorted(set(nuggets.query_ids) | set(qrels.query_ids))
    return list(nuggets.query_ids)


def _fastbook_queries(qrels: Qrels, run: Run) -> list[str]:
    return nugget_queries(qrels, run, with_judged=True)


def queries_with_relevant(qrels: Qrels, run: Run | None = None) -> Iterable[str]:
    """Judged queries with at least one document of grade >= 1 (BIRCO's evaluated queries)."""
    qids, starts, _, grades = qrels.arrays()
    if not len(qids):
        return []
    has = np.add.reduceat((grades >= 1).astype(np.int64), starts[:-1]) > 0
    has &= np.diff(starts) > 0
    return qids[has].tolist()


#: The measures BIRCO's ``rank2metric.py`` prints, in its order (MRR@10 is ``RRmax@10``).
BIRCO_MEASURES = ("R@5", "R@10", "R@20", "R@100", "nDCG@10", "RRmax@10", "AP")


# --- the registered profiles --------------------------------------------------------------------
register_profile(
    Profile(
        name="trec_eval -c",
        description="every judged query counts; a judged query missing from the run scores 0 "
        "(trec_eval -c); ties by doc id descending",
        average_over="qrels",
    )
)
register_profile(
    Profile(
        name="trec_eval",
        description="only queries in both the run and the qrels (trec_eval's and pytrec_eval's "
        "default); ties by doc id descending",
        average_over="run_and_qrels",
    )
)
register_profile(trec_eval_profile(version="9.0.8"))
register_profile(trec_eval_profile(complete=True, version="9.0.8"))
NDEVAL_PROFILES = [
    ndeval_profile(),
    ndeval_profile(complete=True),
    ndeval_profile(traditional=True),
]
for _profile in NDEVAL_PROFILES:
    register_profile(_profile)
register_profile(freshstack_profile())
register_profile(beir_profile())
register_profile(beir_profile(ignore_identical_ids=False))
register_profile(
    Profile(
        name="fastbook",
        description="every query that declares nuggets counts (one no passage supports scores 0); "
        "a query missing from the run scores 0; ties by doc id descending (trec_eval's order)",
        average_over="qrels",
        select_queries=_fastbook_queries,
    )
)
BIRCO_PROFILE = register_profile(
    Profile(
        name="birco",
        description="BIRCO rank2metric.py: queries with a relevant (grade >= 1) document, values "
        "x100; its MRR@10 is RRmax@10; bootstrap via nuggetbench.compare.birco_summary",
        average_over="qrels",
        scale=100.0,
        select_queries=queries_with_relevant,
        options={
            "measures": BIRCO_MEASURES,
            "bootstrap": {"n_resamples": 1000, "seed": 42, "ddof": 0},
        },
    )
)
