"""The LLM stages against the local server, and pooling, filtering, calibration, plans, prompts."""

from __future__ import annotations

import json
import math

import pytest

from llm_server import LLMServer
from nuggetbench.builder.calibration import (
    NuggetLabel,
    calibrate,
    cohen_kappa,
    nugget_quality,
    read_labels,
)
from nuggetbench.builder.export import FilterOptions, filter_questions, query_rows
from nuggetbench.builder.plan import parse_plan
from nuggetbench.builder.pooling import PoolOptions, build_pool
from nuggetbench.builder.questions import Question
from nuggetbench.data import Document, InMemoryCorpus
from nuggetbench.errors import FormatError, InputError, UnknownNameError
from nuggetbench.judging.answer_nuggets import NuggetOptions, NuggetResult, generate_nuggets
from nuggetbench.judging.support import JudgeItem, JudgeOptions, JudgeResult, judge_pool
from nuggetbench.llm.client import LLMClient, LLMSettings
from nuggetbench.llm.jsonout import InvalidAnswer, extract_json, parse_judgments
from nuggetbench.llm.prompts import available, load_prompt


@pytest.fixture()
def server():
    with LLMServer() as srv:
        yield srv


@pytest.fixture()
def client(server, tmp_path):
    c = LLMClient(
        LLMSettings(model="m", base_url=server.base_url, timeout=5, backoff=0.01),
        tmp_path / "c.sqlite",
    )
    yield c
    c.close()


Q1 = Question(
    "1",
    "Frobnicate?",
    "How?",
    "Call frobnicate with a level parameter. Install widgets with pip first.",
)
Q2 = Question(
    "2",
    "Spin?",
    "Fast?",
    "Configure spin_rate inside config.toml carefully. Gizmos spin clockwise normally.",
)


def test_nuggets_and_repair_of_an_answer_that_is_not_json(server, client):
    server.inject("not_json", task="nuggets")
    result = generate_nuggets(client, [Q1, Q2])
    assert result.nuggets == {
        "1": ["Call frobnicate with a level parameter.", "Install widgets with pip first."],
        "2": [
            "Configure spin_rate inside config.toml carefully.",
            "Gizmos spin clockwise normally.",
        ],
    }
    assert result.nugget_ids("1") == ["1_0", "1_1"]
    bodies = [e.body for e in server.log]
    assert len(bodies) == 3
    repair = bodies[2]["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert (
        "could not be used" in repair[3]["content"]
        and "prose rather than JSON" in repair[2]["content"]
    )
    assert bodies[0]["temperature"] == 0.1


def test_nuggets_that_stay_invalid_are_reported(server, client):
    server.inject("not_json", times=3, task="nuggets")
    result = generate_nuggets(client, [Q1], NuggetOptions(max_repairs=2))
    assert result.nuggets == {} and "no JSON object" in result.failed["1"]
    rows = result.as_rows()
    assert NuggetResult.from_rows(rows).failed == result.failed


def corpus_of(texts: dict[str, str]) -> InMemoryCorpus:
    return InMemoryCorpus([Document(k, v) for k, v in texts.items()])


def test_judging_reasks_only_the_missing_pairs(server, client):
    corpus = corpus_of(
        {
            "d1": "frobnicate level parameter call",
            "d2": "install widgets with pip first",
            "d3": "nothing relevant at all here",
        }
    )
    item = JudgeItem(
        "1",
        "Frobnicate?",
        (
            ("1_0", "Call frobnicate with a level parameter."),
            ("1_1", "Install widgets with pip first."),
        ),
        ("d1", "d2", "d3"),
    )
    server.inject("partial", task="judge")
    result = judge_pool(client, [item], corpus, JudgeOptions(batch_size=20))
    # the 6 pairs: the partial answer covered 3 (n1 x c1..c3); the re-ask lists n2 x c1..c3 only
    first, second = [e.body["messages"][1]["content"] for e in server.log]
    assert "<pairs>" not in first
    assert "<pairs>\nn2:c1 n2:c2 n2:c3\n</pairs>" in second
    assert '<nugget id="n1">' not in second and '<nugget id="n2">' in second
    assert result.reasked_pairs == 3 and result.rounds == 2 and not result.unjudged
    support = {pair: s for pair, (s, _) in result.verdicts["1"].items()}
    assert support == {
        ("1_0", "d1"): True,
        ("1_0", "d2"): False,
        ("1_0", "d3"): False,
        ("1_1", "d1"): False,
        ("1_1", "d2"): True,
        ("1_1", "d3"): False,
    }
    assert JudgeResult.from_rows(result.as_rows()).verdicts == result.verdicts


