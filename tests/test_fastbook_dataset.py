"""The fastbook dataset on a synthetic folder (invented questions and notebooks, same format),
plus golden counts on the real data when ``../shared/data/fastbook`` is present."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from nuggetbench.datasets.fastbook import load, nugget_qrels, read_benchmark
from nuggetbench.errors import DatasetError, DownloadError, FormatError, SpecError


def write_nb(path: Path, cells) -> None:
    nb = v4.new_notebook()
    nb.cells = cells
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def component(text, contexts, explicit="true", extraneous="false"):
    return {
        "answer_component": text,
        "scoring_type": "simple",
        "context": contexts,
        "explicit_context": explicit,
        "extraneous_answer": extraneous,
    }


def question(chapter, number, text, components):
    return {
        "chapter": chapter,
        "question_number": number,
        "question_text": text,
        "gold_standard_answer": "...",
        "answer_context": components,
        "question_context": [],
    }


def benchmark():
    return {
        "questions": [
            question(
                1,
                1,
                "What do owls eat?",
                [
                    component("mice", ["Owls hunt mice at night."]),
                    component("insects", ["Small owls also eat insects."], explicit="false"),
                ],
            ),
            question(1, 2, "Where do owls nest?", [component("in trees", [])]),
            question(
                2,
                1,
                "What do bees make?",
                [
                    component("honey", ["Bees make honey"], extraneous="true"),
                ],
            ),
        ]
    }


@pytest.fixture
def fastbook_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    folder = root / "fastbook"
    write_nb(
        folder / "notebooks" / "01_owls.ipynb",
        [
            v4.new_markdown_cell("# Owls"),
            v4.new_markdown_cell("Owls hunt mice at night.\n\nSmall owls also eat insects."),
            v4.new_markdown_cell("## Questionnaire"),
            v4.new_markdown_cell("1. What do owls eat?"),
        ],
    )
    write_nb(
        folder / "notebooks" / "02_bees.ipynb",
        [
            v4.new_markdown_cell("# Bees"),
            v4.new_markdown_cell("Bees make honey from nectar. Owls hunt mice at night."),
        ],
    )
    (folder / "fastbook-benchmark.json").write_text(json.dumps(benchmark()), encoding="utf-8")
    monkeypatch.setenv("NUGGETBENCH_DATA", str(root))
    return folder


def test_read_benchmark(fastbook_root):
    queries, nuggets = read_benchmark(fastbook_root / "fastbook-benchmark.json")
    assert list(queries) == ["1_1", "1_2", "2_1"]
    assert queries["2_1"] == "What do bees make?" and queries.meta("1_2")["chapter"] == 1
    by_id = {n.nugget_id: n for n in nuggets}
    assert set(by_id) == {"1_1.1", "1_1.2", "1_2.1", "2_1.1"}
    assert by_id["1_1.2"].metadata["explicit_context"] is False
    assert by_id["2_1.1"].metadata["extraneous_answer"] is True
    assert by_id["1_2.1"].spans == ()
    assert by_id["1_1.1"].spans == ("Owls hunt mice at night.",)


def test_load_dataset(fastbook_root):
    ds = load(chunker="paragraphs")
    assert ds.id == "fastbook" and len(ds.queries) == 3
    assert ds.default_measures == ["AC_MRR@10", "AC_Recall@10", "Coverage@5"]
    assert len(ds.corpus) == 3  # two owl paragraphs, one bee paragraph
    nq = ds.qrels.nuggets
    owl_docs = {d for d, doc in ds.corpus.items() if doc.metadata["notebook"] == "01_owls"}
    bee_docs = set(ds.corpus) - owl_docs
    # the chapter restriction: the bee passage also quotes the owl sentence, but is not judged for 1_1
    assert set(ds.doc_filter["1_1"]) == owl_docs and set(ds.doc_filter["2_1"]) == bee_docs
    assert set(nq.supported("1_1")) <= owl_docs and len(nq.supported("1_1")) == 2
    assert set(nq.supported("2_1")) == bee_docs
    ceiling = ds.metadata["chunking_ceiling"]
    assert ceiling["n_nuggets_empty"] == 1 and ceiling["n_spans_found"] == 3
    assert ceiling["n_queries_complete"] == 2
    unrestricted = load(chunker="paragraphs", restrict_to_chapter=False)
    assert unrestricted.doc_filter is None
    assert len(unrestricted.qrels.nuggets.supported("1_1")) == 3  # now the bee passage counts too


def test_load_via_registry(fastbook_root):
    from nuggetbench.datasets import load_dataset

    ds = load_dataset("fastbook", chunker="cells")
    assert ds.metadata["chunker"] == "cells:headers=false,outputs=true"


def test_bad_chunker_spec(fastbook_root):
    with pytest.raises(SpecError, match="group=zero"):
        load(chunker="paragraphs:group=zero")


def test_offline_and_absent_names_the_folder(_isolated_home):
    with pytest.raises(DownloadError) as err:
        load()
    assert str(_isolated_home / "fastbook") in str(err.value)


def test_download_false(_isolated_home):
    with pytest.raises(DatasetError, match="not on disk"):
        load(download=False)


@pytest.mark.parametrize(
    "mutate, fragments",
    [
        (
            lambda b: b["questions"][1].pop("question_text"),
            ["question #2 (id 1_2)", "question_text"],
        ),
        (
            lambda b: b["questions"][0]["answer_context"][1].update(explicit_context="maybe"),
            ["question #1 (id 1_1)", "answer_context[1].explicit_context", "maybe"],
        ),
        (
            lambda b: b["questions"][2]["answer_context"][0].update(context="Bees"),
            ["question #3 (id 2_1)", "answer_context[0].context"],
        ),
        (lambda b: b["questions"][2].update(chapter="two"), ["question #3", "'chapter'"]),
        (lambda b: b["questions"][2].update(chapter=1), ["1_1", "occurs twice"]),
    ],
)
def test_malformed_benchmark_names_question_and_field(fastbook_root, mutate, fragments):
    data = benchmark()
    mutate(data)
    (fastbook_root / "fastbook-benchmark.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError) as err:
        load()
    for fragment in fragments:
        assert fragment in str(err.value)


def test_broken_notebook_names_the_file(fastbook_root):
    (fastbook_root / "notebooks" / "02_bees.ipynb").write_text("not json", encoding="utf-8")
    with pytest.raises(FormatError, match="02_bees.ipynb"):
        load(chunker="cells")


def test_missing_chapter_notebook(fastbook_root):
    (fastbook_root / "notebooks" / "02_bees.ipynb").unlink()
    with pytest.raises(DatasetError, match="chapter"):
        load()


def test_nugget_qrels_from_a_beir_corpus(fastbook_root, tmp_path):
    from click.testing import CliRunner

    from nuggetbench.cli.chunk import chunk_command
    from nuggetbench.data import JsonlCorpus

    out = tmp_path / "corpus.jsonl"
    nbs = sorted(str(p) for p in (fastbook_root / "notebooks").glob("*.ipynb"))
    result = CliRunner().invoke(chunk_command, [*nbs, "-c", "paragraphs", "-o", str(out)])
    assert result.exit_code == 0, result.output
    qrels, ceiling = nugget_qrels(JsonlCorpus(out))
    ds = load(chunker="paragraphs")
    assert qrels.to_dict() == ds.qrels.to_dict()
    assert ceiling.as_dict() == ds.metadata["chunking_ceiling"]


# --- real data -----------------------------------------------------------------------------
@pytest.mark.realdata
def test_real_chunk_counts_match_the_author(shared_data, monkeypatch):
    """Bakshi's published counts: 1967 one-paragraph and 713 three-paragraph chunks."""
    from nuggetbench.corpus import chunk_notebooks

    paths = sorted((shared_data / "fastbook" / "notebooks").glob("*.ipynb"))
    assert len(paths) == 7
    assert len(chunk_notebooks(paths, "paragraphs:group=1,headers=true")) == 1967
    assert len(chunk_notebooks(paths, "paragraphs:group=3,headers=true")) == 713


