"""LLM rerankers against the loopback OpenAI-compatible server (``tests/llm_server.py``): oracle
rankings on BIRCO-style pools, permutation repairs, grades, objectives, caching and resuming."""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from llm_server import LLMServer
from nuggetbench.data import Document, InMemoryCorpus, Queries, Run
from nuggetbench.datasets import load_dataset
from nuggetbench.errors import InputError, SpecError
from nuggetbench.experiment import run_experiment
from nuggetbench.llm.client import LLMClient, LLMSettings
from nuggetbench.retrieval import RETRIEVERS, Pipeline, parse_retriever
from nuggetbench.retrieval.rerankers.llm import LLMListwise, LLMPointwise, truncate_tokens
from nuggetbench.retrieval.spec import public_spec
from nuggetbench.text.tokenizers import load_tokenizer

OBJECTIVE = "Rank the passages that name the same secret topic first."
_DOC = re.compile(r"\bD\d+\b")


def _saved_system(saved: dict, spec: str) -> dict:
    """A system's entry in a saved results.json, found by its spec (systems are keyed by label)."""
    labels = [k for k, v in saved["provenance"]["systems"].items() if v == spec]
    assert len(labels) == 1, saved["provenance"]["systems"]
    return saved["systems"][labels[0]]


def _corpus(texts):
    return InMemoryCorpus([Document(d, t) for d, t in texts.items()])


def _pool_data(n_queries=5, pool=30, seed=0):
    """A BIRCO-style split: each query ranks its own judged pool (grades 0-2, grade 0 included)."""
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "theta", "kappa"]
    query, corpus, qrel = {}, {}, {}
    n = 0
    for q in range(n_queries):
        qid = f"q{q}"
        query[qid] = f"question {q} about {' '.join(rng.choice(words, 3))}"
        qrel[qid] = {}
        grades = rng.choice([0, 0, 0, 1, 2], size=pool)
        for g in grades:
            cid = f"D{n}"
            n += 1
            corpus[cid] = f"{cid} passage text {' '.join(rng.choice(words, 12))} end"
            qrel[qid][cid] = int(g)
    return {"query": query, "corpus": corpus, "qrel": qrel}


def _write_birco(root, data, name="wtb"):
    folder = root / "birco" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_set.pickle").write_bytes(pickle.dumps(data, protocol=4))


def oracle(data):
    """The hidden relevance of the server: the qrels grade of the passage's document."""
    by_text = {text: qid for qid, text in data["query"].items()}

    def relevance(query: str, passage: str) -> float:
        m = _DOC.search(passage)
        return float(data["qrel"].get(by_text.get(query, ""), {}).get(m.group(0), 0)) if m else 0.0

    return relevance


class ShuffleRetriever:
    """A random first stage: each query's pool in a seeded random order."""

    def __init__(self, options=None, /, seed: int = 0):
        self.seed = seed
        self.name = f"shuffle:seed={seed}"
        self.params = {"seed": seed}

    def index(self, corpus, *, show_progress=False):
        return self

    def search(self, queries, k, *, doc_filter=None, show_progress=False, objective=None):
        rng = np.random.default_rng(self.seed)
        q_col, d_col, s_col = [], [], []
        for q in queries:
            docs = sorted(doc_filter[q])
            rng.shuffle(docs)
            docs = docs[:k]
            q_col += [q] * len(docs)
            d_col += docs
            s_col += list(range(len(docs), 0, -1))
        return Run(q_col, d_col, np.asarray(s_col, float), name=self.name)


@pytest.fixture()
def server():
    with LLMServer(hang_seconds=10) as srv:
        yield srv


@pytest.fixture()
def birco(tmp_path, monkeypatch, server):
    data = _pool_data()
    _write_birco(tmp_path / "data", data)
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setitem(RETRIEVERS, "shuffle", ShuffleRetriever)
    monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", server.base_url)
    server.relevance = oracle(data)
    return data


def _llm_requests(server, task=None):
    return [e for e in server.log if e.task in ((task,) if task else ("listwise", "pointwise"))]


def _run(specs, tmp_path, name="out", **kw):
    return run_experiment(
        load_dataset("birco/wtb"),
        specs,
        measures=["nDCG@10"],
        k=100,
        outdir=tmp_path / name,
        cache_runs=False,
        **kw,
    )


