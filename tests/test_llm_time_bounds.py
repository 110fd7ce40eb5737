"""Time bounds that mean time (issue 29, cases 7 and 8), against servers on loopback: a deadline
for the whole request, retries that stop after a persistent failure, and ``--timeout`` /
``--max-retries`` on every command and spec that calls an endpoint, named in the error."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from llm_server import LLMServer
from nuggetbench.cli import cli
from nuggetbench.errors import LLMError
from nuggetbench.llm.client import ChatRequest, LLMClient, LLMSettings
from nuggetbench.llm.deadline import DeadlineExceeded, call_within
from nuggetbench.retrieval import parse_retriever


def _request(i: int = 0) -> ChatRequest:
    return ChatRequest(({"role": "user", "content": f"say something {i}"},), "s", "v1")


class _Trickle(BaseHTTPRequestHandler):
    """Headers at once, then a chat completion one byte every 0.25 s (about a minute)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        text = "x" * 150
        body = json.dumps(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for b in body:
                self.wfile.write(bytes([b]))
                self.wfile.flush()
                time.sleep(0.25)
        except OSError:  # the client went away at its deadline
            pass


@pytest.fixture()
def trickle():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_the_deadline_covers_the_whole_body(trickle, tmp_path):
    settings = LLMSettings(model="m", base_url=trickle, no_api_key=True, timeout=2, max_retries=0)
    client = LLMClient(settings, tmp_path / "c.sqlite")
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        client.complete(_request())
    took = time.monotonic() - started
    assert took < 6, f"a 2 s timeout took {took:.1f} s (the body trickles for about a minute)"
    assert "within 2 s" in str(info.value) and "--timeout" in str(info.value)
    assert client.cache.get(client.key(_request())) is None  # nothing late is cached


def test_call_within_returns_raises_and_gives_up():
    assert call_within(lambda: 3, 1) == 3
    with pytest.raises(ZeroDivisionError):
        call_within(lambda: 1 / 0, 1)
    with pytest.raises(DeadlineExceeded):
        call_within(lambda: time.sleep(2), 0.1)


def test_a_hanging_server_fails_after_the_bounded_retries(tmp_path):
    with LLMServer(hang_seconds=30) as srv:
        srv.inject("hang", times=10)
        settings = LLMSettings(
            model="m",
            base_url=srv.base_url,
            no_api_key=True,
            timeout=0.5,
            max_retries=2,
            backoff=0.05,
        )
        started = time.monotonic()
        with pytest.raises(LLMError, match="failed 3 times"):
            LLMClient(settings, tmp_path / "c.sqlite").complete(_request())
        assert time.monotonic() - started < 5  # 3 x 0.5 s + 0.15 s of backoff
        assert len(srv.log) == 3


def test_a_persistent_failure_stops_new_work(tmp_path):
    """Concurrency 2, 8 requests, every answer a 500: at most 2 x 3 attempts are sent (before,
    a worker freed by the first failure took the next request and retried it all again)."""
    with LLMServer() as srv:
        srv.inject("500", times=1000)
        settings = LLMSettings(
            model="m",
            base_url=srv.base_url,
            no_api_key=True,
            max_retries=2,
            backoff=0.2,
            concurrency=2,
        )
        client = LLMClient(settings, tmp_path / "c.sqlite")
        with pytest.raises(LLMError, match="failed 3 times|failed persistently"):
            client.complete_many([_request(i) for i in range(8)])
        assert len(srv.log) <= 6
        # and the client sends nothing more: later requests fail at once, naming the cause
        n = len(srv.log)
        with pytest.raises(LLMError, match="not sent, since an earlier request failed"):
            client.complete(_request(99))
        assert len(srv.log) == n


def test_judge_has_timeout_and_max_retries_and_names_them(tmp_path, monkeypatch):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        '{"_id": "d1", "text": "cats purr"}\n{"_id": "d2", "text": "dogs bark"}\n'
    )
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "cats"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n")
    with LLMServer(hang_seconds=30) as srv:
        srv.inject("hang", times=10)
        args = ["judge", str(folder), str(run), "--model", "m", "--base-url", srv.base_url]
        args += ["--no-api-key", "-o", str(tmp_path / "o"), "--timeout", "0.5"]
        started = time.monotonic()
        result = CliRunner().invoke(cli, [*args, "--max-retries", "0", "--no-progress"])
        assert time.monotonic() - started < 10
        assert result.exit_code != 0
        assert "--timeout/--max-retries" in str(result.exception)
        assert len(srv.log) == 1


def test_llm_specs_take_timeout_and_max_retries_outside_their_names():
    for spec in (
        "bm25 >> llm_listwise(model=m,k=5,timeout=3,max_retries=1)",
        "bm25 >> llm_pointwise(model=m,k=5,timeout=3,max_retries=1)",
        "hyde(bm25; model=m, timeout=3, max_retries=1)",
        "subq(bm25; model=m, timeout=3, max_retries=1)",
    ):
        r = parse_retriever(spec)
        assert "timeout" not in r.name and "max_retries" not in r.name, r.name
    reranker = parse_retriever("llm_listwise(model=m,k=5,timeout=3,max_retries=1)")
    settings = reranker.client().settings
    assert (settings.timeout, settings.max_retries) == (3.0, 1)
    assert "timeout" not in json.dumps(reranker.identity())
