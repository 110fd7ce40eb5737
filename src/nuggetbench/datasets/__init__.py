"""Datasets: a registry of ids -> loaders, verified downloads, and the :class:`Dataset` value.

``load_dataset("beir/scifact")`` finds the folder in ``NUGGETBENCH_DATA`` or the home (or
downloads it), and returns a :class:`Dataset`; ``list_datasets()`` imports no loader.
"""

from .base import Dataset, remove_self_hits
from .registry import Entry, dataset_info, fetch, list_datasets, load_dataset, register

__all__ = [
    "Dataset",
    "Entry",
    "dataset_info",
    "fetch",
    "list_datasets",
    "load_dataset",
    "register",
    "remove_self_hits",
]
