"""Vectorised membership and position look-ups over id columns (hash joins, no Python loop).

Large inputs go through ``pyarrow.compute`` (``index_in``/``is_in``: one hash table, no uniqueness
check); small ones through a Python dict or set (fewer than :data:`SMALL` values: importing pandas
would cost more than the look-up), the others, or values pyarrow cannot take (a ``str`` holding a
lone surrogate), through ``pandas.Index.get_indexer``/``numpy.isin``. Both answer the same question exactly (string equality
of ``str`` values is equality of their UTF-8 bytes), so the result never depends on the path.

Columns a fast reader parsed carry their pyarrow form (:func:`share_strings`): no conversion back
to pyarrow, and ids of at most 8 bytes (most document ids: ``D0245237``, ``7067032``) are
joined as integers (:func:`short_keys`: their bytes as a big-endian number) by a binary search,
several times faster than a hash table of strings; integer keys (``is_in``) too.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

import numpy as np

from nuggetbench._runtime import idle_cpus, in_background, usable_cpus
from nuggetbench.data import arrow

__all__ = [
    "index_in",
    "is_in",
    "order_by_code_and_id",
    "share_strings",
    "shared_strings",
    "arrow_strings",
    "as_objects",
    "objects_at",
    "is_arrow",
    "subset",
    "short_keys",
    "strings_of_keys",
    "factorize_keys",
    "ARROW_MIN",
    "SORT_MAX",
]

ARROW_MIN = 50_000
"""Below this many values pyarrow is used only if something already imported it."""


SMALL = 20_000
"""Below this many values (and without pyarrow) a Python dict or set answers."""


def _use_arrow(n: int) -> bool:
    """Whether pyarrow's kernels serve a look-up of *n* ids: from :data:`ARROW_MIN` ids, or for
    fewer once they are loaded (``pyarrow._compute``; else pandas would be imported)."""
    return n >= ARROW_MIN or "pyarrow._compute" in sys.modules


_SHARED: dict[int, list[Any]] = {}
"""``id(array) -> [weak reference to the array, its pyarrow string array, its short keys]``
(the keys computed when first asked for, ``False`` before): see :func:`share_strings`."""


def share_strings(values: np.ndarray, strings: Any) -> None:
    """Remember *strings*, a pyarrow string array equal to *values* (object (n,) of ``str``), as
    the pyarrow form of *values* for :func:`arrow_strings`, while *values* lives.

    A fast reader holds the pyarrow form of the id columns it parsed: the look-ups and checks
    then do not convert the ``str`` objects back (each conversion costs as much as a hash join),
    and short ids are compared as integers (:func:`short_keys`). *values* becomes read-only, so
    the two can never differ.
    """
    values.flags.writeable = False
    key = id(values)
    _SHARED[key] = [weakref.ref(values, lambda _, key=key: _SHARED.pop(key, None)), strings, False]


is_arrow = arrow.is_arrow


def as_objects(values: Any) -> np.ndarray:
    """*values* as an object array of ``str``: a pyarrow string array is converted (its pyarrow
    form is then shared with the result, :func:`share_strings`); an ndarray is returned as is."""
    if not is_arrow(values):
        return values
    objects = arrow.to_numpy(values).astype(object, copy=False)
    share_strings(objects, values)
    return objects


def objects_at(values: Any, index: Any) -> np.ndarray:
    """``values[index]`` as an object array of ``str`` (*index*: int array (m,)); a pyarrow
    array is indexed first and only those ids are converted."""
    index = np.asarray(index, dtype=np.int64)
    if not is_arrow(values):
        return np.asarray(values, dtype=object)[index]
    _, pc = arrow.load()
    return arrow.to_numpy(pc.take(values, index)).astype(object, copy=False)


def subset(values: Any, keep: np.ndarray) -> Any:
    """The ids of *values* (object array or pyarrow string array) where the bool (n,) *keep* is
    true, in the same form; *values* itself when every one is kept."""
    if keep.all():
        return values
    if is_arrow(values):
        _, pc = arrow.load()
        return pc.take(values, np.flatnonzero(keep))
    return np.asarray(values, dtype=object)[keep]


def shared_strings(values: Any) -> Any:
    """The pyarrow string array :func:`share_strings` remembered for *values*, else ``None``."""
    shared = _shared(values)
    return None if shared is None else shared[1]


def _shared(values: Any) -> list[Any] | None:
    entry = _SHARED.get(id(values))
    return entry if entry is not None and entry[0]() is values else None


def arrow_strings(values: np.ndarray) -> Any:
    """:func:`.arrow.strings` of *values*, or the array shared by :func:`share_strings`
    (*values* itself when it is a pyarrow array already).

    Raises:
        As :func:`.arrow.strings` (a value that is not a ``str``, a lone surrogate).
    """
    shared = _shared(values)
    if shared is not None:
        return shared[1]
    pa, _ = arrow.load()
    if isinstance(values, pa.Array):
        return values
    return arrow.strings(values)


def _shared_keys(values: np.ndarray) -> np.ndarray | None:
    """:func:`short_keys` of the strings shared for *values* (computed once), else ``None``."""
    shared = _shared(values)
    if shared is None:
        return None
    if shared[2] is False:
        shared[2] = short_keys(shared[1])
    return shared[2]


_KEEP = np.array([((1 << 64) - 1) ^ ((1 << (8 * (8 - n))) - 1) for n in range(9)], np.uint64)
"""``_KEEP[n]``: the mask of the first *n* bytes of a big-endian 64-bit word."""


def short_keys(strings: Any) -> np.ndarray | None:
    """One integer per id of the pyarrow string array *strings*, equal for equal ids and ordered
    as the ids (uint64 (n,)), when every id has at most 8 UTF-8 bytes and no NUL byte; else
    ``None``.

    The key is the id's bytes read as a big-endian number, zero padded: without NUL bytes two
    different ids differ in a byte where one of them has a non-zero byte, and the byte order
    of UTF-8 is the code point order ``str`` comparison uses. Integer keys are sorted and
    searched by numpy several times faster than strings are hashed.
    """
    pa, _ = arrow.load()
    if not isinstance(strings, pa.Array) or strings.type != pa.string() or strings.null_count:
        return None
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], np.int32, n + 1, strings.offset * 4)
    lengths = np.diff(offsets)
    if n == 0 or int(lengths.max()) > 8:
        return None if n else np.zeros(0, dtype=np.uint64)
    start, end = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(strings.buffers()[2], np.uint8, end) if end else np.zeros(0, np.uint8)
    if not data[start:].all():
        return None  # a NUL byte: "a" and "a\0" would share a key
    heads = offsets[:-1]
    # the 8 bytes at each id's start, read in place (no padded copy of the column); the ids
    # whose 8 bytes would run past the data's end are read from a zero-padded copy of the tail
    safe = int(np.searchsorted(heads, end - 8, side="right"))
    if safe == 0:
        keys = np.empty(n, dtype="<u8")
    else:
        keys = _words(data, heads if safe == n else np.minimum(heads, end - 8))
    if safe < n:
        first = int(heads[safe])
        tail = np.zeros(end - first + 8, dtype=np.uint8)
        tail[: end - first] = data[first:end]
        keys[safe:] = _words(tail, heads[safe:] - first)
    keys.byteswap(inplace=True)  # the bytes read little-endian -> read big-endian
    keys = keys.astype(np.uint64, copy=False)
    np.bitwise_and(keys, _KEEP[lengths], out=keys)
    return keys


def _words(data: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian 64-bit words of uint8 *data* starting at the positions *at* (each at
    most ``len(data) - 8``)."""
    words = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    return words[at]  # fancy indexing: np.take(..., out=) of unaligned words is 10x slower


