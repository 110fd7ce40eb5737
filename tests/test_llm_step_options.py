"""The LLM options are one declaration, accepted the same way by every LLM step (issue 37, item 4):
``llm_listwise``, ``llm_pointwise``, ``hyde`` and ``subq`` take ``model``, ``base_url``,
``api_key_env``, ``no_api_key``, ``timeout``, ``max_retries``, ``concurrency``, ``cache``,
``price_in``/``price_out`` and ``max_reply_chars`` with the same types, defaults and meanings, and
each reaches the client; the options that say where and how to call leave the identity alone."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from click.testing import CliRunner

from llm_fixtures import tiny_llm_inputs
from llm_server import LLMServer
from nuggetbench.cli import cli
from nuggetbench.errors import SpecError
from nuggetbench.retrieval import parse_retriever
from nuggetbench.retrieval.options import (
    LLM_TRANSPORT,
    HyDEOptions,
    LLMEndpointOptions,
    LLMListwiseOptions,
    LLMPointwiseOptions,
    SubQOptions,
)

SPECS = {
    "llm_listwise": ("llm_listwise({})", LLMListwiseOptions),
    "llm_pointwise": ("llm_pointwise({})", LLMPointwiseOptions),
    "hyde": ("hyde(bm25; {})", HyDEOptions),
    "subq": ("subq(bm25; {})", SubQOptions),
}
#: A value other than the default for every LLM option.
VALUES = {
    "model": "some-model",
    "base_url": "http://127.0.0.1:8011/v1",
    "api_key_env": "MY_LLM_KEY",
    "no_api_key": True,
    "timeout": 7.5,
    "max_retries": 1,
    "concurrency": 3,
    "cache": False,
    "price_in": 0.5,
    "price_out": 1.5,
    "max_reply_chars": 5000,
}


def _written(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _step(kind: str, **options):
    template, _ = SPECS[kind]
    r = parse_retriever(template.format(",".join(f"{k}={_written(v)}" for k, v in options.items())))
    return r.stages[0] if hasattr(r, "stages") and r.stages else r


def test_one_declaration():
    names = [f.name for f in fields(LLMEndpointOptions)]
    assert sorted(names) == sorted(VALUES)
    shared = LLMEndpointOptions.params()
    for kind, (_, cls) in SPECS.items():
        params = cls.params()
        for name in names:  # the same Param: type, default, bounds, description
            assert params[name] == shared[name], (kind, name)
    assert set(LLM_TRANSPORT) == set(names) - {"model"}


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_every_option_reaches_the_client(kind, monkeypatch, tmp_path):
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path))
    step = _step(kind, **VALUES)
    for name, value in VALUES.items():
        assert step.options[name] == value, name
    client = step.client()
    s = client.settings
    try:
        assert (s.model, s.base_url, s.api_key_env, s.no_api_key) == (
            "some-model",
            "http://127.0.0.1:8011/v1",
            "MY_LLM_KEY",
            True,
        )
        assert (s.timeout, s.max_retries, s.concurrency, s.max_reply_chars) == (7.5, 1, 3, 5000)
        assert s.price == (0.5, 1.5) and client.read_cache is False
        assert step.identity() is None  # cache=false: never served from the run cache
    finally:
        client.close()


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_where_and_how_to_call_leave_the_identity_alone(kind, monkeypatch):
    monkeypatch.delenv("NUGGETBENCH_LLM_BASE_URL", raising=False)
    plain = _step(kind, model="m").identity()
    transport = {k: v for k, v in VALUES.items() if k not in ("model", "base_url", "cache")}
    assert _step(kind, model="m", **transport).identity() == plain
    assert _step(kind, model="other").identity() != plain  # who answers is part of it
    assert _step(kind, model="m", base_url="http://127.0.0.1:8011/v1").identity() != plain


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_the_same_refusals(kind):
    with pytest.raises(SpecError, match="price_in must be a number >= 0"):
        _step(kind, price_in=-1)
    with pytest.raises(SpecError, match="looks like an API key"):
        _step(kind, api_key_env="sk-proj-0123456789abcdefABCDEF")
    with pytest.raises(SpecError):
        _step(kind, concurrency=0)


@pytest.mark.parametrize("kind", ["hyde", "subq"])
def test_rewriters_with_no_api_key_against_a_local_server(kind, tmp_path, monkeypatch):
    """Before issue 37, ``hyde(...; no_api_key=true)`` was refused (``must be one of
    base_url=..., max_retries=...``), though the missing-key warning tells the user to set it."""
    ds = tiny_llm_inputs(tmp_path)
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent-0123456789abcdef")
    for name in ("NUGGETBENCH_LLM_BASE_URL", "NUGGETBENCH_LLM_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with LLMServer() as srv:
        spec = f"{kind}(bm25; model=m,base_url={srv.base_url},no_api_key=true,concurrency=2)"
        res = CliRunner().invoke(
            cli,
            ["run", str(ds), "-r", spec, "-m", "nDCG@10", "-o", str(tmp_path / "o"),
             "--format", "json", "--no-progress"],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        assert srv.answered(kind) and all(
            e.extra["auth"] == "Bearer no-key" for e in srv.log
        )  # the environment's key was not sent
        assert "no API key" not in res.stderr
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    # the endpoint's address is not part of the name, as for the rerankers
    assert list(saved["systems"]) == [f"{kind}(bm25; model=m,no_api_key=true,concurrency=2)"]


def test_an_empty_run_says_why(tmp_path, monkeypatch):
    """A run with no entries used to stop with "run 'bm25' has no entries" alone; the error now
    says why and what to do: queries matching nothing, or a first stage that returned nothing
    (nothing is then sent to the model)."""
    ds = tmp_path / "ds"
    (ds / "qrels").mkdir(parents=True)
    (ds / "corpus.jsonl").write_text(
        '{"_id": "d1", "text": "cats purr"}\n{"_id": "d2", "text": "dogs bark"}\n'
    )
    (ds / "queries.jsonl").write_text(  # stop words only: BM25 finds nothing
        '{"_id": "q1", "text": "the of and"}\n{"_id": "q2", "text": "is it"}\n'
    )
    (ds / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / "home"))
    with LLMServer() as srv:
        for spec, why in (
            ("bm25", "its queries matched no document; check that the queries are not empty "
             "or all stop words (bm25:stopwords=none keeps them)"),
            (f"bm25 >> llm_listwise(model=m,base_url={srv.base_url},no_api_key=true)",
             "its first stage 'bm25' returned no document for any query, so nothing was left "
             "to rerank; run the first stage alone (-r 'bm25') to see why"),
        ):  # fmt: skip
            res = CliRunner().invoke(
                cli, ["run", str(ds), "-r", spec, "-o", str(tmp_path / "o"), "--no-progress"]
            )
            message = " ".join(str(res.exception).split())
            assert res.exit_code != 0 and "the run has no entries (none of the 2 queries" in message
            assert why in message, message
        assert not srv.log
