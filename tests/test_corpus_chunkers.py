"""Chunkers on synthetic notebooks (same format as the fastbook chapters, invented text)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from nuggetbench.corpus import chunk_notebooks, parse_chunker, read_notebook
from nuggetbench.corpus.chunkers import split_paragraphs
from nuggetbench.errors import DuplicateError, FormatError, SpecError


def make_notebook(path: Path, cells: list) -> Path:
    nb = v4.new_notebook()
    nb.cells = cells
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def sample_cells():
    code = v4.new_code_cell("x = 1\nx")
    code.outputs = [
        v4.new_output("stream", name="stdout", text="hello\n"),
        v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1),
    ]
    return [
        v4.new_code_cell("#hide\nimport setup"),  # 0: before any header
        v4.new_raw_cell("[[chapter_anchor]]"),  # 1: raw, ignored
        v4.new_markdown_cell("# Apples"),  # 2: header only
        v4.new_markdown_cell("Red apples grow.\n\nGreen apples are sour."),  # 3: two paragraphs
        code,  # 4: code with outputs
        v4.new_markdown_cell(
            "## Pears \n\nPears are soft.\n \nPears ripen late.\n\n\nPear trees live long."
        ),  # 5
        v4.new_markdown_cell("Quinces are hard."),  # 6
        v4.new_markdown_cell("### Further Research"),  # 7: skipped section
        v4.new_markdown_cell("Study plums."),  # 8: skipped
        v4.new_markdown_cell("## Questionnaire"),  # 9: stop
        v4.new_markdown_cell("1. What colour are apples?"),  # 10: excluded
    ]


@pytest.fixture
def nb_path(tmp_path):
    return make_notebook(tmp_path / "03_fruit.ipynb", sample_cells())


CODE_TEXT = "```python\nx = 1\nx\n```\nOutput:\nhello\n1"


def test_read_notebook_renders_code_and_stops_at_questionnaire(nb_path):
    nb = read_notebook(nb_path)
    assert nb.name == "03_fruit"
    assert [c.index for c in nb.cells] == [0, 2, 3, 4, 5, 6]
    code = nb.cells[3]
    assert code.render() == CODE_TEXT
    assert code.header == "# Apples"
    assert nb.cells[4].header == "## Pears"  # trailing space stripped
    assert "apples?" not in nb.text and "plums" not in nb.text
    for cell in nb.cells:  # offsets point at the rendered cells
        assert nb.text[cell.start : cell.end] == cell.render()


def test_read_notebook_without_stop_reads_everything(nb_path):
    nb = read_notebook(nb_path, stop_at=None, skip_sections=())
    assert "What colour are apples?" in nb.text and "Study plums." in nb.text


def test_split_paragraphs_offsets():
    text = "  one\n\ntwo\n \n\nthree  "
    parts = split_paragraphs(text)
    assert [p for _, _, p in parts] == ["one", "two", "three"]
    for s, e, p in parts:
        assert text[s:e] == p


def test_paragraphs_with_headers(nb_path):
    docs = parse_chunker("paragraphs").chunk(read_notebook(nb_path))
    texts = [d.text for d in docs]
    assert texts == [
        "```python\n#hide\nimport setup\n```\nOutput:\n",
        "# Apples\n\nRed apples grow.",
        "# Apples\n\nGreen apples are sour.",
        "# Apples\n\n" + CODE_TEXT,
        "## Pears\n\nPears are soft.",
        "## Pears\n\nPears ripen late.",
        "## Pears\n\nPear trees live long.",
        "## Pears\n\nQuinces are hard.",
    ]
    assert docs[1].metadata["cells"] == [3, 3] and docs[7].metadata["cells"] == [6, 6]


def test_paragraphs_grouped_within_sections(nb_path):
    nb = read_notebook(nb_path)
    docs = parse_chunker("paragraphs:group=3,headers=true").chunk(nb)
    assert [d.text for d in docs] == [
        "```python\n#hide\nimport setup\n```\nOutput:\n",
        "# Apples\n\nRed apples grow.\n\nGreen apples are sour.\n\n" + CODE_TEXT,
        "## Pears\n\nPears are soft.\n\nPears ripen late.\n\nPear trees live long.",
        "## Pears\n\nQuinces are hard.",
    ]
    second = docs[1].metadata
    assert second["cells"] == [3, 4] and second["header"] == "# Apples"
    s, e = second["char_span"]
    assert nb.text[s:e].startswith("Red apples grow.") and nb.text[s:e].endswith("1")
    plain = parse_chunker("paragraphs:group=2,headers=false,code=false").chunk(nb)
    assert [d.text for d in plain] == [
        "Red apples grow.\n\nGreen apples are sour.",
        "Pears are soft.\n\nPears ripen late.",
        "Pear trees live long.\n\nQuinces are hard.",
    ]


def test_cells_chunker(nb_path):
    docs = parse_chunker("cells").chunk(read_notebook(nb_path))
    assert [d.text for d in docs] == [
        "```python\n#hide\nimport setup\n```\nOutput:\n",
        "Red apples grow.\n\nGreen apples are sour.",
        CODE_TEXT,
        "## Pears \n\nPears are soft.\n \nPears ripen late.\n\n\nPear trees live long.",
        "Quinces are hard.",
    ]
    with_headers = parse_chunker("cells:headers=true,outputs=false").chunk(read_notebook(nb_path))
    assert with_headers[2].text == "# Apples\n\n```python\nx = 1\nx\n```\nOutput:\n"
    assert with_headers[4].text == "## Pears\n\nQuinces are hard."


def test_token_windows_whitespace(tmp_path):
    words = [f"w{i}" for i in range(10)]
    path = make_notebook(tmp_path / "01_words.ipynb", [v4.new_markdown_cell(" ".join(words))])
    docs = parse_chunker("tokens:size=4,overlap=1").chunk(read_notebook(path))
    # windows start at 0, 3, 6 (step 3); the last reaches the end
    assert [d.text.split() for d in docs] == [words[0:4], words[3:7], words[6:10]]
    nb = read_notebook(path)
    for d in docs:
        s, e = d.metadata["char_span"]
        assert nb.text[s:e] == d.text


def test_token_windows_hf_tokenizer(tmp_path):
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "red": 1, "apples": 2, "grow": 3, ".": 4}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = tmp_path / "tok"
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    text = "Red apples grow. Green apples, sour apples."
    path = make_notebook(tmp_path / "02_tok.ipynb", [v4.new_markdown_cell(text)])
    chunker = parse_chunker(f"tokens:size=3,overlap=0,tokenizer=hf:{folder}")
    docs = chunker.chunk(read_notebook(path))
    n_tokens = len(tok.encode(text, add_special_tokens=False).ids)
    assert n_tokens == 10  # Red apples grow . Green apples , sour apples .
    assert len(docs) == 4
    assert docs[0].text == "Red apples grow"
    assert "".join(d.text for d in docs).replace(" ", "") == text.replace(" ", "")
    assert chunker.fingerprint().startswith("tokens:size=3,overlap=0,tokenizer=hf:")


def test_tiktoken_when_available(tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    try:
        tiktoken.get_encoding("gpt2")
    except Exception:
        pytest.skip("tiktoken encoding files are not cached (no network)")
    path = make_notebook(tmp_path / "01_t.ipynb", [v4.new_markdown_cell("one two three four five")])
    docs = parse_chunker("tokens:size=2,tokenizer=tiktoken:gpt2").chunk(read_notebook(path))
    assert "".join(d.text for d in docs) == "one two three four five"


def test_ids_are_stable_and_distinct(nb_path, tmp_path):
    nb = read_notebook(nb_path)
    a = [d.doc_id for d in parse_chunker("paragraphs:group=3").chunk(nb)]
    b = [
        d.doc_id
        for d in parse_chunker("paragraphs:headers=true,group=3").chunk(read_notebook(nb_path))
    ]
    c = [d.doc_id for d in parse_chunker("paragraphs").chunk(nb)]
    assert a == b  # same canonical spec, same ids
    assert not set(a) & set(c)
    assert all(i.startswith("03_fruit/") for i in a) and a[0].endswith("/0000")
    assert (
        parse_chunker("paragraphs:group=3").spec
        == "paragraphs:group=3,headers=true,code=true,outputs=true"
    )


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("paragraphs:group=abc", "group=abc"),
        ("paragraphs:group=0", "group=0"),
        ("paragraph", "Did you mean 'paragraphs'"),
        ("paragraphs:grop=3", "Did you mean 'group'"),
        ("paragraphs:group", "'group'"),
        ("paragraphs:group=2,group=3", "given twice"),
        ("paragraphs:headers=maybe", "headers=maybe"),
        ("tokens:overlap=3", "'size' is required"),
        ("tokens:size=4,overlap=4", "overlap=4 must be smaller"),
        ("", "empty chunker spec"),
    ],
)
def test_bad_specs_name_the_part(spec, fragment):
    with pytest.raises(SpecError) as err:
        parse_chunker(spec)
    assert fragment in str(err.value)


def test_unknown_tokenizer_is_a_spec_error():
    with pytest.raises(SpecError, match="/no/such/tokenizer"):
        parse_chunker("tokens:size=8,tokenizer=hf:/no/such/tokenizer")
    with pytest.raises(SpecError, match="bpe"):
        parse_chunker("tokens:size=8,tokenizer=bpe")


def test_unparsable_notebook_names_the_file(tmp_path):
    bad = tmp_path / "05_broken.ipynb"
    bad.write_text('{"cells": [', encoding="utf-8")
    with pytest.raises(FormatError) as err:
        read_notebook(bad)
    assert "05_broken.ipynb" in str(err.value)
    with pytest.raises(FormatError, match="05_broken.ipynb"):
        chunk_notebooks([bad], "paragraphs")


def test_chunk_cache_roundtrip(nb_path, tmp_path, monkeypatch, _isolated_home):
    first = chunk_notebooks([nb_path], "paragraphs:group=3")
    folders = list((_isolated_home / "cache" / "chunks").iterdir())
    assert len(folders) == 1 and folders[0].name.startswith("paragraphs_group=3_headers=true")
    meta = json.loads((folders[0] / "meta.json").read_text())
    assert meta["n_documents"] == len(first)

    import nuggetbench.corpus.cache as cache_mod

    def boom(*a, **k):
        raise AssertionError("the cache should have been used")

    with monkeypatch.context() as patch:
        patch.setattr(cache_mod, "read_notebook", boom)
        second = chunk_notebooks([nb_path], "paragraphs:group=3")
    assert [(d.doc_id, d.text, d.metadata) for d in second.iter_documents()] == [
        (d.doc_id, d.text, d.metadata) for d in first.iter_documents()
    ]
    # a changed notebook gets a new cache entry
    make_notebook(nb_path, sample_cells() + [v4.new_markdown_cell("extra")])
    chunk_notebooks([nb_path], "paragraphs:group=3")
    assert len(list((_isolated_home / "cache" / "chunks").iterdir())) == 2


def test_duplicate_notebook_names(tmp_path):
    a = make_notebook(tmp_path / "a" / "01_x.ipynb", [v4.new_markdown_cell("one")])
    b = make_notebook(tmp_path / "b" / "01_x.ipynb", [v4.new_markdown_cell("two")])
    with pytest.raises(DuplicateError, match="01_x"):
        chunk_notebooks([a, b], "cells", cache=False)


def test_cli_chunk_writes_a_beir_corpus(nb_path, tmp_path):
    from click.testing import CliRunner

    from nuggetbench.cli.chunk import chunk_command
    from nuggetbench.data import JsonlCorpus

    out = tmp_path / "corpus.jsonl"
    result = CliRunner().invoke(
        chunk_command, [str(nb_path), "--chunker", "paragraphs", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    corpus = JsonlCorpus(out)
    assert len(corpus) == 8
    assert (
        corpus["03_fruit/" + parse_chunker("paragraphs").tag + "/0001"].text
        == "# Apples\n\nRed apples grow."
    )
    bad = CliRunner().invoke(
        chunk_command, [str(nb_path), "--chunker", "paragraphs:group=x", "-o", str(out)]
    )
    assert bad.exit_code != 0 and "group=x" in str(bad.exception)
