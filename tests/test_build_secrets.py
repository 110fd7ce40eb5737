"""Secrets never reach a plan's outputs, and a plan is checked whole before any stage runs.

Issue 13, case 9: values are validated, not just key names (an ``api_key_env`` holding a key, a
``base_url`` with ``user:password@`` or ``?api-key=``); credentials are masked in every
description, manifest and console line; a local server without a key is a choice the plan states
(``no_api_key = true``); ``nuggetbench build --check`` and every build check the plan first.
"""

from __future__ import annotations

import json

import pytest

from build_fixtures import make_inputs, write_plan
from llm_server import LLMServer
from nuggetbench.builder.pipeline import run_build
from nuggetbench.builder.plan import load_plan, parse_plan
from nuggetbench.cli import main
from nuggetbench.errors import InputError, LLMError
from nuggetbench.llm.client import ChatRequest, LLMClient, LLMSettings
from nuggetbench.llm.secrets import key_name_problem, looks_like_key, redact_url

KEY = "sk-secrets-test-key-777777"
PASSWORD = "Pa55wordInUrl9"


@pytest.fixture()
def server(monkeypatch):
    with LLMServer(hang_seconds=10) as srv:
        monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.delenv("NUGGETBENCH_LLM_API_KEY", raising=False)
        monkeypatch.delenv("NUGGETBENCH_LLM_MODEL", raising=False)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        yield srv


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("inputs"))


