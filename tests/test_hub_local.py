"""Hub-shaped local files (as ``datasets`` writes them), offline handling, the lean JSONL index."""

from __future__ import annotations

import gzip
import json
import os
import tracemalloc

import pytest

from nuggetbench.data import Document, JsonlCorpus
from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus, write_jsonl_corpus
from nuggetbench.data.source import decode_id_text
from nuggetbench.datasets import hub
from nuggetbench.errors import DatasetError, DownloadError, DuplicateError, FormatError

datasets = pytest.importorskip("datasets")

ROWS = {
    "docid": ["a#0", "a#1", "b#0"],
    "title": ["A", "A", "B"],
    "text": ["alpha one", "alpha two", "beta"],
}


def expected():
    return [dict(zip(ROWS, values)) for values in zip(*ROWS.values())]


def test_parquet_json_and_save_to_disk_records(tmp_path):
    ds = datasets.Dataset.from_dict(ROWS)
    ds.to_parquet(str(tmp_path / "pq" / "corpus.parquet"))
    ds.to_json(str(tmp_path / "jl" / "corpus.jsonl"))  # JSON lines (datasets' default)
    ds.to_json(str(tmp_path / "ja" / "corpus.json"), lines=False)  # one JSON array
    ds.save_to_disk(str(tmp_path / "sd" / "corpus"))
    for sub in ("pq", "jl", "ja", "sd"):
        files = hub.find_record_files(tmp_path / sub, "corpus")
        assert files, sub
        assert list(hub.iter_records(files)) == expected(), sub
    assert hub.count_records(hub.find_record_files(tmp_path / "pq", "corpus")) == 3
    assert hub.count_records(hub.find_record_files(tmp_path / "sd", "corpus")) == 3
    assert hub.count_records(hub.find_record_files(tmp_path / "jl", "corpus")) is None
    # only the asked columns
    got = list(
        hub.iter_records(hub.find_record_files(tmp_path / "pq", "corpus"), columns=["docid"])
    )
    assert got == [{"docid": d} for d in ROWS["docid"]]


def test_dataset_dict_folder_needs_a_split(tmp_path):
    dd = datasets.DatasetDict({"dev": datasets.Dataset.from_dict(ROWS)})
    dd.save_to_disk(str(tmp_path / "topics"))
    assert (
        list(hub.iter_records(hub.find_record_files(tmp_path, "topics", split="dev"))) == expected()
    )
    with pytest.raises(DatasetError, match="DatasetDict folder; name its split"):
        hub.find_record_files(tmp_path, "topics")


