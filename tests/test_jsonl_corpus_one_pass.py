"""``JsonlCorpus``: the fingerprint hashes the file without parsing it, and the first complete
pass over the documents builds the id index (no second parse), with the same checks."""

from __future__ import annotations

import hashlib
import json

import pytest

from nuggetbench.data import corpus as corpus_module
from nuggetbench.data.corpus import JsonlCorpus
from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus
from nuggetbench.errors import DuplicateError, FormatError


def _write(path, ids, blank_every=3):
    lines = []
    for i, did in enumerate(ids):
        lines.append(json.dumps({"_id": did, "title": f"t{i}", "text": f"text {i}"}) + "\n")
        if i % blank_every == 0:
            lines.append("\n")
    path.write_text("".join(lines))
    return path


@pytest.fixture
def parses(monkeypatch):
    calls = []
    original = corpus_module._load_line

    def spy(path, lineno, raw):
        calls.append(lineno)
        return original(path, lineno, raw)

    monkeypatch.setattr(corpus_module, "_load_line", spy)
    return calls


def test_fingerprint_hashes_the_file_without_parsing(tmp_path, parses):
    path = _write(tmp_path / "corpus.jsonl", ["a", "b", "c"])
    c = JsonlCorpus(path)
    assert c.fingerprint() == hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    assert parses == []
    built = JsonlCorpus(path)
    built._build_index()
    assert built.fingerprint() == c.fingerprint()


def test_one_pass_builds_the_index(tmp_path, parses):
    ids = ["d1", "é", "10", "x y", "d2"]
    path = _write(tmp_path / "corpus.jsonl", ids)
    c = JsonlCorpus(path)
    docs = list(c.iter_documents())
    assert [d.doc_id for d in docs] == ids and len(parses) == len(ids)
    assert list(c) == ids and len(c) == 5 and "é" in c and "zz" not in c
    assert c["x y"].text == "text 3" and c.texts(["d2", "d1"]) == ["t4 text 4", "t0 text 0"]
    assert len(parses) == len(ids) + 3  # the look-ups parse their own lines only
    fresh = JsonlCorpus(path)
    fresh._build_index()
    assert fresh._offsets.tolist() == c._offsets.tolist()
    assert fresh._lookup == c._lookup


def test_a_duplicate_id_is_found_by_the_pass(tmp_path):
    path = _write(tmp_path / "corpus.jsonl", ["a", "b", "a"])
    with pytest.raises(DuplicateError, match="'a' occurs twice"):
        list(JsonlCorpus(path).iter_documents())
    with pytest.raises(DuplicateError, match="'a' occurs twice"):
        len(JsonlCorpus(path))


def test_a_partial_pass_builds_nothing(tmp_path):
    path = _write(tmp_path / "corpus.jsonl", ["a", "b", "c"])
    c = JsonlCorpus(path)
    next(iter(c.iter_documents()))
    assert c._ids is None and len(c) == 3


def test_a_bad_line_is_named(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n{"_id": \n')
    with pytest.raises(FormatError, match="line 2"):
        list(JsonlCorpus(path).iter_documents())


def test_the_indexed_corpus_keeps_its_own_index(tmp_path):
    path = _write(tmp_path / "corpus.jsonl", ["a", "b", "c"])
    c = IndexedJsonlCorpus(path, index_dir=tmp_path / "idx")
    assert [d.doc_id for d in c.iter_documents()] == ["a", "b", "c"]
    assert len(c) == 3 and c.fingerprint() == JsonlCorpus(path).fingerprint()
