"""Rank files ``{query_id: [doc_id, ...]}`` (best first), as BIRCO's ``rank2metric.py`` reads them.

A rank file is a pickle (read with the restricted unpickler of :mod:`.safepickle`, never plain
:func:`pickle.load`) or a JSON object. It becomes a :class:`~nuggetbench.data.run.Run` whose scores
are ``n, n-1, ..., 1`` so that the ranking rule keeps the file's order.

:func:`check_pools` checks a run against per-query candidate pools (a dataset's ``doc_filter``)
and reports documents ranked outside their query's pool.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.data.formats.safepickle import load_builtin
from nuggetbench.data.run import Run
from nuggetbench.data.source import read_source, short, strip_bom
from nuggetbench.errors import FormatError, InputError

__all__ = [
    "read_rank_file",
    "is_rank_file",
    "looks_like_rank_file",
    "check_pools",
    "filter_to_pools",
    "PoolCheck",
]

_PICKLE_SUFFIXES = {".pickle", ".pkl", ".pck", ".p"}


def _is_pickle(path: Path, head: bytes) -> bool:
    if path.suffix.lower() in _PICKLE_SUFFIXES:
        return True
    return head[:1] == b"\x80"  # protocol 2+ pickles start with PROTO


def _json_starts_with_list(head: bytes) -> bool:
    text = head.decode("utf-8", errors="replace").lstrip()
    if not text.startswith("{"):
        return False
    rest = text[1:].lstrip()
    try:  # the first key, a JSON string that may itself contain ':' or '['
        _, end = json.JSONDecoder().raw_decode(rest)
    except ValueError:
        return False
    rest = rest[end:].lstrip()
    return rest.startswith(":") and rest[1:].lstrip().startswith("[")


def looks_like_rank_file(path: str | Path, data: bytes) -> bool:
    """Whether content *data* (of file *path*) is a rank file: a pickle, or JSON whose first
    value is a list. Only the start of *data* is inspected; nothing is unpickled."""
    return _is_pickle(Path(path), data[:2]) or _json_starts_with_list(data[:4096])


def is_rank_file(path: str | Path) -> bool:
    """Whether the regular file *path* looks like a rank file (see :func:`looks_like_rank_file`).

    Only the start of the file is read; nothing is unpickled. A pipe is never opened here (read
    it once with :func:`.source.read_source` and call :func:`looks_like_rank_file`).
    """
    path = Path(path)
    if not path.is_file():
        return False
    with open(path, "rb") as fh:
        head = fh.read(4096)
    return looks_like_rank_file(path, strip_bom(head))


def read_rank_file(
    path: str | Path,
    *,
    name: str | None = None,
    duplicates: str = "first",
    content: bytes | None = None,
) -> Run:
    """Read ``{query_id: [doc_id, ...]}`` (best first) from a pickle or JSON file as a run.

    Args:
        path: a ``.pickle``/``.pkl`` file (restricted unpickler: builtin containers and numpy
            scalars only) or a JSON file.
        name: the run's name (default: the file's stem).
        duplicates: a list naming a document twice: ``"first"`` (the default; some published
            BIRCO rank files do: the first occurrence keeps its rank, the later ones are
            dropped so the documents below move up one place, and a warning names the query,
            the document and both positions) or ``"error"``. BIRCO's ``rank2metric.py`` scores
            the list as it is: its recall and reciprocal rank (sets and first hits) agree with
            ``"first"`` unless the repeat lies inside the cutoff, where the repeat still takes a
            slot there; its nDCG@10 and AP count a repeated relevant document twice.
        content: the file's bytes when the caller has read them already (a pipe is read once).

    Returns:
        A :class:`Run`; the document at position ``i`` (0-based) of a list of length ``n`` gets
        score ``n - i``. Ids are converted to ``str`` (numpy strings too).

    Raises:
        InputError: the file does not exist.
        FormatError: the pickle names a disallowed global (nothing is executed) or is too large or
            too deep, the JSON is invalid, or the content is not a mapping of query ids to lists of
            doc ids (messages quote at most a short prefix of a value).
        DuplicateError: a list names the same document twice and *duplicates* is ``"error"``
            (the pair is named).
    """
    path = Path(path)
    data_bytes = read_source(path, what="rank") if content is None else content
    if _is_pickle(path, data_bytes[:2]):
        data = load_builtin(data_bytes, source=str(path))
    else:
        try:
            data = json.loads(data_bytes)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            line = getattr(exc, "lineno", None)
            raise FormatError(path, line, f"not valid JSON ({getattr(exc, 'msg', exc)})") from None
        except RecursionError:
            raise FormatError(path, None, "the JSON is nested too deeply for a rank file") from None
    lists = _validate(data, path)
    return Run.from_ranked_lists(
        lists,
        name=name or path.stem,
        metadata={"source": str(path), "format": "rank-lists"},
        source=str(path),
        duplicates=duplicates,
    )


def _validate(data: Any, path: Path) -> dict[str, list[str]]:
    if not isinstance(data, Mapping):
        raise FormatError(
            path,
            None,
            f"a rank file holds {{query_id: [doc_id, ...]}}, found a {type(data).__name__}",
        )
    out: dict[str, list[str]] = {}
    for qid, docs in data.items():
        if isinstance(docs, Mapping):
            raise FormatError(
                path,
                None,
                f"query {short(qid)} maps to a dict ({{doc_id: score}}): that is a scored run, read it "
                "with nuggetbench.read_run (nb.load_run); a rank file maps each query to a list of doc ids",
            )
        if not isinstance(docs, (list, tuple)):
            raise FormatError(
                path,
                None,
                f"query {short(qid)} maps to a {type(docs).__name__}, expected a list of doc ids",
            )
        for d in docs:
            if not isinstance(d, (str, int)) or isinstance(d, bool):
                raise FormatError(
                    path,
                    None,
                    f"query {short(qid)}: doc id {short(d)} is a {type(d).__name__}, expected a string",
                )
        out[str(qid)] = [str(d) for d in docs]
    return out


@dataclass(frozen=True)
class PoolCheck:
    """The result of :func:`check_pools`.

    Attributes:
        outside: ``{query_id: [doc_id, ...]}``: documents ranked for a query outside its pool
            (in rank order).
        unranked: ``{query_id: count}``: number of pool documents a query's ranking leaves out
            (BIRCO expects every pool to be ranked in full).
        without_pool: query ids of the run that have no pool (ignored by pooled evaluation).
    """

    outside: dict[str, list[str]] = field(default_factory=dict)
    unranked: dict[str, int] = field(default_factory=dict)
    without_pool: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no document is ranked outside its pool."""
        return not self.outside

    @property
    def n_outside(self) -> int:
        return sum(len(v) for v in self.outside.values())

    def describe(self, limit: int = 5) -> str:
        """A one-paragraph summary naming up to *limit* offending (query, doc) pairs."""
        parts: list[str] = []
        if self.outside:
            pairs = [(q, d) for q, docs in self.outside.items() for d in docs]
            shown = ", ".join(f"{q!r}: {d!r}" for q, d in pairs[:limit])
            more = f" and {len(pairs) - limit} more" if len(pairs) > limit else ""
            parts.append(
                f"{len(pairs)} ranked document(s) in {len(self.outside)} quer(y/ies) are outside the "
                f"query's candidate pool ({shown}{more})"
            )
        if self.unranked:
            total = sum(self.unranked.values())
            first = ", ".join(f"{q!r} ({n})" for q, n in list(self.unranked.items())[:limit])
            parts.append(
                f"{total} pool document(s) are not ranked, in {len(self.unranked)} quer(y/ies): {first}"
            )
        if self.without_pool:
            shown = ", ".join(repr(q) for q in self.without_pool[:limit])
            parts.append(f"{len(self.without_pool)} run quer(y/ies) have no pool: {shown}")
        return "; ".join(parts) if parts else "every ranked document is in its query's pool"


