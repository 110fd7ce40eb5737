"""``birco/<name>`` datasets: pools, objectives, safe loading, offline errors, registry."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

from nuggetbench.datasets import dataset_info, list_datasets, load_dataset
from nuggetbench.errors import DownloadError, FormatError, UnknownNameError


def _write_split(root, name="wtb", split="test", payload=None, obj=None):
    folder = root / "birco" / name
    folder.mkdir(parents=True, exist_ok=True)
    if payload is None:
        payload = {
            "query": {np.str_("q2"): "second query", np.str_("q1"): "first query"},
            "corpus": {"a": "alpha", "b": "beta", "c": "gamma", "d": "delta"},
            "qrel": {np.str_("q2"): {"a": 1, "c": 0}, np.str_("q1"): {"b": 2, "c": 1, "d": 0}},
        }
    path = folder / f"{split}_set.pickle"
    path.write_bytes(pickle.dumps(obj if obj is not None else payload, protocol=4))
    return path


def test_registered_and_listed():
    ids = list_datasets("birco/*")
    assert ids == [
        "birco/arguana",
        "birco/clinical-trial",
        "birco/doris-mae",
        "birco/relic",
        "birco/wtb",
    ]
    info = dataset_info("birco/relic")
    assert info["hf_mirror"] == "mteb/BIRCO-Relic-Test" and "masked" in info["objective"]
    with pytest.raises(UnknownNameError, match="birco/wtb"):
        load_dataset("birco/wbt")


def test_pools_grade_zero_objective_and_order(tmp_path, monkeypatch):
    _write_split(tmp_path)
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path))
    ds = load_dataset("birco/wtb")
    assert ds.split == "test" and ds.default_profile == "birco"
    assert ds.qrels.to_dict() == {"q1": {"b": 2, "c": 1, "d": 0}, "q2": {"a": 1, "c": 0}}
    assert {q: set(p) for q, p in ds.doc_filter.items()} == {
        "q1": {"b", "c", "d"},
        "q2": {"a", "c"},
    }
    assert list(ds.queries) == ["q2", "q1"]  # BIRCO's order, used by its bootstrap
    assert ds.queries["q1"] == "first query" and ds.corpus["d"].text == "delta"
    assert ds.objective.startswith("The query has this format")
    assert load_dataset("birco/wtb", objective="rank books").objective == "rank books"
    assert "RRmax@10" in ds.default_measures


def test_dev_split_and_missing_split(tmp_path, monkeypatch):
    _write_split(tmp_path, name="relic", split="dev")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path))
    assert load_dataset("birco/relic", split="dev").split == "dev"
    with pytest.raises(DownloadError) as err:
        load_dataset("birco/relic")  # no test_set.pickle, offline
    msg = str(err.value)
    assert "NUGGETBENCH_OFFLINE" in msg and "test_set.pickle" in msg and "birco/relic" in msg
    with pytest.raises(UnknownNameError):
        load_dataset("birco/relic", split="train")


def test_malicious_dataset_pickle_is_refused(tmp_path, monkeypatch):
    target = tmp_path / "written.txt"

    class Evil:
        def __reduce__(self):
            return (open, (str(target), "w"))

    _write_split(tmp_path, obj={"query": {}, "corpus": {}, "qrel": Evil()})
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path))
    with pytest.raises(FormatError, match="open"):
        load_dataset("birco/wtb")
    assert not target.exists()


def test_inconsistent_content_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path))
    _write_split(tmp_path, obj=[1, 2])
    with pytest.raises(FormatError, match="'query', 'corpus', 'qrel'"):
        load_dataset("birco/wtb")
    _write_split(
        tmp_path, payload={"query": {"q": "t"}, "corpus": {"a": "x"}, "qrel": {"q": {"zz": 1}}}
    )
    with pytest.raises(FormatError, match="'zz'"):
        load_dataset("birco/wtb")


@pytest.mark.realdata
def test_real_birco_test_sets(shared_data, monkeypatch):
    if not (shared_data / "birco").is_dir():
        pytest.skip("no BIRCO data")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    readme = (shared_data / "birco" / "README.upstream.md").read_text(encoding="utf-8")
    norm = re.sub(r"\s+", " ", readme)
    expected = {
        "arguana": 100,
        "clinical-trial": 50,
        "relic": 100,
        "wtb": 100,
    }  # README / datasets readme
    for name, n_queries in expected.items():
        ds = load_dataset(f"birco/{name}")
        assert len(ds.queries) == n_queries == len(ds.doc_filter)
        assert ds.qrels.n_judgments == sum(len(p) for p in ds.doc_filter.values())
        assert (
            re.sub(r"\s+", " ", ds.objective) in norm
        )  # the quoted objective is the upstream text
        assert min(ds.qrels.n_relevant().values()) >= 1
