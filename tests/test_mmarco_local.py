"""``mmarco/<doc_lang>[/<query_lang>]`` from synthetic local files; subsets and their warnings."""

from __future__ import annotations

import logging

import pytest

from nuggetbench.data.checks import check_corpus_coverage
from nuggetbench.datasets import load_dataset
from nuggetbench.errors import DatasetError, DownloadError, UnknownNameError

PASSAGES = {  # the same ids in every language (synthetic)
    "english": [
        "the cat sleeps",
        "dogs bark loudly",
        "birds can fly",
        "fish swim",
        "cows eat grass",
    ],
    "german": [
        "die Katze schläft",
        "Hunde bellen laut",
        "Vögel können fliegen",
        "Fische schwimmen",
        "Kühe fressen Gras",
    ],
}
QUERIES = {
    "english": {"11": "why do dogs bark", "12": "what do cows eat"},
    "german": {"11": "warum bellen Hunde", "12": "was fressen Kühe"},
}
QRELS = [("11", "1"), ("12", "4")]  # (query, passage id)


def write_raw(home, lang, *, with_qrels=True):
    """The repository's file names (data/google/...), inside $HOME/mmarco/<lang>/."""
    folder = home / "mmarco" / lang
    (folder / "collections").mkdir(parents=True)
    (folder / "queries").mkdir()
    (folder / "collections" / f"{lang}_collection.tsv").write_text(
        "".join(f"{i}\t{t}\n" for i, t in enumerate(PASSAGES[lang])), encoding="utf-8"
    )
    (folder / "queries" / f"{lang}_queries.dev.small.tsv").write_text(
        "".join(f"{q}\t{t}\n" for q, t in QUERIES[lang].items()), encoding="utf-8"
    )
    if with_qrels:
        (home / "mmarco" / "qrels.dev.small.tsv").write_text(
            "".join(f"{q}\t0\t{d}\t1\n" for q, d in QRELS)
        )


def test_monolingual_from_raw_files(_isolated_home):
    write_raw(_isolated_home, "german")
    ds = load_dataset("mmarco/german")
    assert ds.metadata["language"] == "de" and ds.metadata["query_language"] == "de"
    assert dict(ds.queries) == QUERIES["german"]
    assert ds.qrels.to_dict() == {"11": {"1": 1}, "12": {"4": 1}}
    assert [ds.corpus[str(i)].text for i in range(5)] == PASSAGES["german"]
    assert "subset" not in ds.metadata
    assert (_isolated_home / "mmarco" / "german" / "corpus.jsonl").exists()
    assert ds.default_measures[0] == "RR@10"


def test_cross_lingual_pairs_queries_and_passages(_isolated_home):
    write_raw(_isolated_home, "german")
    write_raw(_isolated_home, "english", with_qrels=False)
    ds = load_dataset("mmarco/english/german")
    assert ds.id == "mmarco/english/german"
    assert dict(ds.queries) == QUERIES["german"]
    assert ds.corpus["1"].text == "dogs bark loudly"
    assert ds.metadata["language"] == "en" and ds.metadata["query_language"] == "de"


def test_collection_as_save_to_disk_records(_isolated_home):
    datasets = pytest.importorskip("datasets")
    write_raw(_isolated_home, "english")
    folder = _isolated_home / "mmarco" / "english"
    (folder / "collections" / "english_collection.tsv").unlink()
    datasets.Dataset.from_dict(
        {"id": [str(i) for i in range(5)], "text": PASSAGES["english"]}
    ).save_to_disk(str(folder / "collection"))
    ds = load_dataset("mmarco/english")
    assert ds.corpus["3"].text == "fish swim"
    assert len(ds.corpus) == 5


def test_subset_keeping_judged_passages_is_marked_easier(_isolated_home, caplog):
    write_raw(_isolated_home, "german")
    with caplog.at_level(logging.WARNING):
        ds = load_dataset("mmarco/german", max_docs=1)
    # the first passage, plus the judged ones (1 and 4)
    assert sorted(ds.corpus) == ["0", "1", "4"]
    sub = ds.metadata["subset"]
    assert sub["max_docs"] == 1 and sub["keep_judged"] is True and sub["n_docs"] == 3
    assert sub["full_size"] == 5 and "easier" in sub["note"]
    assert any("subset of 3 of 5 passages" in r.message for r in caplog.records)
    found = check_corpus_coverage(ds.qrels, ds.corpus, metadata=ds.metadata)
    assert [f.code for f in found] == ["subset_keeps_judged"]


def test_subset_without_judged_passages_is_caught_by_the_checks(_isolated_home):
    write_raw(_isolated_home, "german")
    ds = load_dataset("mmarco/german", max_docs=2, keep_judged=False)
    assert sorted(ds.corpus) == ["0", "1"]
    assert ds.metadata["subset"]["keep_judged"] is False
    found = check_corpus_coverage(ds.qrels, ds.corpus, metadata=ds.metadata)
    assert [f.code for f in found] == ["judged_missing"]
    assert "1 of 2 relevant judged documents" in found[0].message


def test_errors(_isolated_home):
    with pytest.raises(UnknownNameError, match="german"):
        load_dataset("mmarco/germn/english")
    with pytest.raises(DatasetError, match="no split"):
        load_dataset("mmarco/german", split="test")
    with pytest.raises(DatasetError, match="max_docs"):
        load_dataset("mmarco/german", max_docs=0)
    with pytest.raises(DownloadError) as err:
        load_dataset("mmarco/japanese")
    assert str(_isolated_home / "mmarco" / "japanese") in str(err.value)
    assert "qrels.dev.small.tsv" in str(err.value)