def test_oracle_listwise_turns_a_random_first_stage_into_the_ideal_ranking(birco, server, tmp_path):
    spec = "shuffle >> llm_listwise(model=test-model, k=100, window=20, step=10)"
    exp = _run(["shuffle", spec], tmp_path, with_objective=True)
    random_ndcg = exp.system("shuffle").results.per_query["nDCG@10"]
    ndcg = exp.system(spec).results.per_query["nDCG@10"]
    assert np.all(ndcg == 100.0) and random_ndcg.mean() < 90
    # pools of 30: windows (10, 30) and (0, 20) per query
    assert len(_llm_requests(server, "listwise")) == 2 * 5
    llm = exp.system(spec).run.metadata["llm"]
    assert llm["requests"] == llm["paid_calls"] == llm["windows"] == 10
    assert llm["repaired"] == 0 and llm["cached_calls"] == 0
    assert llm["prompt_tokens"] > 0 and llm["completion_tokens"] > 0
    # the task objective is in the system prompt of every request
    task = load_dataset("birco/wtb").objective
    for e in _llm_requests(server):
        assert e.body["messages"][0]["role"] == "system"
        assert task in e.body["messages"][0]["content"]
        assert task not in e.body["messages"][1]["content"]
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert _saved_system(saved, spec)["run_metadata"]["llm"]["windows"] == 10
    # a re-run is served by the LLM cache: no request reaches the endpoint
    before = len(server.log)
    again = _run([spec], tmp_path, name="again", with_objective=True)
    assert len(server.log) == before
    llm2 = again.system(spec).run.metadata["llm"]
    assert llm2["paid_calls"] == 0 and llm2["cached_calls"] == 10
    assert np.all(
        again.system(spec).results.per_query["nDCG@10"] == 100.0
    )  # the birco profile scales by 100


@pytest.fixture()
def objective(monkeypatch):
    from nuggetbench.datasets import birco as birco_module

    monkeypatch.setitem(birco_module.OBJECTIVES, "wtb", OBJECTIVE)
    return OBJECTIVE


def test_objective_goes_into_the_system_prompt_only_with_objective(
    birco, server, tmp_path, objective
):
    spec = "shuffle >> llm_pointwise(model=test-model, k=10, logprobs=false)"
    _run([spec], tmp_path, with_objective=True)
    with_obj = _llm_requests(server)
    assert with_obj and all(objective in e.body["messages"][0]["content"] for e in with_obj)
    server.log.clear()
    _run([spec], tmp_path, name="plain")
    plain = _llm_requests(server)
    assert plain and all(objective not in e.body["messages"][0]["content"] for e in plain)


def test_oracle_pointwise_with_and_without_logprobs(birco, server, tmp_path):
    with_lp = "shuffle >> llm_pointwise(model=test-model, k=50, scale=0-3)"
    text_only = "shuffle >> llm_pointwise(model=test-model, k=50, scale=0-3, logprobs=false)"
    exp = _run([with_lp, text_only], tmp_path)
    for spec in (with_lp, text_only):
        assert np.all(
            exp.system(spec).results.per_query["nDCG@10"] == 100.0
        )  # the birco profile scales by 100
    a = exp.system(with_lp).run.metadata["llm"]
    b = exp.system(text_only).run.metadata["llm"]
    assert a["pairs"] == a["expected_grades"] == a["requests"] == 5 * 30
    assert b["expected_grades"] == 0 and b["requests"] == 150
    bodies = [e.body for e in _llm_requests(server, "pointwise")]
    assert sum(bool(b.get("logprobs")) for b in bodies) == 150
    # expected grades from the server's distribution (70% on the grade, 30% on neighbours)
    run = exp.system(with_lp).run
    grades = birco["qrel"]["q0"]
    scores = dict(run["q0"])
    expected = {0: 0.3, 1: 1.0, 2: 2.0}
    for doc, score in scores.items():
        assert score == pytest.approx(expected[grades[doc]], abs=1e-6)


def test_pointwise_ties_keep_the_first_stage_order(server, tmp_path):
    server.relevance = lambda q, p: 1.0  # every passage gets grade 1
    corpus = _corpus({f"d{i}": f"text {i}" for i in range(8)})
    queries = Queries({"q": "some query"})
    first = Run(["q"] * 8, [f"d{i}" for i in (5, 2, 7, 0, 1, 6, 3, 4)], np.arange(8, 0, -1.0))
    rr = LLMPointwise(model="m", base_url=server.base_url, logprobs=False)
    out = rr.rerank(queries, first, corpus, 8)
    assert list(out.doc_ids("q")) == list(first.doc_ids("q"))
    assert np.allclose([s for _, s in out["q"]], 1.0, atol=1e-6)


