"""``miracl/<lang>`` from synthetic local files: hub records, the hub's raw files, BEIR layout."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from nuggetbench.data import Run
from nuggetbench.data.formats.jsonl_index import IndexedJsonlCorpus
from nuggetbench.datasets import load_dataset
from nuggetbench.errors import DatasetError, DownloadError
from nuggetbench.measures import score as evaluate

CORPUS = [  # docid, title, text (synthetic)
    ("100#0", "東京", "東京都の天気は晴れです"),
    ("100#1", "東京", "東京タワーは赤い"),
    ("200#0", "大阪", "大阪の食べ物はおいしい"),
    ("300#0", "京都", "京都で桜を見ました"),
    ("300#1", "京都", "京都の寺は古い"),
]
TOPICS = {  # query_id: (query, positives, negatives)
    "1": ("東京の天気", ["100#0"], ["100#1", "200#0"]),
    "2": ("京都の寺", ["300#1"], ["300#0"]),
}


def passage(docid):
    d, t, x = next(c for c in CORPUS if c[0] == docid)
    return {"docid": d, "title": t, "text": x}


def write_hub_records(folder, fmt="parquet"):
    """miracl/miracl records and miracl-corpus records, as ``datasets`` writes them."""
    datasets = pytest.importorskip("datasets")
    folder.mkdir(parents=True, exist_ok=True)
    topics = datasets.Dataset.from_dict(
        {
            "query_id": list(TOPICS),
            "query": [t[0] for t in TOPICS.values()],
            "positive_passages": [[passage(d) for d in t[1]] for t in TOPICS.values()],
            "negative_passages": [[passage(d) for d in t[2]] for t in TOPICS.values()],
        }
    )
    corpus = datasets.Dataset.from_dict(
        {
            "docid": [c[0] for c in CORPUS],
            "title": [c[1] for c in CORPUS],
            "text": [c[2] for c in CORPUS],
        }
    )
    if fmt == "parquet":
        topics.to_parquet(str(folder / "dev.parquet"))
        corpus.to_parquet(str(folder / "corpus.parquet"))
    elif fmt == "json":
        topics.to_json(str(folder / "dev.jsonl"), force_ascii=False)
        corpus.to_json(str(folder / "corpus.json"), lines=False, force_ascii=False)
    else:
        topics.save_to_disk(str(folder / "dev"))
        corpus.save_to_disk(str(folder / "corpus"))


def write_raw_files(folder, lang="ja"):
    """The layout of the hub repositories miracl/miracl and miracl/miracl-corpus."""
    topics = folder / f"miracl-v1.0-{lang}" / "topics" / f"topics.miracl-v1.0-{lang}-dev.tsv"
    qrels = folder / f"miracl-v1.0-{lang}" / "qrels" / f"qrels.miracl-v1.0-{lang}-dev.tsv"
    topics.parent.mkdir(parents=True)
    qrels.parent.mkdir(parents=True)
    topics.write_text("".join(f"{q}\t{t[0]}\n" for q, t in TOPICS.items()), encoding="utf-8")
    qrels.write_text(
        "".join(
            f"{q}\tQ0\t{d}\t{g}\n"
            for q, t in TOPICS.items()
            for g, ds in ((1, t[1]), (0, t[2]))
            for d in ds
        )
    )
    shards = folder / f"miracl-corpus-v1.0-{lang}"
    shards.mkdir()
    for i, chunk in enumerate((CORPUS[:3], CORPUS[3:])):
        with gzip.open(shards / f"docs-{i}.jsonl.gz", "wt", encoding="utf-8") as fh:
            for d, t, x in chunk:
                fh.write(json.dumps({"docid": d, "title": t, "text": x}, ensure_ascii=False) + "\n")


def write_beir_layout(folder):
    folder.mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for d, t, x in CORPUS:
            fh.write(json.dumps({"_id": d, "title": t, "text": x}, ensure_ascii=False) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q, t in TOPICS.items():
            fh.write(json.dumps({"_id": q, "text": t[0]}, ensure_ascii=False) + "\n")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "dev.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(
            f"{q}\t{d}\t{g}\n"
            for q, t in TOPICS.items()
            for g, ds in ((1, t[1]), (0, t[2]))
            for d in ds
        )
    )


def check(ds):
    assert ds.id == "miracl/ja" and ds.split == "dev"
    assert ds.metadata["language"] == "ja"
    assert dict(ds.queries) == {q: t[0] for q, t in TOPICS.items()}
    assert ds.qrels.to_dict() == {
        q: {**{d: 1 for d in t[1]}, **{d: 0 for d in t[2]}} for q, t in TOPICS.items()
    }
    assert isinstance(ds.corpus, IndexedJsonlCorpus)
    assert list(ds.corpus) == [c[0] for c in CORPUS]
    assert ds.corpus["100#0"].full_text == "東京 東京都の天気は晴れです"  # title + " " + text
    assert ds.default_measures == ["nDCG@10", "R@100"]


@pytest.mark.parametrize("fmt", ["parquet", "json", "disk"])
def test_hub_records_are_written_once_into_the_home(_isolated_home, fmt):
    src = _isolated_home / "miracl" / "ja"
    write_hub_records(src, fmt)
    ds = load_dataset("miracl/ja")
    check(ds)
    corpus_file = src / "corpus.jsonl"
    assert corpus_file.exists() and (src / "qrels" / "dev.tsv").exists()
    stamp = corpus_file.stat().st_mtime_ns
    for name in ("dev.parquet", "dev.jsonl", "dev", "corpus.parquet", "corpus.json", "corpus"):
        p = src / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    check(load_dataset("miracl/ja"))  # from the BEIR layout now
    assert corpus_file.stat().st_mtime_ns == stamp


def test_raw_hub_files_in_a_read_only_data_folder(tmp_path, monkeypatch, _isolated_home):
    data = tmp_path / "data"
    write_raw_files(data / "miracl" / "ja")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(data))
    before = sorted(p for p in data.rglob("*"))
    check(load_dataset("miracl/ja"))
    assert sorted(p for p in data.rglob("*")) == before  # nothing written there
    assert (_isolated_home / "miracl" / "ja" / "corpus.jsonl").exists()


def test_beir_layout_is_used_in_place(tmp_path, monkeypatch, _isolated_home):
    data = tmp_path / "data"
    write_beir_layout(data / "miracl" / "ja")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(data))
    ds = load_dataset("miracl/ja")
    check(ds)
    assert ds.metadata["corpus_file"] == str(data / "miracl" / "ja" / "corpus.jsonl")
    assert not (_isolated_home / "miracl").exists()


def test_judged_negatives_never_count_as_relevant(_isolated_home):
    write_beir_layout(_isolated_home / "miracl" / "ja")
    ds = load_dataset("miracl/ja")
    negatives_only = Run(["1", "1", "2"], ["100#1", "200#0", "300#0"], [3.0, 2.0, 1.0])
    res = evaluate(ds.qrels, negatives_only, ["R@100", "nDCG@10"])
    assert res.means["R@100"] == 0.0 and res.means["nDCG@10"] == 0.0
    # one positive found for query 1, at rank 2 (hand: recall 1/2 queries; nDCG 1/log2(3) for q1)
    mixed = Run(["1", "1"], ["100#1", "100#0"], [2.0, 1.0])
    res = evaluate(ds.qrels, mixed, ["R@100", "nDCG@10"])
    assert res.means["R@100"] == pytest.approx(0.5)
    assert res.values("nDCG@10")["1"] == pytest.approx(1 / 1.5849625007211562)


def test_splits():
    with pytest.raises(DatasetError, match="test qrels .* are hidden"):
        load_dataset("miracl/ja", split="testB")
    with pytest.raises(DatasetError, match="surprise language"):
        load_dataset("miracl/yo", split="train")
    with pytest.raises(DatasetError, match="no split"):
        load_dataset("miracl/ja", split="validation")


def test_offline_error_names_the_folder_to_fill(_isolated_home):
    with pytest.raises(DownloadError) as err:
        load_dataset("miracl/sw")
    msg = str(err.value)
    assert str(_isolated_home / "miracl" / "sw") in msg
    assert "topics.miracl-v1.0-sw-dev.tsv" in msg and "docs-*.jsonl.gz" in msg
    with pytest.raises(DatasetError, match="download=True"):
        load_dataset("miracl/sw", download=False)


def test_bm25_follows_the_dataset_language(_isolated_home):
    from nuggetbench.experiment import run_experiment

    write_hub_records(_isolated_home / "miracl" / "ja")
    exp = run_experiment(load_dataset("miracl/ja"), ["bm25"], k=10)
    run = exp.systems["bm25"].run
    assert run.metadata["params"]["analyzer"] == "ja"
    assert run.doc_ids("1")[0] == "100#0"  # shares 東京 and 天気 with the query
