"""nuggetbench: trustworthy retrieval evaluation on document-, nugget- and span-judged benchmarks.

Importing the package is cheap: heavy libraries (torch, sentence-transformers, bm25s, datasets)
load only when a component that needs them is used. ``dir(nuggetbench)`` lists the public API
(``tests/test_public_api.py`` pins it).
"""

from nuggetbench._version import __version__

# public name -> "module:attribute", imported on first use
_LAZY = {
    # values
    "Run": "nuggetbench.data:Run",
    "Qrels": "nuggetbench.data:Qrels",
    "Queries": "nuggetbench.data:Queries",
    "Corpus": "nuggetbench.data:Corpus",
    "Document": "nuggetbench.data:Document",
    "Dataset": "nuggetbench.datasets:Dataset",
    "Results": "nuggetbench.measures:Results",
    "Experiment": "nuggetbench.experiment:Experiment",
    "ComparisonReport": "nuggetbench.compare:ComparisonReport",
    # reading and writing (read_* detect the format; load_* are the older names)
    "read_run": "nuggetbench.data:read_run",
    "read_qrels": "nuggetbench.api:read_qrels",
    "load_run": "nuggetbench.data:read_run",
    "load_qrels": "nuggetbench.api:load_qrels",
    "read_results": "nuggetbench.measures:read_results",
    "write_run": "nuggetbench.data:write_run",
    "write_qrels": "nuggetbench.data:write_qrels",
    # doing
    "evaluate": "nuggetbench.api:evaluate",
    "compare_runs": "nuggetbench.api:compare_runs",
    "run_experiment": "nuggetbench.experiment:run_experiment",
    "load_dataset": "nuggetbench.datasets:load_dataset",
    "list_datasets": "nuggetbench.datasets:list_datasets",
    "parse_measure": "nuggetbench.measures:parse_measure",
    "parse_retriever": "nuggetbench.retrieval:parse_retriever",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'nuggetbench' has no attribute {name!r}")
    import importlib

    module, attr = target.split(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