def test_sharded_files_in_natural_order(tmp_path):
    for i in (0, 2, 10):
        with gzip.open(tmp_path / f"docs-{i}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write(json.dumps({"docid": f"d{i}", "title": "", "text": str(i)}) + "\n")
    files = hub.find_record_files(tmp_path, "docs")
    assert [f.name for f in files] == ["docs-0.jsonl.gz", "docs-2.jsonl.gz", "docs-10.jsonl.gz"]
    assert [r["docid"] for r in hub.iter_records(files)] == ["d0", "d2", "d10"]


def test_bad_json_line_names_file_and_line(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"docid": "a", "text": "x"}\n{oops\n')
    with pytest.raises(FormatError, match=r"corpus.jsonl, line 2"):
        list(hub.iter_records([path]))


def test_load_hub_dataset_reads_a_local_folder(tmp_path):
    datasets.Dataset.from_dict(ROWS).to_parquet(str(tmp_path / "data" / "train-00000.parquet"))
    ds = hub.load_hub_dataset(tmp_path / "data", split="train")
    assert ds["docid"] == ROWS["docid"]
    streamed = hub.load_hub_dataset(tmp_path / "data", split="train", streaming=True)
    assert [r["docid"] for r in streamed] == ROWS["docid"]


def test_offline_errors_name_the_folder(tmp_path):
    folder = tmp_path / "miracl" / "ja"
    with pytest.raises(DownloadError, match=str(folder)):
        hub.download_files("miracl/miracl", ["*"], what="miracl/ja", fill_folder=folder)
    with pytest.raises(DownloadError, match="downloads are off"):
        hub.load_hub_dataset("BeIR/scifact", "corpus", what="beir/scifact")


def test_online_check_respects_hf_hub_offline(monkeypatch, tmp_path):
    monkeypatch.delenv("NUGGETBENCH_OFFLINE")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DownloadError, match="HF_HUB_OFFLINE"):
        hub.ensure_online("x", tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    hub.ensure_online("x", tmp_path)  # online: no error


def test_pinned_revisions():
    assert hub.revision_for("miracl/miracl-corpus") == "d921ec7e349ce0d28daf30b2da9da5ee698bef0d"
    assert hub.revision_for("BeIR/scifact") == "main"
    assert hub.revision_for("unicamp-dl/mmarco", "abc") == "abc"
    assert all(len(r) == 40 for r in hub.PINNED_REVISIONS.values())


# --- the lean index --------------------------------------------------------------------------------
def docs(n):
    for i in range(n):
        yield Document(f"doc{i:05d}", f"text number {i} é 東京", "t" if i % 2 else "")


def test_written_corpus_matches_jsonl_corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    corpus = write_jsonl_corpus(docs(1000), path)
    ref = JsonlCorpus(path)
    assert len(corpus) == len(ref) == 1000
    assert list(corpus) == list(ref)
    assert corpus.fingerprint() == ref.fingerprint()
    for did in ("doc00000", "doc00999", "doc00500"):
        assert corpus[did] == ref[did]
    assert "doc01000" not in corpus and "doc0000" not in corpus and "x" * 99 not in corpus
    assert corpus.texts(["doc00001", "doc00000"]) == ref.texts(["doc00001", "doc00000"])
    assert [d.doc_id for d in corpus.iter_documents()] == list(ref)
    with pytest.raises(KeyError):
        corpus["nope"]
    assert (tmp_path / "corpus.jsonl.index" / "sorted_ids.npy").exists()


def test_index_is_built_for_a_foreign_file_and_rebuilt_when_stale(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "b", "title": "", "text": "x"}\n\n{"text": "y", "_id": "a\\"q"}\n')
    corpus = IndexedJsonlCorpus(path)
    assert list(corpus) == ["b", 'a"q'] and corpus['a"q'].text == "y"
    with open(path, "a") as fh:
        fh.write('{"_id": "c", "text": "z"}\n')
    os.utime(path, ns=(1, 1))
    assert list(IndexedJsonlCorpus(path)) == ["b", 'a"q', "c"]


def test_read_only_data_folder_index_goes_to_the_cache(tmp_path, monkeypatch, _isolated_home):
    data = tmp_path / "data"
    data.mkdir()
    (data / "corpus.jsonl").write_text('{"_id": "a", "text": "x"}\n')
    monkeypatch.setenv("NUGGETBENCH_DATA", str(data))
    corpus = IndexedJsonlCorpus(data / "corpus.jsonl")
    assert len(corpus) == 1
    assert not (data / "corpus.jsonl.index").exists()
    assert str(corpus.index_dir).startswith(str(_isolated_home))


def test_duplicate_ids_keep_nothing(tmp_path):
    path = tmp_path / "corpus.jsonl"
    with pytest.raises(DuplicateError, match="'d1' occurs twice"):
        write_jsonl_corpus([Document("d1", "a"), Document("d2", "b"), Document("d1", "c")], path)
    assert not path.exists() and not list(tmp_path.iterdir())


def test_writing_streams(tmp_path):
    """Writing 20,000 passages of 1 kB holds far less than the 20 MB written."""
    text = "word " * 200
    tracemalloc.start()
    write_jsonl_corpus((Document(f"d{i}", text) for i in range(20000)), tmp_path / "corpus.jsonl")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = (tmp_path / "corpus.jsonl").stat().st_size
    assert size > 20_000_000
    assert peak < size / 5, (peak, size)


def test_real_beir_corpus_through_the_lean_index(shared_data, tmp_path):
    path = shared_data / "beir" / "scifact" / "corpus.jsonl"
    if not path.exists():
        pytest.skip("beir/scifact is absent")
    lean = IndexedJsonlCorpus(path, index_dir=tmp_path / "index")  # never write beside real data
    ref = JsonlCorpus(path)
    assert len(lean) == len(ref)
    assert lean.fingerprint() == ref.fingerprint()
    ids = list(ref)
    assert list(lean) == ids
    for did in ids[:: max(1, len(ids) // 50)]:
        assert lean[did] == ref[did]


def test_indexed_ids_keep_their_bytes_like_the_other_readers(tmp_path):
    path = tmp_path / "corpus.jsonl"
    # a raw invalid-UTF-8 byte in an id reads as the private-use code point the TREC readers use
    path.write_bytes(b'{"_id": "caf\xc3\xa9", "text": "x"}\n{"_id": "caf\xe9", "text": "y"}\n')
    corpus = IndexedJsonlCorpus(path)
    ids = list(corpus)
    assert ids[0] == "caf\u00e9" and ids[1] != ids[0]
    assert ids[1] == decode_id_text(b"caf\xe9")
    assert ids[1] in corpus and ids[0] in corpus and "caf\ufffd" not in corpus