def test_judging_batches_and_unjudged_pairs(server, client):
    corpus = corpus_of({f"d{i}": f"chunk {i} install widgets" for i in range(5)})
    item = JudgeItem(
        "1", "Q", (("1_0", "Install widgets with pip first."),), tuple(f"d{i}" for i in range(5))
    )
    server.inject("not_json", times=10, task="judge")
    result = judge_pool(client, [item], corpus, JudgeOptions(batch_size=2, max_rounds=2))
    assert len(server.log) == 6  # 3 batches (2 + 2 + 1 chunks), each asked twice
    assert sorted(result.unjudged["1"]) == [("1_0", f"d{i}") for i in range(5)]
    assert result.verdicts["1"] == {}


def test_parse_judgments_and_extract_json():
    text = (
        'Thinking...\n```json\n{"judgments": [{"nugget": "n1", "chunk": "c1", "supported": "yes"}, '
        '{"nugget": "n1", "chunk": "c2", "supported": "maybe"}]}\n```'
    )
    assert parse_judgments(text) == [("n1", "c1", True, "")]
    assert extract_json('noise {"a": 1} then {"nuggets": ["x"]} end', "nuggets") == {
        "nuggets": ["x"]
    }
    with pytest.raises(InvalidAnswer):
        extract_json("no json here", "nuggets")


def test_pool_is_the_deduplicated_top_of_each_technique():
    corpus = corpus_of(
        {
            "a1": "alpha apple",
            "a2": "alpha avocado",
            "a3": "alpha",
            "b1": "banana bread",
            "b2": "banana",
            "z": "zebra",
        }
    )
    texts = {"answer": {"q": "alpha apple avocado"}, "nuggets": {"q": "banana bread"}}
    result = build_pool(corpus, texts, PoolOptions(techniques=("answer", "nuggets"), pool_depth=2))
    # a1 and a2 tie (one shared and one own term each): trec_eval's rule puts the larger id first
    assert result.by_technique["answer"]["q"] == ["a2", "a1"]
    assert result.by_technique["nuggets"]["q"] == ["b1", "b2"]
    assert result.pool == {"q": ["a2", "a1", "b1", "b2"]}
    both = build_pool(
        corpus,
        {"answer": {"q": "alpha"}, "nuggets": {"q": "alpha apple"}},
        PoolOptions(techniques=("answer", "nuggets"), pool_depth=3),
    )
    assert len(both.pool["q"]) == len(set(both.pool["q"])) == 3  # the same three alpha chunks, once
    with pytest.raises(InputError, match="unknown technique"):
        PoolOptions(techniques=("telepathy",))


def _judged(pairs):
    return {(n, d): (s, "") for n, d, s in pairs}


def test_filters_count_what_each_removes():
    qs = [Question(str(i), f"T{i}", "B", "A") for i in range(1, 5)]
    nug = NuggetResult(nuggets={"1": ["x", "y"], "2": ["x", "y"], "3": ["x"]}, failed={"4": "bad"})
    judge = JudgeResult(
        verdicts={
            "1": _judged([("1_0", "d1", True), ("1_1", "d2", True), ("1_1", "d3", False)]),
            "2": _judged([("2_0", "d1", True), ("2_1", "d1", False)]),
            "3": _judged([("3_0", "d1", False)]),
        }
    )
    kept, rep = filter_questions(qs, nug, judge)
    assert [q.question_id for q in kept] == ["1"]
    assert (rep["no_nuggets"], rep["no_supported_nugget"], rep["any_unsupported_nugget"]) == (
        1,
        1,
        1,
    )
    assert rep["share_no_supported"] == pytest.approx(1 / 3, abs=1e-4)
    assert rep["share_any_unsupported"] == pytest.approx(1 / 2, abs=1e-4)
    kept, rep = filter_questions(qs, nug, judge, FilterOptions(drop_any_unsupported=False))
    assert [q.question_id for q in kept] == ["1", "2"]
    rows = query_rows(kept, nug, judge)
    assert rows[0]["nuggets"][1] == {
        "_id": "1_1",
        "text": "y",
        "relevant_corpus_ids": ["d2"],
        "non_relevant_corpus_ids": ["d3"],
    }
    assert list(rows[0]) == ["query_id", "query_title", "query_text", "answer_text", "nuggets"]


