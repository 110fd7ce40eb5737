"""nuggetbench: trustworthy retrieval evaluation on document-, nugget- and span-judged benchmarks.

Importing the package is cheap: heavy libraries (torch, sentence-transformers, bm25s, datasets)
load only when a component that needs them is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

_LAZY = {
    "Run": "nuggetbench.data",
    "Qrels": "nuggetbench.data",
    "Queries": "nuggetbench.data",
    "Corpus": "nuggetbench.data",
    "Document": "nuggetbench.data",
    "read_run": "nuggetbench.data",
    "read_qrels": "nuggetbench.data",
    "write_run": "nuggetbench.data",
    "load_run": "nuggetbench.data",
    "load_qrels": "nuggetbench.data",
    "evaluate": "nuggetbench.measures",
    "parse_measure": "nuggetbench.measures",
    "Results": "nuggetbench.measures",
    "load_dataset": "nuggetbench.datasets",
}

if TYPE_CHECKING:  # pragma: no cover
    from .data import (  # noqa: F401
        Corpus,
        Document,
        Qrels,
        Queries,
        Run,
        load_qrels,
        load_run,
        read_qrels,
        read_run,
        write_run,
    )
    from .datasets import load_dataset  # noqa: F401
    from .measures import Results, evaluate, parse_measure  # noqa: F401


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nuggetbench' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = ["__version__", *_LAZY]
