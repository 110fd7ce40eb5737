"""``QuerySubset``: which queries of a dataset to keep (``--queries``, ``--first-queries``,
``--sample-queries``).

A subset is chosen in two steps, each optional: the query ids *given* (a list, a comma-separated
string, or a file of one id per line), then the *first* N of those (in the dataset's query order,
as PyTerrier's ``topics.head(N)``) or a seeded *sample* of N. The sample ranks every query id by
``SHA-256("<seed>:<query id>")`` and keeps the N smallest: the same ids for the same seed on any
machine and any Python or numpy version, whatever order the dataset lists its queries in, and the
sample of N is part of the sample of N + 1. The chosen ids are kept in the dataset's order.

:meth:`QuerySubset.record` is what ``results.json`` stores (``provenance["queries"]``): how the
subset was chosen and the ids chosen, so ``--append``, ``report`` and ``compare`` of folders
apply the same subset again (:meth:`QuerySubset.from_record`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nuggetbench.errors import InputError

__all__ = ["QuerySubset", "query_subset"]

#: Query ids named in an error message before "... and N more".
_SHOWN = 8


@dataclass(frozen=True)
class QuerySubset:
    """Which queries to keep (see the module docstring).

    Attributes:
        ids: the query ids given (``None``: every query), in the order given.
        file: the file *ids* were read from, if any (recorded; not read again).
        first: keep the first N queries (of *ids*, else of the dataset), in the dataset's order.
        sample: keep a seeded sample of N queries (of *ids*, else of the dataset).
        seed: the seed of *sample* (any integer; default 0).
    """

    ids: tuple[str, ...] | None = None
    file: str | None = None
    first: int | None = None
    sample: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.first is not None and self.sample is not None:
            raise InputError(
                "the first N queries and a sample of N exclude each other; give one "
                "(--first-queries or --sample-queries)"
            )
        for what, n in (("first", self.first), ("sample", self.sample)):
            if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
                raise InputError(f"{what}={n!r}: the number of queries must be an integer >= 1")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputError(f"seed={self.seed!r}: the sample's seed must be an integer")
        if self.ids is not None and not self.ids:
            where = f" ({self.file} holds none)" if self.file else ""
            raise InputError(f"no query id given{where}: give at least one, or no query subset")

    @classmethod
    def parse(cls, text: str) -> QuerySubset:
        """``--queries FILE|IDS``: the ids of *text* read as a file when one exists at that path
        (one id per line; blank lines and lines starting with ``#`` skipped), else as
        comma-separated ids (``1,3,5``; a single id is a list of one).

        Raises:
            InputError: the file cannot be read, or it (or *text*) names no id.
        """
        path = Path(text).expanduser()
        if path.is_file():
            try:
                lines = path.read_text(encoding="utf-8-sig").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"{path}: cannot read the query ids ({exc})") from None
            ids = [line.strip() for line in lines]
            return cls(_unique(i for i in ids if i and not i.startswith("#")), file=str(path))
        if path.is_dir():
            raise InputError(f"{text}: a folder; give a file of query ids (one per line) or ids")
        return cls(_unique(i.strip() for i in text.split(",") if i.strip()))

    def select(self, available: Sequence[str], *, what: str = "the dataset") -> list[str]:
        """The chosen ids of *available* (the dataset's queries, in its order), in that order.

        Args:
            available: every query id, in the dataset's order.
            what: how the dataset is named in errors (``beir/scifact (split test)``).

        Raises:
            InputError: ids given that are not among *available* (each named, up to eight, with
                what the dataset's ids look like), or more queries asked for than there are.
        """
        pool = [str(q) for q in available]
        if self.ids is not None:
            known = set(pool)
            unknown = [q for q in self.ids if q not in known]
            if unknown:
                raise InputError(self._unknown(unknown, pool, what))
            wanted = set(self.ids)
            pool = [q for q in pool if q in wanted]
        n = self.first if self.first is not None else self.sample
        if n is not None and n > len(pool):
            has = (
                f"only {len(pool)} query ids were given"
                if self.ids is not None
                else f"{what} has {len(pool)} queries"
            )
            how = "the first" if self.first is not None else "a sample of"
            raise InputError(f"{how} {n} queries asked for, but {has}; ask for at most {len(pool)}")
        if self.first is not None:
            return pool[: self.first]
        if self.sample is not None:
            keep = set(sorted(pool, key=self._rank)[: self.sample])
            return [q for q in pool if q in keep]
        return pool

    def _rank(self, query_id: str) -> bytes:
        return hashlib.sha256(f"{self.seed}:{query_id}".encode()).digest()

    def _unknown(self, unknown: list[str], pool: list[str], what: str) -> str:
        shown = ", ".join(repr(q) for q in unknown[:_SHOWN])
        more = f" and {len(unknown) - _SHOWN} more" if len(unknown) > _SHOWN else ""
        given = f"listed in {self.file}" if self.file else "given"
        hint = f"; its query ids look like {', '.join(repr(q) for q in pool[:3])}" if pool else ""
        if not self.file and len(self.ids or ()) == 1:
            hint += " (no file of that name exists either)"
        return (
            f"{len(unknown)} of the {len(self.ids or ())} query ids {given} are not queries "
            f"of {what}: {shown}{more}{hint}; give ids of its queries"
        )

    def describe(self, chosen: int, of: int) -> str:
        """The subset in words: ``the first 10 of 300 queries``, ``a sample of 50 of 300
        queries (seed 0)``, ``12 of 300 queries, listed in ids.txt``."""
        if self.first is not None:
            text = f"the first {chosen} of {of} queries"
        elif self.sample is not None:
            text = f"a sample of {chosen} of {of} queries (seed {self.seed})"
        else:
            text = f"{chosen} of {of} queries"
        if self.ids is not None:
            among = f"of the {len(self.ids)} " if self.first or self.sample else ""
            text += f", {among}listed in {self.file}" if self.file else f", {among}given by id"
        return text

    def record(self, chosen: Sequence[str], of: int) -> dict[str, Any]:
        """What ``results.json`` stores (``provenance["queries"]``): ``how`` (in words),
        ``first``, ``sample``, ``seed``, ``file``, ``of`` (the dataset's query count) and
        ``ids`` (the chosen ids, in the dataset's order)."""
        return {
            "how": self.describe(len(chosen), of),
            "first": self.first,
            "sample": self.sample,
            "seed": self.seed if self.sample is not None else None,
            "file": self.file,
            "of": of,
            "ids": list(chosen),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any], *, where: str = "results.json") -> QuerySubset:
        """The subset of exactly the ids a :meth:`record` holds.

        Raises:
            InputError: *record* is not a record (no list of ids), named with *where*.
        """
        ids = record.get("ids") if isinstance(record, Mapping) else None
        if not isinstance(ids, list) or not all(isinstance(q, str) for q in ids):
            raise InputError(
                f"{where}: provenance.queries: not a query subset (no list of query ids); the "
                "file was edited or damaged: run the experiment again"
            )
        return cls(tuple(ids))


def _unique(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))


def query_subset(
    queries: QuerySubset | str | Path | Iterable[str] | None = None,
    *,
    first: int | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> QuerySubset | None:
    """A :class:`QuerySubset` from what a library function or the command line takes, or
    ``None`` when nothing restricts the queries.

    Args:
        queries: a :class:`QuerySubset` (returned as it is; *first*/*sample* must then be
            ``None``), a file of ids or comma-separated ids (:meth:`QuerySubset.parse`), or an
            iterable of ids.
        first: keep the first N (of the ids given, else of every query).
        sample: keep a seeded sample of N.
        seed: the sample's seed.

    Raises:
        InputError: *first* with *sample*, a count below 1, no id, an unreadable file.
    """
    if isinstance(queries, QuerySubset):
        if first is not None or sample is not None:
            raise InputError("give first/sample inside the QuerySubset, not beside it")
        return queries
    if queries is None and first is None and sample is None:
        return None
    if queries is None:
        ids, file = None, None
    elif isinstance(queries, (str, Path)):
        parsed = QuerySubset.parse(str(queries))
        ids, file = parsed.ids, parsed.file
    else:
        ids, file = _unique(str(q) for q in queries), None
    return QuerySubset(ids, file, first, sample, seed)
