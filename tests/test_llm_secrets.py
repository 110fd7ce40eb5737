"""Keys stay out of messages, files and folder names (issue 29, cases 9 and 10), against a local
server on loopback that echoes the request's ``Authorization`` header in its error message."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.errors import InputError, LLMError, SpecError
from nuggetbench.llm.client import ChatRequest, LLMClient, LLMSettings
from nuggetbench.llm.secrets import mask_secrets, spec_key_problem
from nuggetbench.retrieval import parse_retriever

KEY = "sk-test-0123456789abcdefXYZ"


class _Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        said = f"bad request with key {self.headers.get('Authorization')}"
        body = json.dumps({"error": {"message": said, "type": "invalid_request_error"}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def echo_server(monkeypatch):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_an_endpoint_echoing_the_key_is_masked(echo_server, tmp_path):
    client = LLMClient(LLMSettings(model="m", base_url=echo_server), tmp_path / "c.sqlite")
    request = ChatRequest(({"role": "user", "content": "hi"},), "s", "v1")
    with pytest.raises(LLMError) as info:
        client.complete(request)
    text = str(info.value)
    assert "400" in text and "bad request with key Bearer ***" in text
    assert KEY not in text and KEY[3:] not in text
    assert info.value.__cause__ is None  # the openai exception, which quotes the key, is dropped


def _tiny(tmp_path):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "cats purr"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "cats"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


def test_the_cli_error_carries_no_key(echo_server, tmp_path, monkeypatch):
    folder = _tiny(tmp_path)
    monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", echo_server)
    spec = "bm25 >> llm_listwise(model=m,k=2)"
    result = CliRunner().invoke(cli, ["run", str(folder), "-r", spec, "-o", str(tmp_path / "o")])
    assert result.exit_code != 0
    shown = result.output + str(result.exception)
    assert "rejected the request (400" in shown and KEY not in shown


@pytest.mark.parametrize(
    "spec",
    [
        f"bm25 >> llm_listwise(model=m,k=5,api_key={KEY})",
        f"bm25 >> llm_listwise(model={KEY},k=5)",
        f"bm25 >> llm_pointwise(model=gpt-x,k=5,base_url=http://h/v1?x={KEY})",
        "bm25 >> llm_listwise(model=my-service-secret-value,k=5)",  # a key the process knows
    ],
)
def test_a_key_in_a_spec_is_refused_without_being_quoted(spec, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "my-service-secret-value")
    with pytest.raises(SpecError) as info:
        parse_retriever(spec)
    assert "API key" in str(info.value)
    assert KEY not in str(info.value) and "my-service-secret-value" not in str(info.value)
    home = tmp_path / "home"
    monkeypatch.setenv("NUGGETBENCH_HOME", str(home))
    out = tmp_path / "o"
    result = CliRunner().invoke(cli, ["run", str(_tiny(tmp_path)), "-r", spec, "-o", str(out)])
    assert result.exit_code != 0 and "API key" in str(result.exception)
    assert KEY not in result.output + str(result.exception)
    assert not out.exists()  # nothing written: no file or folder can carry it
    leaked = [p for p in home.rglob("*") if KEY in p.name or "secret-value" in p.name]
    assert leaked == []


def test_a_key_shaped_model_name_is_refused_by_every_llm_command():
    with pytest.raises(InputError, match="model name holds what looks like an API key") as info:
        LLMSettings(model=KEY)
    assert KEY not in str(info.value)


@pytest.mark.parametrize(
    "ok",
    [
        "bm25 >> llm_listwise(model=gpt-4o-mini-2024-07-18,k=5)",
        "dense:sentence-transformers/msmarco-distilbert-base-v3",
        "bm25 >> rerank:cross-encoder/ms-marco-MiniLM-L-6-v2@100",
        "bm25:k1=0.9,b=0.4",
    ],
)
def test_ordinary_model_names_are_not_taken_for_keys(ok):
    assert spec_key_problem(ok) is None


def test_mask_secrets_masks_known_keys_bearer_tokens_and_key_shapes(monkeypatch):
    monkeypatch.setenv("SOME_API_KEY", "plainvalue123")
    text = "a plainvalue123 b Bearer tok.en-1 c hf_abcdefghijkl d"
    assert mask_secrets(text) == "a *** b Bearer *** c *** d"
    assert mask_secrets("xyz-extra-secret", ["extra-secret"]) == "xyz-***"
    assert os.environ["SOME_API_KEY"] == "plainvalue123"  # read, never changed