def test_malformed_permutation_is_repaired_as_specified(tmp_path, monkeypatch):
    """Issue 37: a partial or repeated permutation is repaired as rank_llm repairs it, without
    asking again; it is counted ``repaired`` (not failed) and its answer stays cached."""
    corpus = _corpus({f"d{i}": f"passage {i}" for i in range(4)})
    queries = Queries({"q": "query"})
    first = Run(["q"] * 4, ["d0", "d1", "d2", "d3"], np.array([4.0, 3, 2, 1]))
    rr = LLMListwise(model="m", window=4, step=2)
    answers = []

    def transport(body):
        answers.append(body)
        return "[3] > [3] > [9] > [1]", 10, 5

    monkeypatch.setattr(
        LLMListwise,
        "client",
        lambda self: LLMClient(LLMSettings(model="m"), tmp_path / "c.sqlite", transport=transport),
    )
    out = rr.rerank(queries, first, corpus, 4)
    # [3] first, the repeat and the unknown [9] dropped, [1] next, then [2], [4] in their order
    assert list(out.doc_ids("q")) == ["d2", "d0", "d1", "d3"]
    llm = out.metadata["llm"]
    assert (llm["windows"], llm["repaired"], llm["reasked"], llm["failed"]) == (1, 1, 0, 0)
    assert (llm["duplicate_ids"], llm["unknown_ids"], llm["missing_ids"]) == (1, 1, 2)
    assert len(answers) == 1 and "[4] passage 3" in answers[0]["messages"][1]["content"]
    again = rr.rerank(queries, first, corpus, 4)  # the repaired answer was kept in the cache
    assert len(answers) == 1 and list(again.doc_ids("q")) == list(out.doc_ids("q"))
    assert again.metadata["llm"]["cached_calls"] == 1


def test_an_answer_ranking_no_passage_is_asked_again(tmp_path, monkeypatch):
    """Only an answer with no usable permutation (prose; ids naming no passage) is re-asked; a
    re-ask that ranks some passages is repaired and used; a window whose every answer ranks none
    keeps its incoming order, is counted failed and is not cached."""
    corpus = _corpus({f"d{i}": f"passage {i}" for i in range(6)})
    queries = Queries({"a": "alpha", "b": "beta", "c": "gamma"})
    first = Run(
        [q for q in "abc" for _ in range(6)], [f"d{i}" for _ in "abc" for i in range(6)],
        np.tile(np.arange(6, 0, -1.0), 3),
    )  # fmt: skip
    rr = LLMListwise(model="m", window=6, step=3, max_repairs=1)
    sent = []

    def transport(body):
        sent.append(body)
        text, turns = body["messages"][1]["content"], len(body["messages"])
        query = text.split("<query>\n", 1)[1].split("\n</query>", 1)[0]
        if query == "alpha":
            return "[2] > [1]", 5, 2  # partial: repaired, never re-asked
        if query == "beta":
            return ("I cannot rank these." if turns == 2 else "[6] > [9] > [6]"), 5, 2
        return "[17] > [12] are best", 5, 2  # gamma: ids naming no passage, every time

    monkeypatch.setattr(
        LLMListwise,
        "client",
        lambda self: LLMClient(LLMSettings(model="m"), tmp_path / "c.sqlite", transport=transport),
    )
    out = rr.rerank(queries, first, corpus, 6)
    llm = out.metadata["llm"]
    assert (llm["windows"], llm["repaired"], llm["reasked"], llm["failed"]) == (3, 2, 2, 1)
    assert len(sent) == 3 + 2  # one first answer per window, one re-ask each for beta and gamma
    assert "ranks none of the 6 passages" in sent[-1]["messages"][-1]["content"]
    assert list(out.doc_ids("a")) == ["d1", "d0", "d2", "d3", "d4", "d5"]
    assert list(out.doc_ids("b")) == ["d5", "d0", "d1", "d2", "d3", "d4"]  # the re-ask, repaired
    assert list(out.doc_ids("c")) == [f"d{i}" for i in range(6)]  # failed: incoming order
    # only the failed window's answers were dropped from the cache: a re-run asks gamma again
    rr.rerank(queries, first, corpus, 6)
    assert len(sent) == 5 + 2 and all("gamma" in b["messages"][1]["content"] for b in sent[5:])


