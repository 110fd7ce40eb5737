"""The ``freshstack/<topic>`` datasets, on synthetic local files (no network)."""

from __future__ import annotations

import json
import sys
import types

import pytest

from nuggetbench.datasets import dataset_info, list_datasets, load_dataset
from nuggetbench.datasets import freshstack as fs
from nuggetbench.errors import DatasetError, DownloadError, UnknownNameError

ROWS = [
    {
        "query_id": "12",
        "query_title": "How to X?",
        "query_text": "I tried Y.",
        "answer_text": "Use Z.",
        "nuggets": [
            {
                "_id": "12_0",
                "text": "Z exists",
                "relevant_corpus_ids": ["c1", "c2"],
                "non_relevant_corpus_ids": ["c3"],
            },
            {
                "_id": "12_1",
                "text": "Z needs W",
                "relevant_corpus_ids": ["c2"],
                "non_relevant_corpus_ids": [],
            },
        ],
    },
    {
        "query_id": "123",
        "query_title": "Other",
        "query_text": "question",
        "answer_text": "answer",
        "nuggets": [
            {
                "_id": "123_0",
                "text": "fact",
                "relevant_corpus_ids": ["c4"],
                "non_relevant_corpus_ids": [],
            }
        ],
    },
    {
        "query_id": "7",
        "query_title": "No nuggets",
        "query_text": "q",
        "answer_text": "a",
        "nuggets": [],
    },
]
CORPUS = [{"_id": f"c{i}", "title": f"file{i}.py", "text": f"chunk {i}"} for i in range(1, 6)]


def _fill(folder, rows=ROWS, corpus=CORPUS):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    return folder


def test_registered_ids():
    ids = list_datasets("freshstack/*")
    assert ids == sorted(
        f"freshstack/{t}" for t in ("langchain", "yolo", "laravel", "angular", "godot")
    )
    info = dataset_info("freshstack/yolo")
    assert info["default_measures"] == ["alpha_nDCG@10", "Coverage@20", "R@50"]
    assert info["default_profile"] == "freshstack"
    assert fs.QUERIES_REVISION in info["queries"]


def test_load_from_home(_isolated_home):
    _fill(_isolated_home / "freshstack" / "langchain")
    ds = load_dataset("freshstack/langchain")
    assert ds.default_measures == ["alpha_nDCG@10", "Coverage@20", "R@50"]
    assert ds.default_profile == "freshstack"
    assert sorted(ds.queries) == ["12", "123"]  # the query without nuggets is not evaluated
    assert ds.queries["12"] == "How to X? I tried Y."
    assert ds.qrels["12"] == {"c1": 1, "c2": 2, "c3": 0}  # number of supported nuggets
    assert ds.qrels.nuggets.query_ids == ["12", "123"]
    assert [n.nugget_id for n in ds.qrels.nuggets.nuggets_of("12")] == ["12_0", "12_1"]
    assert ds.corpus["c2"].title == "file2.py" and len(ds.corpus) == 5


def test_query_fields(_isolated_home):
    _fill(_isolated_home / "freshstack" / "godot")
    assert load_dataset("freshstack/godot", query_field="answer").queries["12"] == "Use Z."
    assert (
        load_dataset("freshstack/godot", query_field="nuggets").queries["12"]
        == "Z exists\nZ needs W"
    )
    with pytest.raises(UnknownNameError, match="nuggets"):
        load_dataset("freshstack/godot", query_field="nugget")


def test_data_folders_are_searched_first(_isolated_home, tmp_path, monkeypatch):
    _fill(_isolated_home / "freshstack" / "yolo")
    other = ROWS[:1]
    _fill(tmp_path / "ro" / "freshstack" / "yolo", rows=other)
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path / "ro"))
    assert sorted(load_dataset("freshstack/yolo").queries) == ["12"]


def test_offline_error_names_the_folder(_isolated_home):
    with pytest.raises(DownloadError, match=r"freshstack/angular.*queries\.jsonl.*corpus\.jsonl"):
        load_dataset("freshstack/angular")
    with pytest.raises(DatasetError, match="not on disk"):
        load_dataset("freshstack/angular", download=False)
    with pytest.raises(UnknownNameError, match="freshstack/laravel"):
        fs.load("freshstack/laravell")


def test_fetch_uses_pinned_revisions(_isolated_home, monkeypatch):
    calls = []

    def fake_load_dataset(repo, config, split, revision):
        calls.append((repo, config, split, revision))
        return [dict(r) for r in (ROWS if "queries" in repo else CORPUS)]

    monkeypatch.setitem(
        sys.modules, "datasets", types.SimpleNamespace(load_dataset=fake_load_dataset)
    )
    monkeypatch.setenv("NUGGETBENCH_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    ds = load_dataset("freshstack/laravel")
    assert calls == [
        (fs.QUERIES_REPO, "laravel", "test", fs.QUERIES_REVISION),
        (fs.CORPUS_REPO, "laravel", "train", fs.CORPUS_REVISION),
    ]
    assert (_isolated_home / "freshstack" / "laravel" / "queries.jsonl").exists()
    assert ds.qrels["123"] == {"c4": 1}
    assert ds.metadata["queries_repo"].endswith(fs.QUERIES_REVISION)
