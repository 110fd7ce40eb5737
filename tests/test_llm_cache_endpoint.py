"""LLM caches keyed by what answered (issue 38, item 4): the endpoint is part of every cache key
(LLM answers, runs of ``llm_*`` rerankers and rewriters, build stages), so a second server serving
a model of the same name is asked anew; ``--no-cache`` (``cache=false`` in a spec) sends every
request again; a judge run whose judgments failed says so; the model's grades are marked in the
qrels ``judge`` writes, which every TREC reader still reads."""

from __future__ import annotations

import json
import sqlite3

import ir_measures
import pytest
import pytrec_eval
from click.testing import CliRunner
from ranx import Qrels as RanxQrels

from build_fixtures import make_inputs, write_plan
from llm_fixtures import tiny_llm_inputs
from llm_server import LLMServer
from nuggetbench.cli import cli
from nuggetbench.data import read_trec_qrels
from nuggetbench.errors import LLMError
from nuggetbench.llm.cache import request_key
from nuggetbench.llm.settings import LLMSettings


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / "home"))
    for name in ("NUGGETBENCH_LLM_BASE_URL", "OPENAI_BASE_URL", "NUGGETBENCH_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    tiny_llm_inputs(tmp_path)
    return tmp_path / "home"


def _nb(*args, code=0, env=None):
    result = CliRunner(env=env).invoke(cli, [*args, "--no-progress"])
    assert result.exit_code == code, result.output
    return result


def _judge(root, url, out, *extra, code=0):
    return _nb(
        "judge", str(root / "ds"), str(root / "a.trec"), "--model", "llama3", "--base-url", url,
        "--no-api-key", "--depth", "6", "-o", str(root / out), *extra, code=code,
    )  # fmt: skip


def test_the_endpoint_is_part_of_the_key_and_credentials_are_not():
    m = [{"role": "user", "content": "x"}]
    a = request_key("m", "v1", m, {}, endpoint="http://127.0.0.1:8001/v1")
    assert a != request_key("m", "v1", m, {}, endpoint="http://127.0.0.1:8002/v1")
    assert a != request_key("m", "v1", m, {})
    one = LLMSettings(model="m", base_url="http://alice:pw@127.0.0.1:8001/v1/").endpoint_id()
    assert one == LLMSettings(model="m", base_url="http://127.0.0.1:8001/v1").endpoint_id()
    assert "pw" not in one and "alice" not in one
    azure = LLMSettings(model="m", base_url="https://r.example/", provider="azure")
    assert azure.endpoint_id() == "azure:https://r.example"


def test_a_second_server_with_the_same_model_name_is_asked(home, tmp_path):
    """Before: the second judge sent 0 requests and wrote the first server's grades."""
    with LLMServer() as first, LLMServer() as second:
        second.relevance = lambda q, p: 0.0  # this server grades everything 0
        one = json.loads(_judge(tmp_path, first.base_url, "o1", "--format", "json").stdout)
        two = json.loads(_judge(tmp_path, second.base_url, "o2", "--format", "json").stdout)
        assert one["judge"]["requests_sent"] == len(first.log) == 4
        assert two["judge"]["requests_sent"] == len(second.log) == 4
        for out, grade in (("o1", "2"), ("o2", "0")):  # each server's own grades
            rows = [ln.split() for ln in (tmp_path / out / "qrels.txt").read_text().splitlines()]
            assert [g for _, it, _, g in rows if it == "llm"] == [grade] * 4
        # the same server named with credentials (or a trailing slash) is the same endpoint
        host = first.base_url.split("//", 1)[1]
        again = _judge(tmp_path, f"http://u:secretpw@{host}/", "o3", "--format", "json")
        assert json.loads(again.stdout)["judge"]["requests_sent"] == 0 and len(first.log) == 4
    rows = sqlite3.connect(home / "cache" / "llm" / "cache.sqlite").execute(
        "SELECT DISTINCT endpoint FROM responses"
    )
    assert sorted(r[0] for r in rows) == sorted([first.base_url, second.base_url])


def _sent_twice_then_again(server, command, *, reruns=1):
    """``command(no_cache)`` run: once, again (nothing sent), with --no-cache (everything sent
    again), and again (nothing sent: the new answers replaced the old)."""
    command(False)
    n = len(server.log)
    assert n > 0
    for _ in range(reruns):
        command(False)
    assert len(server.log) == n
    command(True)
    assert len(server.log) == 2 * n
    command(False)
    assert len(server.log) == 2 * n


def test_no_cache_on_judge_answers_and_nuggets(home, tmp_path):
    with LLMServer() as srv:
        url = srv.base_url

        def judge(fresh):
            _judge(tmp_path, url, "o", *(["--no-cache"] if fresh else []))

        def answers(fresh):
            _nb("answers", str(tmp_path / "nuggets.jsonl"), str(tmp_path / "sysA.jsonl"),
                "--model", "llama3", "--base-url", url, "--no-api-key",
                *(["--no-cache"] if fresh else []))  # fmt: skip

        def nuggets(fresh):
            _nb("nuggets", str(tmp_path / "ds"), "--model", "llama3", "--base-url", url,
                "--no-api-key", "-o", str(tmp_path / "n.jsonl"),
                *(["--no-cache"] if fresh else []))  # fmt: skip

        for command in (judge, answers, nuggets):
            srv.log.clear()
            _sent_twice_then_again(srv, command)


def test_cache_false_on_llm_specs_and_the_run_cache_keyed_by_endpoint(home, tmp_path):
    ds, outs = str(tmp_path / "ds"), iter(range(100))

    def run(spec, url):
        out = str(tmp_path / f"run{next(outs)}")
        env = {"NUGGETBENCH_LLM_BASE_URL": url, "OPENAI_API_KEY": "k"}
        _nb("run", ds, "-r", spec, "-o", out, env=env)

    with LLMServer() as first, LLMServer() as second:
        for spec in ("bm25 >> llm_listwise(model=llama3,k=4{})", "hyde(bm25; model=llama3{})"):
            first.log.clear()
            _sent_twice_then_again(
                first,
                lambda fresh, s=spec: run(
                    s.format(",cache=false" if fresh else ""), first.base_url
                ),
            )
            # the same spec against another endpoint: served from neither cache
            n = len(second.log)
            run(spec.format(""), second.base_url)
            assert len(second.log) > n


def test_build_no_cache_and_another_endpoint(home, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    plan = write_plan(tmp_path / "p", make_inputs(tmp_path / "inputs"))
    with LLMServer() as first, LLMServer() as second:

        def build(fresh, url=first.base_url):
            return _nb("build", str(plan), "--base-url", url, *(["--no-cache"] if fresh else []))

        _sent_twice_then_again(first, build)
        build(False, second.base_url)
        assert len(second.log) == len(first.log) // 2  # every LLM stage ran again, there


def _said(result) -> str:
    """stderr with rich's line wrapping undone."""
    return " ".join(result.stderr.split())


def test_judge_warns_when_judgments_failed(home, tmp_path):
    """Before: every judgment failed and judge said nothing (exit 0)."""
    with LLMServer() as srv:
        srv.malformed, srv.malformed_repairs = 1.0, True
        shown = _judge(tmp_path, srv.base_url, "o", "--max-repairs", "0")
        assert "warning: every one of the 4 judgments failed" in _said(shown)
        assert "no final line '##final score: G'" in _said(shown)
        # (main() prints an error as "error: ..." and exits 2; CliRunner keeps the exception)
        strict = _judge(tmp_path, srv.base_url, "o", "--max-repairs", "0", "--strict", code=1)
        assert "every one of the 4 judgments failed" in _said(strict)
        assert isinstance(strict.exception, LLMError)
        assert "--strict: 4 answers stayed unusable" in str(strict.exception)
        srv.malformed, srv.malformed_repairs = 0.0, False
        srv.inject("not_json", times=1, task="umbrela")  # one prose answer
        some = _judge(tmp_path, srv.base_url, "o2", "--max-repairs", "0", "--no-cache")
        assert "warning: 1 of 4 judgments failed" in _said(some)
        clean = _judge(tmp_path, srv.base_url, "o3")
        assert "warning" not in _said(clean)


def test_the_models_grades_are_marked_and_every_reader_reads_the_qrels(home, tmp_path):
    with LLMServer() as srv:
        _judge(tmp_path, srv.base_url, "o")
    path = tmp_path / "o" / "qrels.txt"
    lines = [ln.split() for ln in path.read_text().splitlines()]
    assert {(d, it) for _, it, d, _ in lines} == {
        ("doc0", "0"),
        ("doc1", "0"),
        *((f"doc{j}", "llm") for j in range(2, 6)),
    }
    judge_json = json.loads((tmp_path / "o" / "judge.json").read_text())
    assert judge_json["llm_grades"] == 4 and judge_json["llm_mark"] == "llm"
    plain = tmp_path / "plain.txt"  # the same qrels, every iteration 0
    plain.write_text("".join(f"{q} 0 {d} {g}\n" for q, _, d, g in lines))
    expected = {"q1": {d: int(g) for _, _, d, g in lines}}
    assert read_trec_qrels(path).to_dict() == read_trec_qrels(plain).to_dict() == expected
    with open(path) as fh:
        assert pytrec_eval.parse_qrel(fh) == expected
    got = {(q.query_id, q.doc_id): q.relevance for q in ir_measures.read_trec_qrels(str(path))}
    assert got == {("q1", d): g for d, g in expected["q1"].items()}
    assert RanxQrels.from_file(str(path), kind="trec").to_dict() == expected
    # and scored as the plain file is
    run = tmp_path / "a.trec"
    one = _nb("evaluate", str(path), str(run), "-m", "nDCG@10", "-m", "AP").stdout
    two = _nb("evaluate", str(plain), str(run), "-m", "nDCG@10", "-m", "AP").stdout
    assert one.replace(str(path), "") == two.replace(str(plain), "")