def test_noisy_server_with_malformed_answers(birco, server, tmp_path):
    server.malformed = 0.4
    server.noise = 0.6
    spec = "shuffle >> llm_listwise(model=test-model, k=100, window=10, step=5)"
    pw = "shuffle >> llm_pointwise(model=test-model, k=100, logprobs=false)"
    exp = _run(["shuffle", spec, pw], tmp_path)
    llm = exp.system(spec).run.metadata["llm"]
    assert 0 < llm["repaired"] < llm["windows"] == 5 * 5
    assert llm["unknown_ids"] + llm["duplicate_ids"] + llm["missing_ids"] >= llm["repaired"]
    for q in birco["query"]:  # every pool document is still ranked once
        assert sorted(exp.system(spec).run.doc_ids(q)) == sorted(birco["qrel"][q])
    p = exp.system(pw).run.metadata["llm"]
    # malformed grades were re-asked once (the server answers repair turns well)
    assert p["repaired"] > 0 and p["unparsed"] == 0
    assert p["requests"] == 150 + p["repaired"]
    random_mean = exp.system("shuffle").results.means["nDCG@10"]
    assert exp.system(spec).results.means["nDCG@10"] > random_mean
    assert exp.system(pw).results.means["nDCG@10"] > random_mean


def test_unparsable_grades_after_the_repairs_are_counted_and_not_cached(tmp_path, monkeypatch):
    corpus = _corpus({"a": "zebraquokka", "b": "plain"})
    first = Run(["q", "q"], ["a", "b"], np.array([2.0, 1.0]))
    rr = LLMPointwise(model="m", max_repairs=2)
    sent = []

    def transport(body):
        sent.append(body)
        return ("relevant" if "zebraquokka" in body["messages"][1]["content"] else "3"), 5, 1

    monkeypatch.setattr(
        LLMPointwise,
        "client",
        lambda self: LLMClient(LLMSettings(model="m"), tmp_path / "c.sqlite", transport=transport),
    )
    out = rr.rerank(Queries({"q": "q"}), first, corpus, 2)
    llm = out.metadata["llm"]
    assert llm["unparsed"] == 1 and llm["repaired"] == 0 and llm["requests"] == 2 + 2
    assert len(sent) == 4 and len(sent[-1]["messages"]) == 6  # two repair turns
    assert list(out.doc_ids("q")) == ["b", "a"]  # "a" scored the scale's lowest grade
    # the unusable answers were dropped from the cache: a re-run asks for "a" again, not "b"
    rr.rerank(Queries({"q": "q"}), first, corpus, 2)
    assert len(sent) == 4 + 3
    assert all("zebraquokka" in b["messages"][1]["content"] for b in sent[4:])


def test_spec_names_hide_the_endpoint_and_the_key_variable(birco, server, tmp_path):
    url = server.base_url
    spec = (
        f"shuffle >> llm_listwise(model=test-model, base_url={url}, api_key_env=MY_KEY_VAR, k=20)"
    )
    r = parse_retriever(spec)
    assert r.name == "shuffle:seed=0 >> llm_listwise(model=test-model,k=20)"
    assert parse_retriever(r.stages[0].name).name == r.stages[0].name
    exp = _run([spec], tmp_path)
    text = (tmp_path / "out" / "results.json").read_text()
    assert url not in text and "MY_KEY_VAR" not in text
    assert [o.spec for o in exp.systems.values()] == [
        "shuffle >> llm_listwise(model=test-model, k=20)"
    ]
    assert all(url not in label for label in exp.systems)
    assert public_spec("bm25 >> llm_pointwise:base_url=http://h:1/v1,model=M") == (
        "bm25 >> llm_pointwise:model=M"
    )
    with pytest.raises(InputError, match="differ only in base_url"):
        _run([spec, spec.replace("MY_KEY_VAR", "OTHER")], tmp_path, name="dup")