@pytest.mark.realdata
def test_real_dataset(shared_data, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    raw = json.loads(
        (shared_data / "fastbook" / "fastbook-benchmark.json").read_text(encoding="utf-8")
    )
    questions = raw["questions"]
    n_components = sum(len(q["answer_context"]) for q in questions)
    n_empty = sum(1 for q in questions for a in q["answer_context"] if not a["context"])
    n_spans = sum(len(a["context"]) for q in questions for a in q["answer_context"])
    ds = load()
    assert len(ds.queries) == len(questions) == 191
    assert "4_27" in ds.queries
    assert ds.qrels.nuggets.n_nuggets == n_components
    c = ds.metadata["chunking_ceiling"]
    assert c["n_spans"] == n_spans and c["n_nuggets_empty"] == n_empty
    assert c["n_spans_found"] + c["n_spans_split"] + c["n_spans_absent"] == n_spans
    assert (
        c["n_spans_found"] >= n_spans - 5
    )  # nearly every context is verbatim in a 3-paragraph chunk
    assert all(len(ds.doc_filter[q]) > 0 for q in ds.queries)


@pytest.mark.realdata
def test_real_bm25_scores_agree_with_the_authors_loops(shared_data, monkeypatch):
    """AC_MRR@10 / AC_Recall@10 of a BM25 run equal a re-statement of the author's
    modified_mrr / modified_recall applied to the retrieved passage texts."""
    from ftfy import fix_text

    from nuggetbench.measures import score as evaluate
    from nuggetbench.retrieval.spec import parse_retriever

    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    ds = load()
    run = parse_retriever("bm25").index(ds.corpus).search(ds.queries, 10, doc_filter=ds.doc_filter)
    res = evaluate(ds.qrels, run, ["AC_MRR@10", "AC_Recall@10"], profile=ds.default_profile)
    raw = json.loads(
        (shared_data / "fastbook" / "fastbook-benchmark.json").read_text(encoding="utf-8")
    )
    mrr, recall = {}, {}
    for q in raw["questions"]:
        qid = f"{q['chapter']}_{q['question_number']}"
        passages = [fix_text(ds.corpus[d].text) for d in run.doc_ids(qid)][:10]
        firsts = []
        for comp in q["answer_context"]:
            ctxs = [fix_text(c) for c in comp["context"]]
            hit = [r for r, p in enumerate(passages, 1) if any(c in p for c in ctxs)]
            firsts.append(hit[0] if hit else None)
        found = [f for f in firsts if f is not None]
        recall[qid] = len(found) / len(firsts)
        mrr[qid] = 1 / max(found) if len(found) == len(firsts) and found else 0.0
    assert res.values("AC_Recall@10") == pytest.approx(recall)
    assert res.values("AC_MRR@10") == pytest.approx(mrr)
    assert all(doc in ds.doc_filter[q] for q in run for doc in run.doc_ids(q))