def test_cohen_kappa_hand_case():
    a = [1, 1, 0, 0, 1, 0, 1, 1, 0, 1]
    b = [1, 0, 0, 0, 1, 1, 1, 1, 0, 1]
    # p_o = 8/10; both raters say 1 six times in ten: p_e = .6*.6 + .4*.4 = .52
    assert cohen_kappa(a, b) == pytest.approx((0.8 - 0.52) / (1 - 0.52))
    assert cohen_kappa(a, a) == pytest.approx(1.0)
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))
    # three labels: p_o = 2/4; P(a) = (.5,.25,.25), P(b) = (.25,.5,.25): p_e = .125+.125+.0625
    assert cohen_kappa(["x", "x", "y", "z"], ["x", "y", "y", "y"]) == pytest.approx(
        (0.5 - 0.3125) / 0.6875
    )
    with pytest.raises(InputError):
        cohen_kappa([1], [1, 0])


def test_nugget_quality_hand_case():
    labels = [
        NuggetLabel("q1", "a", True),
        NuggetLabel("q1", "b", False, True),
        NuggetLabel("q1", "c", False),
        NuggetLabel("q1", "d", False),
        NuggetLabel("q2", "e", False),
        NuggetLabel("q2", "f", False),
    ]
    out = nugget_quality(labels, {"q1": 1}, formula="strict")  # the paper's: test_calibration
    assert out["per_query"]["q1"] == pytest.approx(
        {"groundedness": 3 / 4, "precision": 2 / 4, "recall": 2 / 3}
    )
    assert out["per_query"]["q2"] == pytest.approx({"groundedness": 1, "precision": 1, "recall": 1})
    assert out["micro"] == pytest.approx(
        {"groundedness": 5 / 6, "precision": 4 / 6, "recall": 4 / 5}
    )
    assert out["macro"] == pytest.approx(
        {"groundedness": 0.875, "precision": 0.75, "recall": (2 / 3 + 1) / 2}
    )


