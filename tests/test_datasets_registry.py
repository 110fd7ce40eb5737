"""Dataset registry: listing, lookup, suggestions, options, local folders."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nuggetbench.datasets import beir, registry
from nuggetbench.datasets.registry import Entry, dataset_info, list_datasets, load_dataset
from nuggetbench.errors import DatasetError, UnknownNameError


def _write_beir(folder, *, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\n"):
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "T", "text": "alpha beta"})
        + "\n"
        + json.dumps({"_id": "d2", "title": "", "text": "gamma"})
        + "\n",
        encoding="utf-8",
    )
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "alpha"}) + "\n", encoding="utf-8"
    )
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return folder


def test_listing_has_every_beir_id_and_agrees_with_the_loader():
    ids = list_datasets("beir/*")
    assert len(beir.BEIR_NAMES) == 15 and len(beir.CQADUPSTACK_FORUMS) == 12
    assert ids == sorted(beir.dataset_ids())
    assert "beir/cqadupstack/wordpress" in ids and "beir/msmarco" in ids
    assert set(beir.MD5) == set(beir.BEIR_NAMES)


def test_listing_imports_no_loader_and_nothing_heavy():
    code = (
        "import sys\n"
        "from nuggetbench.datasets import list_datasets\n"
        "ids = list_datasets()\n"
        "assert 'beir/scifact' in ids, ids\n"
        "heavy = [m for m in ('bm25s', 'torch', 'sentence_transformers', 'transformers', 'datasets',\n"
        "         'nuggetbench.datasets.beir', 'nuggetbench.datasets.download', 'tqdm') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_unknown_id_suggests_the_nearest():
    with pytest.raises(UnknownNameError) as exc:
        load_dataset("beir/scifakt")
    assert "beir/scifact" in str(exc.value)
    with pytest.raises(UnknownNameError) as exc:
        dataset_info("beir/nfcorpsu")
    assert "beir/nfcorpus" in str(exc.value)
    with pytest.raises(UnknownNameError):
        registry.fetch("nonsense/thing")


def test_unknown_loader_option_is_named(tmp_path, monkeypatch):
    _write_beir(tmp_path / "beir" / "scifact")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path))
    with pytest.raises(UnknownNameError) as exc:
        load_dataset("beir/scifact", splt="test")
    assert "splt" in str(exc.value) and "split" in str(exc.value)


def test_dataset_info_without_loading():
    info = dataset_info("beir/quora")
    assert info["remove_self_hits"] is True and "self_hit_policy" in info
    assert info["url"].endswith("/quora.zip") and info["md5"] == beir.MD5["quora"]
    assert info["folder"] is None  # not on disk in the isolated home
    assert dataset_info("beir/scifact")["remove_self_hits"] is False
    assert dataset_info("beir/msmarco")["default_split"] == "dev"
    assert dataset_info("beir/cqadupstack/gis")["md5"] == beir.MD5["cqadupstack"]


def test_local_folder_path_loads_directly(tmp_path):
    folder = _write_beir(tmp_path / "mydata")
    ds = load_dataset(str(folder))
    assert ds.id == str(folder) and ds.split == "test"
    assert len(ds.corpus) == 2 and list(ds.queries) == ["q1"] and ds.qrels["q1"] == {"d1": 1}
    assert ds.default_measures == ["nDCG@10", "R@100", "RR@10", "AP"]
    assert ds.remove_self_hits is False
    ds2 = load_dataset(folder, remove_self_hits=True)
    assert ds2.remove_self_hits is True
    with pytest.raises(UnknownNameError):
        load_dataset(folder, chunker="x")


def test_local_folder_missing_split_lists_available(tmp_path):
    folder = _write_beir(tmp_path / "mydata")
    with pytest.raises(Exception) as exc:
        load_dataset(str(folder), split="dev")
    assert "test" in str(exc.value)


def test_registering_a_family_is_one_entry(tmp_path, monkeypatch):
    _write_beir(tmp_path / "x")
    module = tmp_path / "nb_fake_loader.py"
    module.write_text(
        "from nuggetbench.datasets.beir import load_folder\n"
        f"def load(dataset_id, *, split='test'):\n    return load_folder({str(tmp_path / 'x')!r}, split=split, dataset_id=dataset_id)\n"
        "def info(dataset_id):\n    return {'custom': True}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "REGISTRY", list(registry.REGISTRY))
    registry.register(Entry("fake/*", "nb_fake_loader:load", ids=("fake/one", "fake/two")))
    assert "fake/one" in list_datasets() and "fake/three" not in list_datasets()
    assert load_dataset("fake/two").id == "fake/two"
    assert dataset_info("fake/one")["custom"] is True
    assert registry.fetch("fake/one") is None  # nothing to download
    with pytest.raises(UnknownNameError):
        load_dataset("fake/three")


def test_cqadupstack_as_a_whole_names_an_absent_forum(tmp_path, monkeypatch):
    # issue 12: the whole loads as its 12 forums (tests/test_cqadupstack_whole.py); absent, the
    # error names the forum folder to fill
    with pytest.raises(DatasetError) as exc:
        load_dataset("beir/cqadupstack")
    assert "beir/cqadupstack/android" in str(exc.value)


def test_not_a_folder(tmp_path):
    with pytest.raises((DatasetError, UnknownNameError)):
        load_dataset(str(tmp_path / "absent"))