def check_pools(
    run: Run,
    pools: Mapping[str, Collection[str]],
    *,
    on_outside: str = "error",
    source: str | None = None,
) -> PoolCheck:
    """Check a run against per-query candidate pools (e.g. ``Dataset.doc_filter``).

    Args:
        run: the run (e.g. from :func:`read_rank_file`).
        pools: ``{query_id: collection of doc ids}``; a query's pool lists every document it may rank.
        on_outside: ``"error"`` raises when a document is ranked outside its pool; ``"report"``
            only returns the :class:`PoolCheck`.
        source: the run's file, for the error message.

    Returns:
        A :class:`PoolCheck` listing documents outside the pools, unranked pool documents and
        run queries that have no pool.

    Raises:
        InputError: ``on_outside="error"`` and some document lies outside its pool; the message
            names the query and document ids.
    """
    if on_outside not in ("error", "report"):
        raise InputError(f"on_outside must be 'error' or 'report', got {on_outside!r}")
    qids, starts, docids, _ = run.arrays()
    outside: dict[str, list[str]] = {}
    unranked: dict[str, int] = {}
    without: list[str] = []
    for i, q in enumerate(qids.tolist()):
        pool = pools.get(q)
        if pool is None:
            without.append(q)
            continue
        pool_set = pool if isinstance(pool, (set, frozenset)) else set(pool)
        docs = docids[starts[i] : starts[i + 1]].tolist()
        bad = [d for d in docs if d not in pool_set]
        if bad:
            outside[q] = bad
        missing = len(pool_set) - (len(docs) - len(bad))
        if missing > 0:
            unranked[q] = missing
    check = PoolCheck(outside=outside, unranked=unranked, without_pool=without)
    if outside and on_outside == "error":
        where = f"{source or run.name or 'run'}: "
        raise InputError(
            where
            + check.describe()
            + ". Rank only each query's candidates (the dataset's pools), or drop the others with "
            "nuggetbench.data.formats.rankfile.filter_to_pools"
        )
    return check


def filter_to_pools(run: Run, pools: Mapping[str, Collection[str]]) -> Run:
    """Drop the entries of *run* outside their query's pool (queries without a pool keep nothing)."""
    qids, starts, docids, _ = run.arrays()
    keep = np.zeros(len(docids), dtype=bool)
    for i, q in enumerate(qids.tolist()):
        pool = pools.get(q)
        if pool is None:
            continue
        pool_set = pool if isinstance(pool, (set, frozenset)) else set(pool)
        a, b = int(starts[i]), int(starts[i + 1])
        keep[a:b] = [d in pool_set for d in docids[a:b].tolist()]
    return run.filter_entries(keep)
