"""``beir/<name>`` with ``source="hub"``: the BeIR/<name> mirrors' file shapes, locally."""

from __future__ import annotations

import gzip
import json

import pytest

from nuggetbench.datasets import load_dataset
from nuggetbench.errors import DatasetError, DownloadError

DOCS = [("d1", "T1", "alpha beta"), ("d2", "", "gamma"), ("q1", "", "the query as a document")]
QUERIES = [("q1", "alpha?"), ("q2", "gamma?"), ("q3", "unjudged in test")]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\n"


def write_gz_jsonl(path, rows):
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def write_mirror(folder, *, parquet=False):
    folder.mkdir(parents=True)
    corpus = {
        "_id": [d[0] for d in DOCS],
        "title": [d[1] for d in DOCS],
        "text": [d[2] for d in DOCS],
    }
    queries = {"_id": [q[0] for q in QUERIES], "title": [""] * 3, "text": [q[1] for q in QUERIES]}
    if parquet:
        datasets = pytest.importorskip("datasets")
        datasets.Dataset.from_dict(corpus).to_parquet(str(folder / "corpus.parquet"))
        datasets.Dataset.from_dict(queries).to_parquet(str(folder / "queries.parquet"))
    else:
        write_gz_jsonl(
            folder / "corpus.jsonl.gz", [dict(zip(corpus, v)) for v in zip(*corpus.values())]
        )
        write_gz_jsonl(
            folder / "queries.jsonl.gz", [dict(zip(queries, v)) for v in zip(*queries.values())]
        )
    (folder / "test.tsv").write_text(QRELS)


@pytest.mark.parametrize("parquet", [False, True])
def test_mirror_files_become_the_beir_layout(_isolated_home, parquet):
    folder = _isolated_home / "beir" / "arguana"
    write_mirror(folder, parquet=parquet)
    ds = load_dataset("beir/arguana", source="hub")
    assert ds.split == "test"
    assert dict(ds.queries) == {"q1": "alpha?", "q2": "gamma?"}  # judged queries of the split
    assert ds.qrels.to_dict() == {"q1": {"d1": 1}, "q2": {"d2": 2}}
    assert ds.corpus["d1"].full_text == "T1 alpha beta"
    assert ds.remove_self_hits is True  # BEIR's policy for ArguAna still applies
    assert ds.metadata["origin"] == "hub" and ds.metadata["hub"]["corpus"] == "BeIR/arguana@main"
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "source.json"):
        assert (folder / name).exists()
    # the official-server source now finds the same folder
    again = load_dataset("beir/arguana")
    assert list(again.corpus) == list(ds.corpus)


def test_hub_source_offline_names_the_folder(_isolated_home):
    with pytest.raises(DownloadError) as err:
        load_dataset("beir/nfcorpus", source="hub")
    assert str(_isolated_home / "beir" / "nfcorpus") in str(err.value)
    assert "BeIR/nfcorpus-qrels" in str(err.value)


def test_unknown_source_and_unmirrored():
    with pytest.raises(DatasetError, match="source must be"):
        load_dataset("beir/scifact", source="ftp")
    with pytest.raises(DatasetError, match="no per-dataset hub mirror"):
        load_dataset("beir/cqadupstack/android", source="hub")
