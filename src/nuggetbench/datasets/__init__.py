"""Datasets: a registry of ids -> loaders, verified downloads, and the :class:`Dataset` value.

``load_dataset("beir/scifact")`` finds the folder in ``NUGGETBENCH_DATA`` or the home (or
downloads it), and returns a :class:`Dataset`; ``list_datasets()`` imports no loader.
"""

from nuggetbench.datasets.dataset import Dataset, remove_self_hits
from nuggetbench.datasets.family import DatasetFamily, JudgedCorpus, Target
from nuggetbench.datasets.registry import (
    Entry,
    dataset_groups,
    dataset_info,
    dataset_patterns,
    ensure_local,
    family_of,
    fetch,
    is_dataset_id,
    judge_corpus,
    list_datasets,
    load_dataset,
    load_target,
    local_folder,
    register,
)

__all__ = [
    "Dataset",
    "DatasetFamily",
    "JudgedCorpus",
    "Target",
    "family_of",
    "is_dataset_id",
    "judge_corpus",
    "load_target",
    "Entry",
    "dataset_groups",
    "dataset_info",
    "dataset_patterns",
    "local_folder",
    "ensure_local",
    "fetch",
    "list_datasets",
    "load_dataset",
    "register",
    "remove_self_hits",
]