def test_spec_errors_and_options():
    p = parse_retriever("bm25 >> llm_listwise(model=M, k=100, window=20, step=10)")
    assert isinstance(p, Pipeline) and p.stages[0].depth == 100
    assert p.stages[0].identity()["params"]["window"] == 20
    assert parse_retriever("llm_pointwise:model=M,k=50,scale=1-5").scale.high == 5
    with pytest.raises(SpecError, match="step <= window"):
        parse_retriever("llm_listwise(window=5, step=10)")
    with pytest.raises(SpecError, match="LOW-HIGH"):
        parse_retriever("llm_pointwise(scale=high)")
    with pytest.raises(SpecError, match="Did you mean 'window'"):
        parse_retriever("llm_listwise(windw=3)")
    with pytest.raises(SpecError, match="price_in"):
        parse_retriever("llm_listwise(price_in=cheap)")
    with pytest.raises(InputError, match="needs an LLM"):
        LLMListwise().client()
    key = "sk-" + "a1b2c3d4" * 5
    with pytest.raises(SpecError, match="looks like an API key") as err:
        parse_retriever(f"bm25 >> llm_listwise(model=M, api_key_env={key})")
    assert key not in str(err.value)
    rr = parse_retriever("llm_pointwise(model=M, no_api_key=true, base_url=http://127.0.0.1:9/v1)")
    assert rr.name == "llm_pointwise(model=M,no_api_key=true)" and "no_api_key" not in rr.params
    assert rr.client().settings.no_api_key is True


def test_passages_are_cut_to_the_token_budget():
    tok = load_tokenizer("whitespace")
    assert truncate_tokens("one  two\nthree four", tok, 3) == "one two three"
    assert truncate_tokens("short text", tok, 5) == "short text"


def test_usage_and_cost_in_results(birco, server, tmp_path):
    spec = "shuffle >> llm_pointwise(model=test-model, k=5, price_in=2.5, price_out=10)"
    exp = _run([spec], tmp_path)
    llm = exp.system(spec).run.metadata["llm"]
    expected = (llm["prompt_tokens"] * 2.5 + llm["completion_tokens"] * 10) / 1e6
    assert llm["cost_usd"] == pytest.approx(expected, abs=1e-6) and llm["cost_usd"] > 0
    assert llm["requests"] == 25


def _kill_after(state, n):
    def hook(entry):
        if entry.task == "listwise":
            state["seen"] = state.get("seen", 0) + 1
            if state["seen"] == n + 1:
                os.kill(state["pid"], signal.SIGKILL)
                return True  # never answered
        return False

    return hook