def strings_of_keys(keys: np.ndarray) -> Any:
    """The ids whose :func:`short_keys` are *keys* (a pyarrow string array), or ``None`` when
    they cannot be rebuilt exactly (the round trip through :func:`short_keys` is checked)."""
    pa, pc = arrow.load()
    try:  # numpy's fixed-width bytes drop the zero padding
        strings = pc.cast(_binary_of_keys(keys), pa.string())
    except (pa.ArrowException, ValueError):
        return None
    back = short_keys(strings)
    return strings if back is not None and np.array_equal(back, keys) else None


def _binary_of_keys(keys: np.ndarray) -> Any:
    """The ids whose :func:`short_keys` are *keys* as a pyarrow binary array: each key's
    big-endian bytes up to its first NUL (an id holds no NUL byte)."""
    pa, _ = arrow.load()
    grid = keys.astype(">u8").view(np.uint8).reshape(len(keys), 8)
    present = grid != 0
    offsets = np.zeros(len(keys) + 1, dtype=np.int32)
    np.cumsum(present.sum(axis=1), out=offsets[1:])
    data = np.ascontiguousarray(grid[present])
    return pa.Array.from_buffers(
        pa.binary(), len(keys), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


SORT_MAX = 1 << 21
"""Up to this many keys :func:`factorize_keys` sorts them; above, it hashes them (an argsort's
cost grows faster than a hash table's) and sorts the distinct ones only."""

SPLIT_MIN = 1 << 22
"""From this many keys (and two usable CPUs) :func:`factorize_keys` splits them by value into
two halves factorised in two threads (10M keys: 1.6-1.8 s -> 0.85-1.15 s here)."""

SPLIT_IDLE_MIN = 1 << 19
"""From this many keys :func:`factorize_keys` splits them too when a CPU is idle
(:func:`nuggetbench._runtime.idle_cpus`): reading 1M run lines alone, 1.08-1.12 -> 0.81-0.96 s with the
evaluation; beside the judgments' reader (``evaluate_dataset``) the split cost time and memory."""


def factorize_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, codes)`` of integer *keys* (n,): ``first`` int64 (u,) the position of one
    occurrence of each distinct key, in ascending key order; ``codes`` int64 (n,) with
    ``keys[first][codes] == keys``.

    Many keys are split at a pivot (the median of a sample) into the keys below it and the
    others: the two parts share no key, so each is factorised alone, in its own thread, and the
    upper part's codes follow the lower part's."""
    split = len(keys) >= SPLIT_MIN or (len(keys) >= SPLIT_IDLE_MIN and idle_cpus() >= 1)
    if not split or usable_cpus() < 2:
        return _factorize_part(keys)
    sample = np.sort(keys[:: max(1, len(keys) // 4096)])
    low = keys < sample[len(sample) // 2]
    where = [np.flatnonzero(low), np.flatnonzero(~low)]
    del low
    if not len(where[0]):  # the pivot is the smallest key: nothing to split
        return _factorize_part(keys)
    upper = in_background(_factorize_part, keys[where[1]])
    first_low, codes_low = _factorize_part(keys[where[0]])
    first_high, codes_high = upper()
    codes = np.empty(len(keys), dtype=np.int64)
    codes[where[0]] = codes_low
    del codes_low
    codes_high += len(first_low)
    codes[where[1]] = codes_high
    return np.concatenate([where[0][first_low], where[1][first_high]]), codes


def _factorize_part(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`factorize_keys` in one thread."""
    if len(keys) > SORT_MAX:
        pa, pc = arrow.load()
        encoded = pc.dictionary_encode(arrow.from_numpy(keys))
        distinct = arrow.to_numpy(encoded.dictionary)
        hashed = arrow.to_numpy(encoded.indices).astype(np.int64)
        del encoded
        by_key = np.argsort(distinct)
        rank = np.empty(len(distinct), dtype=np.int64)
        rank[by_key] = np.arange(len(distinct), dtype=np.int64)
        some = np.empty(len(distinct), dtype=np.int64)
        some[hashed] = np.arange(len(keys), dtype=np.int64)  # any occurrence will do
        return some[by_key], rank[hashed]
    order = np.argsort(keys)
    ordered = keys[order]
    head = np.empty(len(keys), dtype=bool)
    head[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=head[1:])
    codes = np.empty(len(keys), dtype=np.int64)
    codes[order] = np.cumsum(head) - 1
    return order[head].astype(np.int64, copy=False), codes


