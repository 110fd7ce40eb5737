"""Extra result tables that a profile declares (today: BIRCO's bootstrap of the mean).

A profile whose ``options`` hold ``"bootstrap": {"n_resamples": N, "seed": S, ...}`` is
summarised, under the means, by the mean and standard deviation of *N* bootstrap means drawn as
BIRCO's ``rank2metric.py`` draws them (:func:`~.stats.birco_bootstrap`), over the queries in the
dataset's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nuggetbench.compare.stats import birco_summary
from nuggetbench.errors import UnknownNameError
from nuggetbench.measures.profiles import Profile, get_profile

if TYPE_CHECKING:  # pragma: no cover
    from nuggetbench.measures.results import Results

__all__ = ["Summary", "profile_summaries"]


@dataclass(frozen=True)
class Summary:
    """An extra table printed under the means.

    Attributes:
        title: the table's title.
        rows: ``{row label: {measure: value}}``.
        digits: decimals to print.
    """

    title: str
    rows: Mapping[str, Mapping[str, float]]
    digits: int = 4


def profile_summaries(
    results: Results, order: Sequence[str] | None = None, *, profile: Profile | None = None
) -> list[Summary]:
    """The tables *results*' profile declares (none for most profiles).

    Args:
        results: from :func:`nuggetbench.measures.compute`.
        order: the dataset's query order (the bootstrap depends on it); ``None``: sorted ids.
        profile: the profile *results* were computed under (default: looked up by its name;
            an unregistered custom profile declares nothing).

    Returns:
        ``[Summary("BIRCO bootstrap ...", {"bootstrap mean": ..., "bootstrap std": ...}, 3)]``
        under a profile declaring a bootstrap, else ``[]``.
    """
    if profile is None:
        try:
            profile = get_profile(results.profile)
        except UnknownNameError:
            return []
    boot = profile.options.get("bootstrap")
    if not boot:
        return []
    n, seed = int(boot.get("n_resamples", 1000)), int(boot.get("seed", 42))
    values = birco_summary(results, order=order, n_resamples=n, seed=seed)
    return [
        Summary(
            f"BIRCO bootstrap (rank2metric.py: {n} resamples, seed {seed})",
            {
                "bootstrap mean": {m: v[0] for m, v in values.items()},
                "bootstrap std": {m: v[1] for m, v in values.items()},
            },
            digits=3,
        )
    ]
