"""The LLM client against a real local HTTP server: cache, retries, faults, budgets, secrets."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from llm_server import LLMServer
from nuggetbench.errors import BudgetError, InputError, LLMError
from nuggetbench.llm.cache import LLMCache, UsageLedger, request_key
from nuggetbench.llm.client import ChatRequest, LLMClient, LLMSettings

KEY = "sk-test-0123456789-never-on-disk"


@pytest.fixture()
def server():
    with LLMServer(hang_seconds=10) as srv:
        yield srv


def settings(srv, **kw) -> LLMSettings:
    base = {
        "model": "m1",
        "base_url": srv.base_url,
        "timeout": 2.0,
        "backoff": 0.01,
        "max_retries": 2,
    }
    base.update(kw)
    return LLMSettings(**base)


def req(text: str, *, stage: str = "s", version: str = "p.v1", **params) -> ChatRequest:
    return ChatRequest(
        ({"role": "system", "content": "sys"}, {"role": "user", "content": text}),
        stage,
        version,
        params,
    )


def test_answers_are_cached_and_rerun_costs_nothing(server, tmp_path):
    client = LLMClient(settings(server), tmp_path / "c.sqlite")
    first = client.complete(
        req("<answer>Alpha beta gamma delta. Second sentence here now.</answer>")
    )
    assert not first.cached
    assert json.loads(first.text)["nuggets"][0] == "Alpha beta gamma delta."
    again = client.complete(
        req("<answer>Alpha beta gamma delta. Second sentence here now.</answer>")
    )
    assert again.cached and again.text == first.text
    assert len(server.log) == 1
    client.close()
    # a new client on the same file (a new process) pays nothing either
    client2 = LLMClient(settings(server), tmp_path / "c.sqlite")
    assert client2.complete(
        req("<answer>Alpha beta gamma delta. Second sentence here now.</answer>")
    ).cached
    assert len(server.log) == 1
    usage = client2.ledger.summary()["s"]
    assert usage["paid_calls"] == 0 and usage["cached_calls"] == 1 and usage["requests"] == 1


def test_cache_key_covers_model_prompt_version_messages_and_params():
    m = [{"role": "user", "content": "x"}]
    base = request_key("m", "v1", m, {"temperature": 0.1})
    assert request_key("m", "v1", m, {"temperature": 0.1}) == base
    assert request_key("m2", "v1", m, {"temperature": 0.1}) != base
    assert request_key("m", "v2", m, {"temperature": 0.1}) != base
    assert request_key("m", "v1", [{"role": "user", "content": "y"}], {"temperature": 0.1}) != base
    assert request_key("m", "v1", m, {"temperature": 0.2}) != base


@pytest.mark.parametrize("fault", ["429", "500", "garbage"])
def test_transient_faults_are_retried(server, tmp_path, fault):
    client = LLMClient(settings(server), tmp_path / "c.sqlite")
    server.inject(fault)
    result = client.complete(req("hello"))
    assert result.text == "OK"
    assert [e.fault for e in server.log] == [fault, None]
    assert client.ledger.summary()["s"]["retries"] == 1


def test_rate_limit_then_success_with_backoff(server, tmp_path):
    client = LLMClient(settings(server, backoff=0.05, max_retries=3), tmp_path / "c.sqlite")
    server.inject("429", times=2)
    start = time.monotonic()
    assert client.complete(req("hi")).text == "OK"
    # two retries: 0.05 s then 0.1 s of backoff
    assert time.monotonic() - start >= 0.14
    assert [e.status for e in server.log] == [429, 429, 200]


def test_server_that_never_answers_times_out_with_a_clear_message(server, tmp_path):
    client = LLMClient(settings(server, timeout=0.3, max_retries=1), tmp_path / "c.sqlite")
    server.inject("hang", times=2)
    with pytest.raises(LLMError) as info:
        client.complete(req("anyone there?", stage="judge"))
    msg = str(info.value)
    assert (
        "timeout" in msg
        and server.base_url in msg
        and "judge" in msg
        and "[llm] timeout/max_retries in a plan" in msg  # issue 29: every place is named
    )
    assert len(server.log) == 2
    assert len(client.cache) == 0


def test_retries_exhausted_on_persistent_5xx(server, tmp_path):
    client = LLMClient(settings(server, max_retries=2), tmp_path / "c.sqlite")
    server.inject("500", times=3)
    with pytest.raises(LLMError, match="failed 3 times, last: server error 500"):
        client.complete(req("x"))


def test_api_key_is_sent_but_never_written(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("NUGGETBENCH_LLM_API_KEY", raising=False)
    client = LLMClient(settings(server), tmp_path / "c.sqlite")
    for i in range(3):
        client.complete(req(f"question {i}"))
    client.close()
    assert server.log[0].extra["auth"] == f"Bearer {KEY}"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    db = sqlite3.connect(tmp_path / "c.sqlite")
    stored = " ".join(r[0] for r in db.execute("SELECT request FROM responses"))
    assert "question 0" in stored and KEY not in stored
    assert KEY not in json.dumps(settings(server).describe())


def test_complete_many_keeps_order_and_bounds_concurrency(server, tmp_path):
    client = LLMClient(settings(server, concurrency=3), tmp_path / "c.sqlite")
    texts = [f"<answer>Fact number {i} is here today.</answer>" for i in range(9)]
    results = client.complete_many([req(t) for t in texts])
    assert [json.loads(r.text)["nuggets"][0] for r in results] == [
        f"Fact number {i} is here today." for i in range(9)
    ]
    assert len(server.log) == 9
    again = client.complete_many([req(t) for t in texts])
    assert all(r.cached for r in again) and len(server.log) == 9


def test_budget_of_calls(server, tmp_path):
    client = LLMClient(settings(server, max_calls=2), tmp_path / "c.sqlite")
    client.complete(req("a"))
    client.complete(req("b"))
    with pytest.raises(BudgetError, match="budget of 2 paid LLM calls"):
        client.complete(req("c"))
    assert client.complete(req("a")).cached  # cached answers are free, even over budget


def test_usage_cost_is_hand_computed(tmp_path):
    ledger = UsageLedger(price=(2.0, 10.0))
    ledger.record("nuggets", "k1", 1000, 100, cached=False)
    ledger.record("nuggets", "k2", 500, 50, cached=True)
    row = ledger.summary()["nuggets"]
    # all requests: 1500 prompt tokens * $2/M + 150 completion * $10/M = 0.003 + 0.0015
    assert row["cost_usd"] == pytest.approx(0.0045)
    # paid now: 1000 * 2/M + 100 * 10/M = 0.002 + 0.001
    assert row["paid_cost_usd"] == pytest.approx(0.003)
    assert row["paid_calls"] == 1 and row["cached_calls"] == 1


def test_settings_validation_and_env(monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_LLM_MODEL", "env-model")
    monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    s = LLMSettings.from_env()
    assert (s.model, s.base_url) == ("env-model", "http://127.0.0.1:9/v1")
    assert LLMSettings.from_env(model="plan-model").model == "plan-model"
    monkeypatch.delenv("NUGGETBENCH_LLM_MODEL")
    with pytest.raises(InputError, match="no LLM model"):
        LLMSettings.from_env()


def test_cache_file_that_is_not_a_database(tmp_path):
    bad = tmp_path / "c.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    from nuggetbench.errors import CacheError

    with pytest.raises(CacheError, match="not a readable LLM cache"):
        LLMCache(bad)


def test_azure_provider_speaks_to_its_deployment_path(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    endpoint = server.base_url.removesuffix("/v1")
    s = LLMSettings(
        model="my-deployment",
        base_url=endpoint,
        provider="azure",
        api_version="2024-06-01",
        timeout=2,
        backoff=0.01,
    )
    client = LLMClient(s, tmp_path / "c.sqlite")
    assert client.complete(req("hello azure")).text == "OK"
    assert (
        server.log[0].path
        == "/openai/deployments/my-deployment/chat/completions?api-version=2024-06-01"
    )


def test_missing_key_for_a_hosted_endpoint(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("NUGGETBENCH_LLM_API_KEY", raising=False)
    client = LLMClient(LLMSettings(model="gpt-4o"), tmp_path / "c.sqlite")
    with pytest.raises(LLMError, match="no API key: set OPENAI_API_KEY"):
        client.complete(req("x"))
