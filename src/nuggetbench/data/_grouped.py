"""What ``Run`` and ``Qrels`` share: entries grouped by query id, looked up by binary search."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class QueryGrouped:
    """Mixin for column-wise values grouped by query.

    Subclasses hold ``_qids`` (object array of query ids sorted ascending as strings) and
    ``_starts`` (int64, shape (q+1,)): query *i*'s entries are ``starts[i]:starts[i+1]``.
    """

    __slots__ = ()
    _qids: np.ndarray
    _starts: np.ndarray

    def _index(self, query_id: str) -> int | None:
        """Position of *query_id* in ``_qids``, or ``None``."""
        i = int(np.searchsorted(self._qids, query_id)) if len(self._qids) else 0
        if i < len(self._qids) and self._qids[i] == query_id:
            return i
        return None

    def _span(self, query_id: str) -> slice:
        """The entries of one query; ``KeyError`` when absent."""
        i = self._index(query_id)
        if i is None:
            raise KeyError(query_id)
        return slice(int(self._starts[i]), int(self._starts[i + 1]))

    def __iter__(self) -> Iterator[str]:
        return iter(self._qids.tolist())

    def __len__(self) -> int:
        return len(self._qids)

    def __contains__(self, query_id: object) -> bool:
        return isinstance(query_id, str) and self._index(query_id) is not None

    @property
    def query_ids(self) -> list[str]:
        """Query ids, sorted ascending as strings."""
        return self._qids.tolist()
