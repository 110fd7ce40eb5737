"""Issue 13: id-mismatch warnings (5), measure strings (6), BM25 on an empty vocabulary (13),
stale staging files of killed runs (15). Each test fails on the code before the fixes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from nuggetbench import _atomic
from nuggetbench.cli import cli
from nuggetbench.data import Document, InMemoryCorpus, Qrels, Queries, Run, checks
from nuggetbench.errors import InputError
from nuggetbench.evaluation import evaluate_dataset
from nuggetbench.experiment import run_experiment
from nuggetbench.retrieval.spec import parse_retriever
from nuggetbench.store import Artifact


@pytest.fixture
def beir_folder(tmp_path):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    docs = {
        "1": "cats purr and sleep all day",
        "2": "dogs bark at the mail carrier",
        "3": "birds sing in the morning",
        "4": "fish swim in the sea",
    }
    with open(folder / "corpus.jsonl", "w") as fh:
        for did, text in docs.items():
            fh.write(json.dumps({"_id": did, "title": "", "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w") as fh:
        fh.write(json.dumps({"_id": "q1", "text": "why do cats purr"}) + "\n")
        fh.write(json.dumps({"_id": "q2", "text": "birds singing"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\t1\t1\nq2\t3\t2\n")
    return folder


# -- item 5: document ids of another format ------------------------------------------------------------


def test_item5_no_judged_document_is_warned_with_counts():
    qrels = Qrels(["q1", "q2"], ["123", "456"], [1, 1])
    run = Run(["q1", "q1", "q2"], ["doc123", "doc9", "doc456"], [2.0, 1.0, 1.0])
    found = {f.kind: f for f in checks.check_findings(qrels, run)}
    assert "no_judged" in found
    counts = found["no_judged"].counts
    assert counts["entries"] == 3 and counts["judged_entries"] == 0
    assert counts["retrieved_ids_in_qrels"] == 0 and counts["queries"] == 2
    assert "'doc123'" in found["no_judged"].message and "'123'" in found["no_judged"].message
    # a sound run draws no such warning
    good = Run(["q1", "q2"], ["123", "999"], [1.0, 1.0])
    assert not {"no_judged", "few_judged"} & {f.kind for f in checks.check_findings(qrels, good)}


def test_item5_almost_no_judged_document_is_warned():
    n = 50
    qrels = Qrels([f"q{i}" for i in range(n)], [f"d{i}" for i in range(n)], [1] * n)
    run = Run([f"q{i}" for i in range(n)], ["d0"] + [f"x{i}" for i in range(1, n)], [1.0] * n)
    kinds = {f.kind: f for f in checks.check_findings(qrels, run)}
    assert kinds["few_judged"].counts["queries_with_judged"] == 1


def test_item5_retrieved_ids_missing_from_a_known_corpus(beir_folder):
    qrels_ok = "q1 Q0 1 1 2.0 t\nq2 Q0 3 1 1.0 t\n"
    run_path = beir_folder.parent / "bad.run"
    run_path.write_text("q1 Q0 doc1 1 2.0 t\nq2 Q0 doc3 1 1.0 t\n")
    ev = evaluate_dataset(str(beir_folder), run_path, ["nDCG@10"])
    kinds = {f.kind: f for f in ev.findings}
    assert kinds["run_not_in_corpus"].counts == {"checked": 2, "missing": 2}
    assert "no_judged" in kinds
    good = beir_folder.parent / "good.run"
    good.write_text(qrels_ok)
    ev = evaluate_dataset(str(beir_folder), good, ["nDCG@10"])
    assert not {"run_not_in_corpus", "no_judged"} & {f.kind for f in ev.findings}
    result = CliRunner().invoke(cli, ["evaluate", str(beir_folder), str(run_path), "nDCG@10"])
    assert (
        "not in the corpus" in result.output and "no retrieved document is judged" in result.output
    )


# -- item 6: measure strings with white space ------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "tsv", "table"])
def test_item6_measure_with_spaces_is_trimmed(tmp_path, fmt):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    result = CliRunner().invoke(
        cli, ["evaluate", str(qrels), str(run), "nDCG@10 ", " P@1", "--format", fmt]
    )
    assert result.exit_code == 0, result.output
    assert "nan" not in result.output
    if fmt == "json":
        out = json.loads(result.stdout)
        assert {m: out[m] for m in ("nDCG@10", "P@1")} == {"nDCG@10": 1.0, "P@1": 1.0}
        assert not {k for k in out if k.strip() != k}, "a measure key kept its spaces"


def test_item6_run_with_spaced_measure(beir_folder, tmp_path):
    exp = run_experiment(
        str(beir_folder), ["bm25"], measures=[" nDCG@10", "R@10 "], k=10, outdir=tmp_path / "out"
    )
    assert exp.measures == ["nDCG@10", "R@10"]
    means = next(iter(exp.systems.values())).results.means
    assert set(means) == {"nDCG@10", "R@10"} and means["nDCG@10"] > 0


# -- item 13: BM25 on a corpus without one indexable term --------------------------------------------------


@pytest.mark.parametrize("texts", [["", ""], ["the a of", "and the"], ["", "is it"]])
def test_item13_bm25_without_indexable_terms_is_a_clear_error(texts):
    corpus = InMemoryCorpus([Document(f"d{i}", t) for i, t in enumerate(texts)])
    with pytest.raises(InputError, match=r"none of its 2 documents has an indexable term"):
        parse_retriever("bm25").index(corpus)


def test_item13_bm25_stopwords_none_indexes_stopword_documents():
    corpus = InMemoryCorpus([Document("d0", "the a of"), Document("d1", "and the")])
    run = parse_retriever("bm25:stopwords=none").index(corpus).search(Queries({"q": "the"}), 5)
    assert set(run.doc_ids("q")) == {"d0", "d1"}


# -- item 15: stale staging entries of killed runs are cleaned --------------------------------------------


def _killed_writer(code: str) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=120)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.skipif(os.name != "posix", reason="kill -9 needs POSIX")
def test_item15_kill9_leftovers_are_removed_by_the_next_write(tmp_path):
    target = tmp_path / "runs" / "k10.trec"
    _killed_writer(
        "import os, signal\nfrom nuggetbench._atomic import atomic_write\n"
        f"with atomic_write({str(target)!r}) as fh:\n"
        "    fh.write('partial')\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    art = Artifact("bm25", {"k1": 0.9}, {"corpus": "abc"})
    _killed_writer(
        "import os, signal\nfrom nuggetbench.store import Artifact\n"
        "art = Artifact('bm25', {'k1': 0.9}, {'corpus': 'abc'})\n"
        "with art.build() as (staging, meta):\n"
        "    (staging / 'x').write_text('x')\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    hidden = [p for p in target.parent.iterdir() if p.name.startswith(".")]
    staged = [p for p in art.path.parent.iterdir() if p.name.startswith(".")]
    assert len(hidden) == 1 and len(staged) == 1  # what kill -9 leaves behind
    # a file another user left, and a live process's own temporary file, are not touched
    foreign = target.parent / ".notes.tmp"
    foreign.write_text("mine")
    _atomic._CLEANED.clear()
    with _atomic.atomic_write(target.parent / "other.trec") as fh:
        live = [p for p in target.parent.iterdir() if p.name.startswith(".other.trec.")]
        fh.write("done")
    assert len(live) == 1
    assert sorted(p.name for p in target.parent.iterdir()) == [".notes.tmp", "other.trec"]
    _atomic._CLEANED.clear()
    with art.build() as (staging, meta):
        (staging / "x").write_text("x")
    assert [p.name for p in art.path.parent.iterdir() if p.name.startswith(".")] == []
    assert art.meta() is not None


def test_item15_old_legacy_staging_entries_are_removed(tmp_path):
    legacy = tmp_path / ".results.json.abcd1234.tmp"
    legacy.write_text("{}")
    fresh = tmp_path / ".results.json.wxyz9876.tmp"
    fresh.write_text("{}")
    old = time.time() - _atomic.STALE_AFTER - 60
    os.utime(legacy, (old, old))
    extract = tmp_path / ".scifact.k2j4h5g6.extract"
    extract.mkdir()
    os.utime(extract, (old, old))
    removed = _atomic.clean_stale(tmp_path, force=True)
    assert sorted(p.name for p in removed) == sorted([extract.name, legacy.name])
    assert fresh.exists()