def _search(ordered: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)``, the *values* searched
    in ascending order when they are not many more than *ordered* (each search starts where
    the last one ended: several times faster than searching a large array in random order;
    sorting many more values than the array holds would cost more than it saves)."""
    as_given = len(values) < 4096 or len(values) > 2 * len(ordered)
    if as_given or bool((values[1:] >= values[:-1]).all()):  # or in order (factorised keys)
        return np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    by_value = np.argsort(values)
    at = np.empty(len(values), dtype=np.int64)
    at[by_value] = np.searchsorted(ordered, values[by_value])
    return np.minimum(at, len(ordered) - 1)


def _index_in_keys(values: np.ndarray, uniques: np.ndarray) -> np.ndarray:
    """:func:`index_in` over integer keys (*uniques* distinct): a binary search."""
    order = None if bool((uniques[1:] > uniques[:-1]).all()) else np.argsort(uniques)
    ordered = uniques if order is None else uniques[order]
    at = _search(ordered, values)
    found = ordered[at] == values
    position = at if order is None else order[at]
    return np.where(found, position, -1).astype(np.int64, copy=False)


def index_in(values: np.ndarray, uniques: np.ndarray) -> np.ndarray:
    """Position of each of *values* in *uniques* (distinct ids), ``-1`` where absent.

    Args:
        values: object (n,) of ``str``.
        uniques: object (m,) of distinct ``str``.

    Returns:
        int64 (n,).
    """
    if not len(values) or not len(uniques):
        return np.full(len(values), -1, dtype=np.int64)
    if is_arrow(values) or is_arrow(uniques):  # a fast reader's ids, kept in pyarrow
        found = _index_in_arrow(values, uniques)
        if found is not None:
            return found
        values, uniques = as_objects(values), as_objects(uniques)
    values = np.asarray(values, dtype=object)
    uniques = np.asarray(uniques, dtype=object)
    value_keys = _shared_keys(values)
    unique_keys = _shared_keys(uniques) if value_keys is not None else None
    if unique_keys is not None:
        return _index_in_keys(value_keys, unique_keys)
    if _use_arrow(len(values) + len(uniques)):
        try:
            _, pc = arrow.load()

            if len(uniques) > 2 * len(values):
                return _index_in_swapped(pc, values, uniques)
            return _index_in_hashed(pc, values, uniques)
        except (UnicodeEncodeError, TypeError, ValueError, ImportError):
            pass  # e.g. a lone surrogate: pandas compares the str values directly
    elif len(values) + len(uniques) < SMALL:  # a dict: no pandas import for a few ids
        position = {u: i for i, u in enumerate(uniques.tolist())}
        return np.fromiter((position.get(v, -1) for v in values.tolist()), np.int64, len(values))
    import pandas as pd

    return pd.Index(uniques, dtype=object).get_indexer(values).astype(np.int64, copy=False)


def _keys_of(values: Any) -> np.ndarray | None:
    """:func:`short_keys` of a pyarrow array, or of the strings shared for an object array."""
    return short_keys(values) if is_arrow(values) else _shared_keys(values)


def _index_in_arrow(values: Any, uniques: Any) -> np.ndarray | None:
    """:func:`index_in` when either side is a pyarrow string array: by integer keys when both
    sides' ids are short, else by pyarrow's hash look-up; ``None``: use the object path."""
    value_keys = _keys_of(values)
    unique_keys = _keys_of(uniques) if value_keys is not None else None
    if unique_keys is not None:
        return _index_in_keys(value_keys, unique_keys)
    try:
        _, pc = arrow.load()
        return _index_in_hashed(pc, values, uniques)
    except (UnicodeEncodeError, TypeError, ValueError, ImportError):
        return None


def _index_in_hashed(pc, values: Any, uniques: Any) -> np.ndarray:
    """:func:`index_in` by pyarrow's hash look-up (a table of *uniques*, probed by *values*).

    Raises:
        As :func:`arrow_strings` (a value that is not a ``str``, a lone surrogate).
    """
    found = pc.index_in(arrow_strings(values), value_set=arrow_strings(uniques))
    return arrow.to_numpy(pc.fill_null(found, -1)).astype(np.int64, copy=False)


def _index_in_swapped(pc, values: np.ndarray, uniques: np.ndarray) -> np.ndarray:
    """:func:`index_in` with the hash table built on the (fewer) distinct *values* and probed by
    *uniques*: each distinct value finds at most one unique (they are distinct), then the
    positions are spread back to *values* through their codes."""
    encoded = pc.dictionary_encode(arrow_strings(values))
    where = pc.index_in(arrow_strings(uniques), value_set=encoded.dictionary)
    where = arrow.to_numpy(pc.fill_null(where, -1)).astype(np.int64, copy=False)
    found = np.flatnonzero(where >= 0)
    position = np.full(len(encoded.dictionary), -1, dtype=np.int64)
    position[where[found]] = found
    return position[arrow.to_numpy(encoded.indices)]


def is_in(values: np.ndarray, value_set: np.ndarray) -> np.ndarray:
    """Whether each of *values* occurs in *value_set* (bool (n,)); int64 keys or ``str`` ids.

    Integer keys are looked up by binary search in the sorted *value_set* (faster than a hash
    table in pyarrow or :func:`numpy.isin`'s sort of both sides)."""
    values = np.asarray(values)
    value_set = np.asarray(value_set)
    if not len(values) or not len(value_set):
        return np.zeros(len(values), dtype=bool)
    if values.dtype.kind in "iu" and value_set.dtype.kind == values.dtype.kind:
        ordered = np.sort(value_set)
        return ordered[_search(ordered, values)] == values
    if _use_arrow(len(values) + len(value_set)):
        try:
            pa, pc = arrow.load()

            if values.dtype == object:
                values_a, set_a = arrow_strings(values), arrow_strings(value_set)
            else:
                values_a, set_a = arrow.from_numpy(values), arrow.from_numpy(value_set)
            found = pc.is_in(values_a, value_set=set_a)
            return arrow.to_numpy(found).astype(bool, copy=False)
        except (UnicodeEncodeError, TypeError, ValueError, ImportError):
            pass
    if values.dtype == object and len(values) + len(value_set) < SMALL:
        members = set(value_set.tolist())  # no pandas import for a few ids
        return np.fromiter((v in members for v in values.tolist()), bool, len(values))
    if values.dtype == object:
        import pandas as pd

        return pd.Index(pd.unique(value_set), dtype=object).get_indexer(values) >= 0
    return np.isin(values, value_set)


def order_by_code_and_id(codes: np.ndarray, ids: np.ndarray) -> np.ndarray | None:
    """Stable order by *codes* ascending, then *ids* ascending as strings, sorted in C++.

    The permutation equals ``np.lexsort((rank of each id among the sorted distinct ids, codes))``:
    pyarrow compares UTF-8 bytes, whose order is the code point order ``str`` comparison uses,
    and its ``sort_indices`` is stable.

    Args:
        codes: int (n,).
        ids: object (n,) of ``str``, or the same as a pyarrow string array.

    Returns:
        int64 (n,), or ``None`` when the input is small or pyarrow cannot take it (then sort with
        :func:`numpy.lexsort` over sorted factor codes).
    """
    if len(ids) < ARROW_MIN and "pyarrow.compute" not in sys.modules:
        return None
    try:
        pa, pc = arrow.load()

        table = pa.table(
            {
                "c": arrow.from_numpy(np.asarray(codes, dtype=np.int64)),
                "i": arrow_strings(ids),
            }
        )
        order = pc.sort_indices(table, sort_keys=[("c", "ascending"), ("i", "ascending")])
    except (UnicodeEncodeError, TypeError, ValueError, ImportError):
        return None  # e.g. a lone surrogate: the caller sorts the str values directly
    return arrow.to_numpy(order).astype(np.int64, copy=False)