def test_calibration_from_a_labels_file(tmp_path):
    path = tmp_path / "labels.jsonl"
    lines = [
        {
            "type": "nugget",
            "query_id": "1",
            "nugget_id": "1_0",
            "hallucinated": "no",
            "minor_or_redundant": False,
        },
        {"type": "missing", "query_id": "1", "missing": 1},
        {"type": "support", "query_id": "1", "nugget_id": "1_0", "doc_id": "d1", "supported": True},
        {"type": "support", "query_id": "1", "nugget_id": "1_0", "doc_id": "d2", "supported": True},
        {
            "type": "support",
            "query_id": "1",
            "nugget_id": "1_0",
            "doc_id": "d9",
            "supported": False,
            "judge": False,
        },
        {
            "type": "support",
            "query_id": "1",
            "nugget_id": "1_0",
            "doc_id": "dX",
            "supported": False,
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    nug, missing, support = read_labels(path)
    verdicts = {"1": {("1_0", "d1"): (True, ""), ("1_0", "d2"): (False, "")}}
    out = calibrate(nug, missing, support, verdicts)
    assert out["judge"]["pairs"] == 3 and out["judge"]["accuracy"] == pytest.approx(2 / 3)
    assert out["support_pairs_without_verdict"] == 1
    assert out["nuggets"]["micro"]["recall"] == pytest.approx(1 / 2)
    path.write_text('{"type": "nugget", "query_id": "1"}\n')
    with pytest.raises(FormatError, match="line 1"):
        read_labels(path)


def test_plan_parsing(tmp_path, monkeypatch):
    monkeypatch.delenv("NUGGETBENCH_LLM_MODEL", raising=False)
    raw = {
        "output": "out",
        "questions": {"source": "Posts.xml", "tags": ["a"]},
        "repos": [{"name": "r", "path": "repo"}],
        "llm": {"model": "gpt-x"},
        "pooling": {"retrievers": ["bm25"], "pool_depth": 5},
        "budget": {"max_calls": 7},
        "prices": {"gpt-x": {"input": 1.5, "output": 6}},
    }
    plan = parse_plan(raw, base=tmp_path)
    assert plan.questions.source == tmp_path / "Posts.xml" and plan.repos[0].path == str(
        tmp_path / "repo"
    )
    assert plan.pooling.pool_depth == 5 and plan.llm.max_calls == 7 and plan.llm.price == (1.5, 6.0)
    assert plan.workdir == tmp_path / "out" / "_build" and plan.questions.filter.tags == ("a",)
    with pytest.raises(InputError, match="Did you mean 'pool_depth'"):
        parse_plan({**raw, "pooling": {"pool_dept": 3}}, base=tmp_path)
    with pytest.raises(InputError, match="looks like a credential"):
        parse_plan({**raw, "llm": {"model": "gpt-x", "api_key": "sk-123"}}, base=tmp_path)
    with pytest.raises(InputError, match="at least one repository"):
        parse_plan({**raw, "repos": []}, base=tmp_path)
    with pytest.raises(InputError, match="no LLM model"):
        parse_plan({**raw, "llm": {}}, base=tmp_path)


def test_prompts_are_versioned_files():
    assert {"nuggets.v1", "judge.v1", "subq.v1", "hyde.v1"} <= set(available())
    p = load_prompt("nuggets")
    assert p.version == "nuggets.v1" and p.placeholders() == {
        "question_title",
        "question_body",
        "answer",
        "max_nuggets",
    }
    msgs = p.render(question_title="T", question_body="{{braces}} $x", answer="A", max_nuggets="3")
    assert "{{braces}} $x" in msgs[1]["content"]
    with pytest.raises(InputError, match="missing values"):
        p.render(question_title="T")
    with pytest.raises(UnknownNameError, match="Did you mean"):
        load_prompt("nugets")


def test_hyde_and_subq_retrievers_for_nuggetbench_run(server, monkeypatch):
    from nuggetbench.data import Queries
    from nuggetbench.retrieval.spec import parse_retriever

    monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("NUGGETBENCH_LLM_MODEL", "m")
    corpus = corpus_of(
        {
            "d1": "turbine spinning configuration",
            "d2": "pancake recipes",
            "d3": "widget frobnication",
        }
    )
    queries = Queries({"q1": "How to configure the turbine spinning speed?"})
    hyde = parse_retriever("hyde(bm25)")
    assert hyde.name == "hyde(bm25)"
    run = hyde.index(corpus).search(queries, 2)
    assert run.name == "hyde(bm25)" and run.doc_ids("q1")[0] == "d1"
    assert [e.task for e in server.log] == ["hyde"]
    hyde.index(corpus).search(queries, 2)  # the rewrite is cached
    assert len(server.log) == 1
    subq = parse_retriever("subq(bm25; max_subquestions=2)")
    assert subq.name == "subq(bm25; max_subquestions=2)" and subq.identity()["model"] == "m"
    run = subq.index(corpus).search(queries, 2)
    assert run.doc_ids("q1")[0] == "d1" and server.log[-1].task == "subq"
    assert parse_retriever("fuse(hyde(bm25), subq(bm25))").name == "fuse(hyde(bm25), subq(bm25))"
    monkeypatch.delenv("NUGGETBENCH_LLM_MODEL")
    with pytest.raises(InputError, match="needs an LLM: set NUGGETBENCH_LLM_MODEL"):
        parse_retriever("hyde(bm25)").index(corpus)


def test_pool_fuses_bm25_and_a_dense_model_by_normalised_sum():
    from nuggetbench.data import Queries
    from nuggetbench.retrieval.spec import parse_retriever
    from retrieval_tiny_models import tiny_models

    dense = f"dense:{tiny_models().bi_encoder}"
    texts = [
        "cat dog fish",
        "dog tree car",
        "house sun moon",
        "star red blue",
        "cat sun river",
        "apple bread coffee",
        "water light night",
        "train book paper",
        "dog dog cat",
        "city music",
    ]
    corpus = corpus_of({f"d{i}": t for i, t in enumerate(texts)})
    query = {"q": "cat dog sun"}
    result = build_pool(
        corpus,
        {"answer": query},
        PoolOptions(retrievers=("bm25", dense), techniques=("answer",), pool_depth=4),
    )
    # by hand: min-max normalise each run's scores, sum per document, rank (ties: larger id first)
    fused: dict[str, float] = {}
    for spec in ("bm25", dense):
        ranked = parse_retriever(spec).index(corpus).search(Queries(query), 100)["q"]
        scores = [s for _, s in ranked]
        lo, hi = min(scores), max(scores)
        for doc, s in ranked:
            fused[doc] = fused.get(doc, 0.0) + ((s - lo) / (hi - lo) if hi > lo else 1.0)
    expected = sorted(fused, key=lambda d: (-round(fused[d], 12), [-ord(c) for c in d]))[:4]
    assert result.pool["q"] == expected
