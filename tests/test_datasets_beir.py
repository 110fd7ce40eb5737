"""BEIR datasets from folders: search order, line endings, offline errors, self hits, golden counts."""

from __future__ import annotations

import json
import os

import pytest

from nuggetbench.data import Run
from nuggetbench.datasets import Dataset, load_dataset, remove_self_hits
from nuggetbench.errors import DatasetError, DownloadError


def write_beir(folder, *, newline="\n", corpus=None, queries=None, qrels=None, split="test"):
    """A small BEIR folder: corpus/queries/qrels (header row, chosen line endings)."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = corpus or {
        "d1": ("Title one", "alpha beta"),
        "d2": ("", "gamma delta"),
        "q2": ("", "alpha"),
    }
    queries = queries or {"q1": "alpha", "q2": "gamma", "q9": "unjudged query"}
    qrels = qrels or [("q1", "d1", 1), ("q2", "d2", 2), ("q2", "d1", 0)]
    with open(folder / "corpus.jsonl", "w", encoding="utf-8", newline="") as fh:
        for did, (title, text) in corpus.items():
            fh.write(json.dumps({"_id": did, "title": title, "text": text}) + newline)
    with open(folder / "queries.jsonl", "w", encoding="utf-8", newline="") as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text}) + newline)
    (folder / "qrels").mkdir(exist_ok=True)
    with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="") as fh:
        fh.write("query-id\tcorpus-id\tscore" + newline)
        for q, d, r in qrels:
            fh.write(f"{q}\t{d}\t{r}{newline}")
    return folder


def snapshot(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_lf_and_crlf_folders_load_the_same(tmp_path, monkeypatch, newline):
    write_beir(tmp_path / "data" / "beir" / "scifact", newline=newline)
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path / "data"))
    ds = load_dataset("beir/scifact")
    assert isinstance(ds, Dataset) and ds.id == "beir/scifact" and ds.split == "test"
    assert ds.qrels.to_dict() == {"q1": {"d1": 1}, "q2": {"d2": 2, "d1": 0}}
    assert sorted(ds.queries) == ["q1", "q2"]  # restricted to judged queries
    assert ds.queries["q2"] == "gamma"
    assert ds.corpus["d1"].title == "Title one" and ds.corpus["d2"].text == "gamma delta"
    assert ds.remove_self_hits is False
    assert ds.metadata["md5"] == "5f7d1de60b170fc8027bb7898e2efca1"


def test_data_folders_are_searched_before_home_and_never_written(
    tmp_path, monkeypatch, _isolated_home
):
    first = write_beir(tmp_path / "a" / "beir" / "nfcorpus", queries={"q1": "from a"})
    write_beir(tmp_path / "b" / "beir" / "nfcorpus", queries={"q1": "from b"})
    write_beir(_isolated_home / "beir" / "nfcorpus", queries={"q1": "from home"})
    before = snapshot(tmp_path)
    monkeypatch.setenv(
        "NUGGETBENCH_DATA", os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    )
    ds = load_dataset("beir/nfcorpus")
    assert ds.queries["q1"] == "from a" and ds.metadata["source"] == str(first)
    from nuggetbench.retrieval import parse_retriever

    parse_retriever("bm25").index(ds.corpus).search(ds.queries, 5)  # caches go to the home
    assert snapshot(tmp_path) == before
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path / "absent"))
    assert load_dataset("beir/nfcorpus").queries["q1"] == "from home"


def test_a_folder_without_corpus_is_not_a_hit(tmp_path, monkeypatch, _isolated_home):
    (tmp_path / "a" / "beir" / "fiqa").mkdir(parents=True)  # empty: skipped
    write_beir(tmp_path / "b" / "beir" / "fiqa", queries={"q1": "from b"})
    monkeypatch.setenv(
        "NUGGETBENCH_DATA", os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    )
    assert load_dataset("beir/fiqa").queries["q1"] == "from b"


def test_offline_error_names_the_folder_to_fill(_isolated_home):
    with pytest.raises(DownloadError) as exc:
        load_dataset("beir/trec-covid")
    msg = str(exc.value)
    assert str(_isolated_home / "beir" / "trec-covid") in msg
    assert "NUGGETBENCH_OFFLINE" in msg and "trec-covid.zip" in msg
    with pytest.raises(DatasetError):
        load_dataset("beir/trec-covid", download=False)


def test_msmarco_defaults_to_dev(tmp_path, monkeypatch):
    write_beir(tmp_path / "beir" / "msmarco", split="dev")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path))
    assert load_dataset("beir/msmarco").split == "dev"


def test_cqadupstack_forum_folder(tmp_path, monkeypatch):
    write_beir(tmp_path / "beir" / "cqadupstack" / "gis")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path))
    ds = load_dataset("beir/cqadupstack/gis")
    assert ds.id == "beir/cqadupstack/gis" and len(ds.corpus) == 3


def test_remove_self_hits_function():
    run = Run(
        ["q1", "q1", "q1", "q2", "q2"], ["d1", "q1", "d3", "q2", "q1"], [3.0, 2.0, 1.0, 5.0, 4.0]
    )
    cleaned = remove_self_hits(run)
    assert cleaned.to_dict() == {"q1": {"d1": 3.0, "d3": 1.0}, "q2": {"q1": 4.0}}
    assert cleaned.metadata["self_hits_removed"] == 2
    assert run.n_entries == 5  # the input is untouched
    again = remove_self_hits(cleaned)
    assert again.to_dict() == cleaned.to_dict() and again.metadata["self_hits_removed"] == 2


def test_arguana_policy_drops_self_hits_and_scifact_does_not(tmp_path, monkeypatch):
    for name in ("arguana", "scifact"):
        write_beir(tmp_path / "beir" / name)
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path))
    run = Run(["q2", "q2"], ["q2", "d2"], [2.0, 1.0])
    arguana = load_dataset("beir/arguana")
    assert arguana.remove_self_hits is True and "on" in arguana.metadata["self_hit_policy"]
    assert arguana.postprocess_run(run).doc_ids("q2") == ["d2"]
    scifact = load_dataset("beir/scifact")
    assert scifact.postprocess_run(run) is run
    forced = load_dataset("beir/scifact", remove_self_hits=True)
    assert forced.postprocess_run(run).doc_ids("q2") == ["d2"]


def test_fingerprint_depends_on_content(tmp_path):
    a = load_dataset(str(write_beir(tmp_path / "a")))
    b = load_dataset(str(write_beir(tmp_path / "b")))
    c = load_dataset(str(write_beir(tmp_path / "c", qrels=[("q1", "d1", 2)])))
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


@pytest.mark.realdata
def test_scifact_golden_counts(shared_data, monkeypatch):
    if not (shared_data / "beir" / "scifact" / "corpus.jsonl").exists():
        pytest.skip("beir/scifact is absent from the shared data")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    ds = load_dataset("beir/scifact")
    assert len(ds.corpus) == 5183
    assert len(ds.queries) == 300
    assert ds.qrels.n_judgments == 339
    assert ds.metadata["source"] == str(shared_data / "beir" / "scifact")