def run_cli(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main([*args])
        raise SystemExit(0)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def files_holding(folder, secret: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.mark.parametrize(
    "llm, secret",
    [
        ('api_key_env = "sk-proj-AbC123dEf456gHi789"', "sk-proj-AbC123dEf456gHi789"),
        ('api_key_env = "3f2a9c0b8d7e6f5a4b3c2d1e0f9a8b7c"', "3f2a9c0b8d7e6f5a4b3c2d1e0f9a8b7c"),
        (f'base_url = "http://user:{PASSWORD}@127.0.0.1:9/v1"', PASSWORD),
        ('base_url = "http://127.0.0.1:9/v1?api-key=QuerySecret42"', "QuerySecret42"),
        ('base_url = "https://proxy.example/v1?token=T0kenValue1"', "T0kenValue1"),
        ('api_version = "sk-live-Z9y8X7w6V5u4T3s2"', "sk-live-Z9y8X7w6V5u4T3s2"),
    ],
)
def test_credentials_in_plan_values_are_refused_without_quoting_them(
    inputs, tmp_path, capsys, llm, secret
):
    plan = write_plan(tmp_path / "p", inputs, llm=llm)
    with pytest.raises(InputError, match="credentials do not belong in a plan") as info:
        load_plan(plan)
    assert secret not in str(info.value)
    code, out, err = run_cli(capsys, "build", str(plan), "--no-progress")
    assert code != 0 and "credentials do not belong in a plan" in " ".join(err.split())
    assert secret not in out + err
    assert not (tmp_path / "p" / "out").exists()  # refused before anything ran


def test_a_repository_url_with_a_token_is_refused(tmp_path):
    raw = {
        "questions": {"source": "q.jsonl"},
        "repos": [{"name": "r", "url": "https://ghp_abcdefghijklmnopqrstuv1234@github.com/o/r"}],
        "llm": {"model": "m"},
    }
    with pytest.raises(InputError, match=r"repos\[0\]\.url: it holds a user name") as info:
        parse_plan(raw, base=tmp_path)
    assert "ghp_abcdefghijklmnopqrstuv1234" not in str(info.value)


def test_redaction_and_key_shapes():
    assert redact_url(f"http://u:{PASSWORD}@h:8000/v1?api-key=K1&x=1") == (
        "http://***@h:8000/v1?api-key=***&x=1"
    )
    assert redact_url("http://h/v1?q=sk-abcdefghijklmnop1234") == "http://h/v1?q=***"
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"
    assert redact_url(None) is None
    for name in ("OPENAI_API_KEY", "MY_KEY_2", "AZURE_OPENAI_API_KEY"):
        assert key_name_problem(name) is None and not looks_like_key(name)
    for value in ("sk-abc", "hf_abcdefghijklmnopqrstuvwx", "ab12cd34ef56ab12cd34ef56ab12cd34"):
        assert looks_like_key(value)
        assert value not in key_name_problem(value)
    assert "not an environment variable name" in key_name_problem("MY KEY")
    with pytest.raises(InputError, match="looks like an API key"):
        LLMSettings(model="m", api_key_env="sk-proj-0123456789abcdef")


def test_credentials_from_the_environment_are_masked_in_manifest_files_and_console(
    server, inputs, tmp_path, capsys, monkeypatch
):
    host = server.base_url.removeprefix("http://")
    monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", f"http://user:{PASSWORD}@{host}")
    plan = write_plan(tmp_path / "p", inputs)
    code, out, err = run_cli(capsys, "build", str(plan), "--no-progress")
    assert code == 0, err
    manifest = json.loads((tmp_path / "p" / "out" / "manifest.json").read_text())
    assert manifest["llm"]["base_url"] == f"http://***@{host}"
    assert files_holding(tmp_path / "p", PASSWORD) == []
    assert files_holding(tmp_path / "p", KEY) == []
    assert PASSWORD not in out + err and KEY not in out + err
    code, out, err = run_cli(capsys, "build", str(plan), "--check")
    assert code == 0 and PASSWORD not in out + err and KEY not in out + err
    assert f"endpoint: http://***@{host}" in " ".join(out.split())  # the plan in words
    code, out, err = run_cli(capsys, "build", str(plan), "--check", "--format", "json")
    assert code == 0 and PASSWORD not in out + err and KEY not in out + err
    assert json.loads(out)["llm"]["base_url"] == f"http://***@{host}"


def test_endpoint_errors_mask_credentials(tmp_path):
    settings = LLMSettings(
        model="m",
        base_url=f"http://user:{PASSWORD}@127.0.0.1:9/v1",
        timeout=0.5,
        max_retries=0,
        no_api_key=True,
    )
    client = LLMClient(settings, tmp_path / "c.sqlite")
    request = ChatRequest(({"role": "user", "content": "hi"},), "s", "p.v1", {})
    with pytest.raises(LLMError) as info:
        client.complete(request)
    assert "http://***@127.0.0.1:9/v1" in str(info.value) and PASSWORD not in str(info.value)
    client.close()


def test_a_missing_key_stops_the_build_before_any_stage(server, inputs, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    plan = write_plan(tmp_path / "p", inputs, extra='[[repos]]\nname = "gone"\npath = "/no/such"\n')
    with pytest.raises(InputError) as info:
        run_build(load_plan(plan))
    text = str(info.value)
    # every problem at once: the missing repository and the missing key, with the way out
    assert "the plan cannot run (2 problems)" in text
    assert "path /no/such does not exist" in text
    assert "no API key: set OPENAI_API_KEY" in text and "[llm] no_api_key = true" in text
    assert (
        not server.log and not (tmp_path / "p" / "out" / "_build" / "questions.meta.json").exists()
    )


def test_a_local_server_without_a_key_is_stated_in_the_plan(server, inputs, tmp_path, capsys):
    plan = write_plan(tmp_path / "p", inputs, llm="no_api_key = true")
    code, out, err = run_cli(capsys, "build", str(plan), "--check", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["ready"] is True and report["api_key"].startswith("not needed")
    assert not server.log and not (tmp_path / "p" / "out").exists()  # --check runs nothing
    code, out, err = run_cli(capsys, "build", str(plan), "--no-progress")
    assert code == 0, err
    # the plan says no key: the one in the environment is not sent to the local server
    assert server.log and all(KEY not in (e.extra["auth"] or "") for e in server.log)
    manifest = json.loads((tmp_path / "p" / "out" / "manifest.json").read_text())
    assert manifest["llm"]["no_api_key"] is True


def test_no_api_key_needs_a_local_base_url(tmp_path):
    with pytest.raises(InputError, match="no_api_key = true is for a local"):
        LLMSettings(model="m", no_api_key=True)


def test_check_reports_every_problem_and_exits_non_zero(
    server, inputs, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY")
    bad = dict(inputs, posts=tmp_path / "missing.xml")
    plan = write_plan(tmp_path / "p", bad, extra='[nuggets]\nprompt = "v9"\n')
    code, out, err = run_cli(capsys, "build", str(plan), "--check")
    text = " ".join(err.split())
    assert code != 0 and "the plan cannot run (3 problems)" in text
    assert "missing.xml does not exist" in text and "unknown prompt 'nuggets.v9'" in text
    assert "no API key" in text
    # the stages that do not call the model need no key
    code, out, err = run_cli(
        capsys, "build", str(write_plan(tmp_path / "q", inputs)), "--check", "--stage", "corpus"
    )
    assert code == 0, err


def test_a_stage_that_does_not_call_the_model_needs_no_key(server, inputs, tmp_path, monkeypatch):
    plan = load_plan(write_plan(tmp_path / "p", inputs))
    run_build(plan)  # the whole build, with the key
    monkeypatch.delenv("OPENAI_API_KEY")
    n = len(server.log)
    report = run_build(plan, stage="export")  # reads the judged pairs; calls nothing
    assert report.stages["export"]["status"] == "ran" and len(server.log) == n
    with pytest.raises(InputError, match="no API key"):
        run_build(plan, stage="judge")