def test_killed_run_resumes_without_repeating_a_request(birco, server, tmp_path):
    spec = "bm25 >> llm_listwise(model=test-model, k=100, window=10, step=5, concurrency=1)"
    env = {**os.environ, "NUGGETBENCH_LLM_BASE_URL": server.base_url}
    cmd = [
        sys.executable,
        "-m",
        "nuggetbench",
        "run",
        "birco/wtb",
        "-r",
        spec,
        "-m",
        "nDCG@10",
        "--no-run-cache",
        "--no-progress",
        "--format",
        "json",
    ]
    state: dict = {}
    server.on_request = _kill_after(state, 7)
    proc = subprocess.Popen(
        [*cmd, "-o", str(tmp_path / "killed")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    state["pid"] = proc.pid
    timer = threading.Timer(120, proc.kill)  # never hang the suite
    timer.start()
    proc.communicate()
    timer.cancel()
    assert proc.returncode == -signal.SIGKILL
    server.on_request = None
    first = list(server.log)
    assert sum(e.answered for e in first) == 7

    done = subprocess.run(
        [*cmd, "-o", str(tmp_path / "resumed")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    resumed = server.log[len(first) :]
    answered_before = {e.key for e in first if e.answered}
    assert not answered_before & {e.key for e in resumed}
    answered = [e.key for e in server.log if e.answered]
    assert len(answered) == len(set(answered)) == 5 * 5  # 5 queries x 5 windows, each asked once
    saved = json.loads((tmp_path / "resumed" / "results.json").read_text())
    llm = _saved_system(saved, spec)["run_metadata"]["llm"]
    assert llm["cached_calls"] == 7 and llm["paid_calls"] == 25 - 7

    again = subprocess.run(
        [*cmd, "-o", str(tmp_path / "again")], env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert len(server.log) == len(first) + len(resumed)  # the cached re-run sends nothing


def test_identical_requests_in_one_batch_are_sent_once(server, tmp_path):
    from nuggetbench.llm.client import ChatRequest

    client = LLMClient(
        LLMSettings(model="m", base_url=server.base_url, concurrency=4), tmp_path / "c.sqlite"
    )
    msgs = ({"role": "user", "content": "hello"},)
    other = ({"role": "user", "content": "other"},)
    reqs = [
        ChatRequest(msgs, "s", "v1"),
        ChatRequest(other, "s", "v1"),
        ChatRequest(msgs, "s", "v1"),
    ]
    out = client.complete_many(reqs)
    assert [r.text for r in out] == ["OK", "OK", "OK"] and len(server.log) == 2
    assert [r.cached for r in out] == [False, False, True]
    usage = client.ledger.summary()["s"]
    assert usage["requests"] == 2 and usage["paid_calls"] == 2 and usage["cached_calls"] == 1
    client.close()


def test_a_cache_written_before_logprobs_is_upgraded(tmp_path):
    import sqlite3

    from nuggetbench.llm.cache import LLMCache

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, stage TEXT NOT NULL, "
        "prompt_version TEXT NOT NULL, request TEXT NOT NULL, response TEXT NOT NULL, "
        "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, created REAL NOT NULL)"
    )
    db.execute("INSERT INTO responses VALUES ('k', 'm', 's', 'v', '{}', 'old answer', 3, 2, 0)")
    db.commit()
    db.close()
    cache = LLMCache(path)
    hit = cache.get("k")
    assert (hit.text, hit.prompt_tokens, hit.extra) == ("old answer", 3, None)
    cache.put(
        "k2",
        model="m",
        stage="s",
        prompt_version="v",
        request={},
        response="2",
        prompt_tokens=1,
        completion_tokens=1,
        extra={"top_logprobs": [["2", -0.1]]},
    )
    assert cache.get("k2").extra == {"top_logprobs": [["2", -0.1]]}
    cache.close()


def test_rate_limits_and_server_errors_are_retried(server, tmp_path):
    server.relevance = lambda q, p: float(p.endswith("1"))
    server.inject("429", task="listwise")
    server.inject("500", task="listwise")
    corpus = _corpus({f"d{i}": f"text {i}" for i in range(3)})
    first = Run(["q"] * 3, ["d0", "d1", "d2"], np.array([3.0, 2, 1]))
    rr = LLMListwise(model="m", base_url=server.base_url, window=3, step=1)
    out = rr.rerank(Queries({"q": "query"}), first, corpus, 3)
    assert out.doc_ids("q")[0] == "d1"
    llm = out.metadata["llm"]
    assert llm["retries"] == 2 and llm["paid_calls"] == 1 and llm["failed_calls"] == 0
    assert [e.status for e in server.log] == [429, 500, 200]


def test_a_reranked_run_is_as_deep_as_its_first_stage(birco, server, tmp_path):
    """``A >> llm_listwise(k=5)`` at depth 100 (pools of 30): the top 5 reordered by the oracle,
    the other 25 of A below them in A's order, so R@20 (whose set the top 5 cannot change) is
    A's, and results.json records the real depth of both systems."""
    spec = "shuffle >> llm_listwise(model=test-model, k=5, window=5, step=5)"
    exp = run_experiment(
        load_dataset("birco/wtb"),
        ["shuffle", spec],
        measures=["nDCG@10", "R@20", "AP"],
        k=100,
        outdir=tmp_path / "deep",
        cache_runs=False,
    )
    first, reranked = exp.system("shuffle").run, exp.system(spec).run
    for q in first.query_ids:
        f, r = first.doc_ids(q), reranked.doc_ids(q)
        assert len(r) == len(f) == 30
        assert r[5:] == f[5:] and set(r[:5]) == set(f[:5])
        grades = [birco["qrel"][q][d] for d in r[:5]]
        assert grades == sorted(grades, reverse=True)  # the oracle's order on top
        scores = [s for _, s in reranked[q]]
        assert all(a > b for a, b in zip(scores, scores[1:]))
    assert np.array_equal(
        exp.system("shuffle").results.per_query["R@20"], exp.system(spec).results.per_query["R@20"]
    )
    saved = json.loads((tmp_path / "deep" / "results.json").read_text())
    assert {s["depth"] for s in saved["systems"].values()} == {30}
