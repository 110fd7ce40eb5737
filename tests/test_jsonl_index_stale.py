"""The memory-mapped corpus index's cache check: size, mtime and a sampled hash (no full read)."""

from __future__ import annotations

import json
import os

import pytest

from nuggetbench.data import JsonlCorpus
from nuggetbench.data.formats import beir
from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus


def _write(path, n=3000):
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(
                json.dumps({"_id": f"d{i}", "title": "", "text": f"text number {i:06d}"}) + "\n"
            )


def test_warm_start_does_not_rehash_the_file(tmp_path, monkeypatch):
    path = tmp_path / "corpus.jsonl"
    _write(path)
    first = IndexedJsonlCorpus(path)
    fp = first.fingerprint()
    assert fp == JsonlCorpus(path).fingerprint()

    def no_build(self):
        raise AssertionError("the index was rebuilt (the file re-read)")

    monkeypatch.setattr(IndexedJsonlCorpus, "_build", no_build)
    again = IndexedJsonlCorpus(path)
    assert again.fingerprint() == fp and len(again) == 3000


def test_same_size_and_mtime_but_changed_bytes_is_stale(tmp_path):
    path = tmp_path / "corpus.jsonl"
    _write(path)
    fp = IndexedJsonlCorpus(path).fingerprint()
    st = path.stat()
    data = bytearray(path.read_bytes())
    # change a digit inside a sampled block (the first block starts at byte 0)
    pos = data.index(b"000005")
    data[pos : pos + 6] = b"999995"
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    fresh = IndexedJsonlCorpus(path)
    assert fresh.fingerprint() != fp
    assert fresh.fingerprint() == JsonlCorpus(path).fingerprint()
    assert "999995" in fresh["d5"].text


@pytest.mark.parametrize("large", [False, True])
def test_beir_folder_reads_a_large_corpus_memory_mapped(tmp_path, monkeypatch, large):
    _write(tmp_path / "corpus.jsonl", n=10)
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "text"}) + "\n")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    if large:
        monkeypatch.setattr(beir, "LARGE_CORPUS_BYTES", 1)
    corpus, _, _ = beir.read_beir_folder(tmp_path)
    assert isinstance(corpus, IndexedJsonlCorpus) is large
    assert list(corpus) == [f"d{i}" for i in range(10)]
    assert corpus["d3"].text == "text number 000003"
