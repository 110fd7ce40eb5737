"""No credential in any line (issue 35, items 5 and 8): credentials are put in every place a URL
or header can carry them, the LLM commands run against loopback servers as a user runs them (a
process each, ``-v``/``-vv`` logging on, stderr kept as a log file), and then every file written
under the test's folder (outputs, caches, SQLite files, logs) and every line printed is searched
for the secrets' bytes.

Where the credentials are:

* the base URL's user info (``http://alice:PASSWORD@host/v1``): ``--base-url``, a spec's
  ``base_url=``, ``NUGGETBENCH_LLM_BASE_URL``, ``build --base-url``; httpx sends it on as
  ``Authorization: Basic base64(alice:PASSWORD)``, and its INFO line quotes the URL;
* the base URL's query string (``?api-key=QUERYSECRET``);
* the environment key (``OPENAI_API_KEY``), sent as ``Authorization: Bearer KEY``;
* an endpoint whose error message echoes the request's ``Authorization`` header (Bearer or
  Basic), its URL and an ``api-key`` header;
* the errors of a base URL with a bad port, and of an endpoint that does not answer.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from build_fixtures import make_inputs, write_plan
from llm_fixtures import tiny_llm_inputs
from llm_server import LLMServer
from nuggetbench.llm.secrets import (
    SecretFilter,
    base_url_problem,
    endpoint_id,
    mask_secrets,
    redact_url,
)

PASSWORD = "pw8Kq2Zt7HunterTwo"
QUERY_SECRET = "qsZ5150abcdefXYZsecret"
KEY = "sk-envKEY0123456789abcdefXYZ"
BASIC = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
#: every form a secret could be written in (its base64 form too)
SECRETS = (PASSWORD, QUERY_SECRET, KEY, KEY[3:], BASIC)


# --- the masking, in-process -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("Authorization: Basic " + BASIC, "Authorization: Basic ***"),
        ("auth was Basic " + BASIC + ".", "auth was Basic ***."),
        ("{'Authorization': 'Bearer " + KEY + "'}", "{'Authorization': 'Bearer ***'}"),
        ("authorization=Token abc123", "authorization=Token ***"),
        ("x-api-key: zz9", "x-api-key: ***"),
        ('"api-key": "zz9"', '"api-key": "***"'),
        (
            f'HTTP Request: POST http://alice:{PASSWORD}@127.0.0.1:8/v1/chat "HTTP/1.1 200 OK"',
            'HTTP Request: POST http://***@127.0.0.1:8/v1/chat "HTTP/1.1 200 OK"',
        ),
        (
            f"GET http://h/v1/chat?api-key={QUERY_SECRET}&x=1&token=t0k&access_token=a",
            "GET http://h/v1/chat?api-key=***&x=1&token=***&access_token=***",
        ),
        (f"see https://h/?key={QUERY_SECRET}", "see https://h/?key=***"),
    ],
)
def test_every_credential_form_is_masked(text, masked):
    assert mask_secrets(text) == masked
    assert mask_secrets(masked) == masked  # masking twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "a basic functionality test",  # "basic" then a word that is no base64 of user:password
        "basic dGVzdA== is base64 of a word",
        "api_key_env=OPENAI_API_KEY; see http://h/v1?q=cats&page=2",
        "the passage is relevant (score: 2)",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert mask_secrets(text) == text


def test_the_filter_masks_any_logger_record_it_sees_on_a_handler():
    """A filter on a handler sees the records of every logger (httpx's included); the library
    only defines it: the command line installs it (library code changes no global state)."""
    import io

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SecretFilter([KEY]))
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger = logging.getLogger("httpx-like.test")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("HTTP Request: POST %s %s", f"http://alice:{PASSWORD}@h/v1", "200")
        try:
            raise ValueError(f"echoed Authorization: Bearer {KEY} at ?api-key={QUERY_SECRET}")
        except ValueError:
            logger.exception("failed with %s", f"Basic {BASIC}")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "http://***@h/v1 200" in text and "Traceback" in text and "Bearer ***" in text
    assert not [s for s in SECRETS if s in text], text


def test_endpoint_ids_drop_credentials_and_name_one_server_one_way():
    a = endpoint_id(f"HTTP://alice:{PASSWORD}@Host:80/v1/?api-key={QUERY_SECRET}&api-version=2")
    assert a == "http://host/v1?api-version=2"
    assert endpoint_id("http://host/v1") == "http://host/v1?"[:-1]
    assert endpoint_id("http://host:8001/v1") != endpoint_id("http://host:8002/v1")
    assert endpoint_id(None) == endpoint_id("https://api.openai.com/v1/")


@pytest.mark.parametrize(
    "url",
    [
        f"http://alice:{PASSWORD}@127.0.0.1:99999/v1",
        f"http://alice:{PASSWORD}@127.0.0.1:abc/v1",
        f"http://alice:{PASSWORD}@[::1/v1",
        f"ftp://alice:{PASSWORD}@h/v1",
        "127.0.0.1:8000/v1",
        f"http://alice:{PASSWORD}@h:0/v1",
    ],
)
def test_a_bad_base_url_is_one_line_quoting_no_credential(url):
    problem = base_url_problem(url)
    assert problem and "\n" not in problem and "http://HOST:PORT/v1" in problem
    assert PASSWORD not in problem and PASSWORD not in str(redact_url(url))


# --- the commands, as a user runs them ------------------------------------------------------
class _Echo(BaseHTTPRequestHandler):
    """An endpoint whose 400 error echoes the request's URL and credential headers."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        said = (  # and, as a proxy might, the upstream URL it tried, with its token
            f"bad request to {self.path}; Authorization: {self.headers.get('Authorization')}; "
            f"upstream http://upstream.example/v1?access_token={QUERY_SECRET} refused"
        )
        self.server.seen.append(said)  # type: ignore[attr-defined]
        body = json.dumps({"error": {"message": said, "type": "invalid_request_error"}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def echo():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


class _Session:
    """Runs ``nuggetbench`` commands as processes in one folder and keeps what they printed."""

    def __init__(self, root: Path):
        self.root = root
        self.logs = root / "logs"
        self.logs.mkdir()
        self.env = {
            **os.environ,
            "NUGGETBENCH_HOME": str(root / "home"),
            "OPENAI_API_KEY": KEY,
            "COLUMNS": "200",
        }
        for name in ("NUGGETBENCH_LLM_BASE_URL", "OPENAI_BASE_URL", "NUGGETBENCH_LLM_API_KEY"):
            self.env.pop(name, None)
        self.printed: list[tuple[str, str]] = []  # (command, line)
        self.runs = 0

    def __call__(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        self.runs += 1
        done = subprocess.run(
            [sys.executable, "-m", "nuggetbench", *args, "--no-progress"],
            capture_output=True,
            text=True,
            cwd=self.root,
            env={**self.env, **(env or {})},
            timeout=300,
        )
        # a user's `2> log`: the log files are searched with every other file
        (self.logs / f"{self.runs:02d}.stdout.log").write_text(done.stdout)
        (self.logs / f"{self.runs:02d}.stderr.log").write_text(done.stderr)
        shown = " ".join(args)
        self.printed += [(shown, line) for line in (done.stdout + done.stderr).splitlines()]
        return done


def _found(data: bytes) -> list[str]:
    return [s for s in SECRETS if s.encode() in data]


def test_no_secret_in_any_file_or_line(tmp_path, echo):
    ds = tiny_llm_inputs(tmp_path)
    nb = _Session(tmp_path)
    inputs = make_inputs(tmp_path / "build-inputs")
    with LLMServer(hang_seconds=10) as srv:
        host = srv.base_url.split("//", 1)[1]  # 127.0.0.1:PORT/v1
        creds = f"http://alice:{PASSWORD}@{host}"
        both = f"{creds}?api-key={QUERY_SECRET}"
        echo_host = f"127.0.0.1:{echo.server_address[1]}/v1"
        judged = nb(
            "-vv", "judge", str(ds), "a.trec", "--model", "m", "--base-url", creds,
            "-o", "out/judge", "--depth", "6",
        )  # fmt: skip
        assert judged.returncode == 0, judged.stderr[-2000:]
        # the credentials did travel: httpx sent the user info as Basic, with -v its line
        assert {e.extra["auth"] for e in srv.log} == {f"Basic {BASIC}"}
        assert "HTTP Request: POST http://***@127.0.0.1" in judged.stderr
        again = nb("judge", str(ds), "a.trec", "--model", "m", "--base-url", creds,
                   "-o", "out/judge2", "--depth", "6", "--no-cache", "--format", "json")  # fmt: skip
        assert again.returncode == 0, again.stderr[-2000:]
        answered = nb(
            "-v", "answers", "nuggets.jsonl", "sysA.jsonl", "--model", "m", "--base-url", creds,
            "-o", "out/answers",
        )  # fmt: skip
        assert answered.returncode == 0, answered.stderr[-2000:]
        made = nb("-v", "nuggets", str(ds), "--model", "m", "--base-url", creds,
                  "-o", "out/nuggets.jsonl")  # fmt: skip
        assert made.returncode == 0, made.stderr[-2000:]
        spec = f"bm25 >> llm_listwise(model=m,k=3,base_url={creds})"
        ran = nb("-v", "run", str(ds), "-r", spec, "-r", "bm25 >> llm_pointwise(model=m,k=3)",
                 "-o", "out/run", env={"NUGGETBENCH_LLM_BASE_URL": creds})  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-2000:]
        plan = write_plan(tmp_path / "plan", inputs)
        built = nb("-v", "build", str(plan), "--base-url", creds, "--model", "m")
        assert built.returncode == 0, built.stderr[-3000:]
        checked = nb("build", str(plan), "--check", "--format", "json", "--base-url", creds)
        assert checked.returncode == 0 and "http://***@127.0.0.1" in checked.stdout
        # a key in the query string is refused in one line (the openai client would append
        # the request's path to it), by every command and from the environment
        for args, env in (
            (("judge", str(ds), "a.trec", "--model", "m", "--base-url", both, "-o", "out/q"), {}),
            (("run", str(ds), "-r", "bm25 >> llm_listwise(model=m,k=3,cache=false)", "-o", "out/q"),
             {"NUGGETBENCH_LLM_BASE_URL": both}),
            (("build", str(plan), "--base-url", both), {}),
            (("nuggets", str(ds), "--model", "m", "-o", "out/q.jsonl"), {"OPENAI_BASE_URL": both}),
        ):  # fmt: skip
            refused = nb(*args, env=env)
            lines = refused.stderr.strip().splitlines()
            assert refused.returncode == 2 and len(lines) == 1, refused.stderr[-2000:]
            assert "query string" in lines[0] and "api-key=***" in lines[0]
    # the errors: an endpoint echoing the credentials it got, a bad port, no server
    shown = []
    for url in (f"http://alice:{PASSWORD}@{echo_host}", f"http://{echo_host}"):
        failed = nb("-v", "judge", str(ds), "a.trec", "--model", "m", "--base-url", url,
                    "-o", "out/failed")  # fmt: skip
        assert failed.returncode == 2 and "rejected the request (400" in failed.stderr
        shown.append(failed.stderr)
    assert any(f"Basic {BASIC}" in s for s in echo.seen)  # what the endpoint echoed
    assert any(f"Bearer {KEY}" in s and QUERY_SECRET in s for s in echo.seen)
    assert "Authorization: Basic ***" in shown[0] and "Authorization: Bearer ***" in shown[1]
    assert "access_token=***" in shown[1]
    for url in (
        f"http://alice:{PASSWORD}@127.0.0.1:99999/v1",
        f"http://alice:{PASSWORD}@127.0.0.1:9/v1",
    ):
        failed = nb("judge", str(ds), "a.trec", "--model", "m", "--base-url", url,
                    "-o", "out/failed", "--max-retries", "0")  # fmt: skip
        lines = failed.stderr.strip().splitlines()
        assert failed.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:")
        assert "http://***@127.0.0.1" in lines[0]
    # outputs were written where secrets could have gone
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    names = {p.name for p in files}
    assert {"judgments.jsonl", "qrels.txt", "judge.json", "results.json", "manifest.json"} <= names
    assert {"cache.sqlite", "llm_cache.sqlite", "last_run.json"} <= names
    assert any(p.name == "meta.json" for p in files)
    # every file written, every line printed
    leaked = {str(p.relative_to(tmp_path)): _found(p.read_bytes()) for p in files}
    assert {k: v for k, v in leaked.items() if v} == {}
    assert [(cmd, line) for cmd, line in nb.printed if _found(line.encode())] == []
    if os.environ.get("NUGGETBENCH_SECRETS_INVENTORY"):  # the list the closing note quotes
        with open(os.environ["NUGGETBENCH_SECRETS_INVENTORY"], "w") as fh:
            fh.write(f"{len(files)} files and {len(nb.printed)} printed lines grepped\n")
            fh.writelines(f"{p.relative_to(tmp_path)} {p.stat().st_size}\n" for p in files)
            fh.writelines(f"$ nuggetbench {cmd} | {line}\n" for cmd, line in nb.printed)
