"""How the sharded indexes run their per-shard work: in this process, or on a cluster.

A *mapper* runs one function over a list of calls and returns the results in call order::

    mapper(fn, calls, *, common, sizes, desc, show_progress) -> list

``fn(*call, **common)`` is computed for every ``call`` in *calls* (tuples of arguments); *common*
holds the arguments every call shares (sent once to a cluster); *sizes* gives the documents each
call covers, for the progress bar (documents/s, ETA) titled *desc*. The functions given to a
mapper are module-level functions of the sharded indexes (``bm25.shard_build``, ``bm25.sharded``, ``models.topk``), each one
idempotent: it writes its shard's files atomically and its ``.done`` marker last, or only returns
values, so running a call twice (a retried task) gives the same files and the same result.

:func:`serial_map` runs the calls here, one after the other; :class:`~.distributed.RayMapper`
runs them as Ray tasks (``nuggetbench run --ray``). :func:`using` sets the mapper that indexes
built or searched inside its block use (:func:`active`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from nuggetbench.retrieval.models.loading import progress_bar


class Mapper(Protocol):
    """Runs ``fn(*call, **common)`` for each call; results in call order."""

    def __call__(
        self,
        fn: Callable[..., Any],
        calls: Sequence[tuple],
        *,
        common: dict[str, Any] | None = None,
        sizes: Sequence[int] | None = None,
        desc: str = "",
        show_progress: bool = False,
    ) -> list[Any]: ...


def serial_map(
    fn: Callable[..., Any],
    calls: Sequence[tuple],
    *,
    common: dict[str, Any] | None = None,
    sizes: Sequence[int] | None = None,
    desc: str = "",
    show_progress: bool = False,
) -> list[Any]:
    """The calls one after the other in this process (see the module's docstring)."""
    common = common or {}
    bar = progress_bar(show_progress, int(sum(sizes)) if sizes else len(calls), desc)
    out = []
    try:
        for j, call in enumerate(calls):
            out.append(fn(*call, **common))
            if bar is not None:
                bar.update(sizes[j] if sizes else 1)
    finally:
        if bar is not None:
            bar.close()
    return out


_ACTIVE: list[Mapper] = []


def active() -> Mapper | None:
    """The mapper set by the innermost :func:`using` block (``None``: in this process)."""
    return _ACTIVE[-1] if _ACTIVE else None


@contextmanager
def using(mapper: Mapper | None) -> Iterator[Mapper | None]:
    """Within the block, the sharded indexes built and searched run their per-shard work with
    *mapper* (``None`` changes nothing)."""
    if mapper is None:
        yield None
        return
    _ACTIVE.append(mapper)
    try:
        yield mapper
    finally:
        _ACTIVE.remove(mapper)


__all__ = ["Mapper", "active", "serial_map", "using"]
