"""Retriever spec strings: parsing, typing, presets, errors, canonical names."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nuggetbench.errors import SpecError, UnknownNameError
from nuggetbench.retrieval import list_retrievers, parse_retriever, register_retriever
from nuggetbench.retrieval import spec as spec_mod
from nuggetbench.retrieval.bm25.retriever import BM25


def test_defaults():
    r = parse_retriever("bm25")
    assert isinstance(r, BM25)
    assert (r.k1, r.b, r.method, r.stemmer, r.stopwords) == (1.5, 0.75, "lucene", "english", "en")
    assert r.name == "bm25"


def test_typed_values():
    r = parse_retriever("bm25:k1=1,b=0.4,cache=false,threads=2")
    assert r.k1 == 1.0 and isinstance(r.k1, float) and r.b == 0.4
    assert r.cache is False and r.threads == 2
    r = parse_retriever(" bm25 : method=robertson , stemmer=porter , stopwords=none ")
    assert (r.method, r.stemmer, r.stopwords) == ("robertson", "porter", "none")


def test_preset_and_override():
    r = parse_retriever("bm25:preset=bm25s")
    assert (r.k1, r.b) == (1.5, 0.75)
    assert r.name == parse_retriever("bm25").name  # bm25s' defaults are plain bm25's
    r = parse_retriever("bm25:preset=bm25s,b=0.6")
    assert (r.k1, r.b) == (1.5, 0.6)
    with pytest.raises(SpecError) as exc:
        parse_retriever("bm25:preset=bm25")
    assert "bm25s" in str(exc.value)


def test_retired_pyserini_preset_says_what_to_write():
    """``preset=pyserini`` set k1=0.9,b=0.4 on bm25s, which is not Pyserini's BM25: it is
    refused, naming the parameters' spelling and the preset that is Pyserini's."""
    with pytest.raises(SpecError) as exc:
        parse_retriever("bm25:preset=pyserini")
    msg = str(exc.value)
    assert "bm25:k1=0.9,b=0.4" in msg and "preset=lucene-flat" in msg and "removed" in msg


def test_every_preset_says_what_it_reproduces():
    """No preset is named after a tool without saying what of it it reproduces; no preset
    is named after Pyserini unless it runs Pyserini (backend=lucene)."""
    from nuggetbench.retrieval.bm25.retriever import BM25

    assert set(BM25.PRESET_NOTES) == set(BM25.PRESETS)
    for name, options in BM25.PRESETS.items():
        if "pyserini" in BM25.PRESET_NOTES[name].lower():
            assert options.get("backend") == "lucene", name
    assert not set(BM25.PRESETS) & set(BM25.RETIRED_PRESETS)


@pytest.mark.parametrize(
    "spec",
    ["bm25:k1=0.9,b=0.4", "bm25:method=bm25+,delta=1.0", "bm25:stemmer=none,stopwords=de", "bm25"],
)
def test_name_round_trips(spec):
    r = parse_retriever(spec)
    again = parse_retriever(r.name)
    assert again.name == r.name and again.params == r.params


def test_delta_only_named_for_methods_that_use_it():
    assert parse_retriever("bm25:delta=1.0").name == "bm25"
    assert parse_retriever("bm25:method=bm25l,delta=1.0").name == "bm25:method=bm25l,delta=1.0"


def test_unknown_option_names_the_part_and_lists_valid():
    with pytest.raises(SpecError) as exc:
        parse_retriever("bm25:k=0.9")
    msg = str(exc.value)
    assert "'k'" in msg and "k1" in msg and "stopwords" in msg and "preset" in msg


@pytest.mark.parametrize(
    "spec,fragment",
    [
        ("bm25:k1=abc", "k1"),
        ("bm25:cache=maybe", "cache"),
        ("bm25:threads=1.5", "threads"),
        ("bm25:k1", "name=value"),
        ("bm25:k1=1,k1=2", "twice"),
        ("bm25:k1=1,,b=0.5", "empty option"),
        ("bm25:b=1.5", "between 0 and 1"),
        ("bm25:method=okapi", "lucene"),
        ("bm25:stemmer=englsh", "english"),
        ("bm25:stopwords=klingon", "en"),
        ("bm25:backend=gpu", "backend"),
        ("", "empty"),
    ],
)
def test_bad_specs(spec, fragment):
    with pytest.raises(SpecError) as exc:
        parse_retriever(spec)
    assert fragment in str(exc.value)


def test_unknown_prefix_suggests():
    with pytest.raises(UnknownNameError) as exc:
        parse_retriever("bm52:k1=1")
    assert "bm25" in str(exc.value)


def test_registry_is_import_strings(tmp_path, monkeypatch):
    (tmp_path / "nb_fake_retriever.py").write_text(
        "class Fake:\n"
        "    PRESETS = {'big': {'size': 10}}\n"
        "    def __init__(self, *, size: int = 1, label: str = 'x', on: bool = True):\n"
        "        self.size, self.label, self.on = size, label, on\n"
        "        self.name = 'fake'\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(spec_mod, "RETRIEVERS", dict(spec_mod.RETRIEVERS))
    register_retriever("fake", "nb_fake_retriever:Fake")
    assert "fake" in list_retrievers()
    r = parse_retriever("fake:preset=big,label=12,on=no")
    assert (r.size, r.label, r.on) == (10, "12", False)


def test_parsing_imports_no_bm25s():
    code = (
        "import sys\nfrom nuggetbench.retrieval import list_retrievers, parse_retriever\n"
        "assert 'bm25' in list_retrievers()\nr = parse_retriever('bm25:k1=0.9')\n"
        "print('bm25s' in sys.modules, 'nuggetbench.retrieval.bm25.retriever' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_an_engine_record_checks_and_refuses_its_options(monkeypatch):
    """An external engine is one record: the options outside its list are refused all at once,
    its ``check`` canonicalises its own values, its ``own`` options are refused elsewhere, and
    its availability is asked last."""
    from dataclasses import replace

    from nuggetbench.retrieval.bm25 import retriever

    seen = []

    def check(options):
        seen.append(options.k1)
        return replace(options, k1=round(options.k1, 1))

    record = replace(retriever.ENGINES["lucene"], check=check, available=lambda: True)
    monkeypatch.setitem(retriever.ENGINES, "lucene", record)
    assert BM25(backend="lucene", k1=0.94).k1 == 0.9 and seen == [0.94]
    with pytest.raises(SpecError, match=r"method=atire, stemmer=porter belong to the bm25s"):
        BM25(backend="lucene", method="atire", stemmer="porter")
    assert seen == [0.94]  # refused before the engine's own check
    with pytest.raises(SpecError, match="fields=multifield is an option of backend=lucene"):
        BM25(fields="multifield")
    missing = replace(record, available=lambda: False)
    monkeypatch.setitem(retriever.ENGINES, "lucene", missing)
    with pytest.raises(SpecError, match=r"needs Pyserini and Java: pip install"):
        BM25(backend="lucene")
