"""``build --check`` probes what can fail without spending (issue 37, item 3): the endpoint answers
its model list, serves the model and accepts the key; the stages that would call the model are
those whose work asks it (the pool stage only with a rewriting technique); stages a finished build
would load are ``cached`` and the endpoint is then not needed; the price line names the model."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from build_fixtures import make_inputs, write_plan
from llm_server import LLMServer
from nuggetbench.builder.check import plan_stages
from nuggetbench.builder.plan import load_plan
from nuggetbench.cli import cli
from nuggetbench.llm.probe import probe_endpoint
from nuggetbench.llm.settings import LLMSettings

KEY = "sk-check-probe-test-key-4242"


@pytest.fixture()
def server(monkeypatch):
    with LLMServer(hang_seconds=10) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        for name in (
            "NUGGETBENCH_LLM_API_KEY",
            "NUGGETBENCH_LLM_MODEL",
            "OPENAI_BASE_URL",
            "NUGGETBENCH_LLM_BASE_URL",
        ):
            monkeypatch.delenv(name, raising=False)
        yield srv


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("inputs"))


def _plan(tmp_path, inputs, url, techniques='["answer", "nuggets"]', name="p"):
    return write_plan(
        tmp_path / name,
        inputs,
        llm=f'base_url = "{url}"\n',
        extra=f"[pooling]\ntechniques = {techniques}\n",
    )


def _check(plan, *args):
    res = CliRunner(env={"COLUMNS": "200"}).invoke(
        cli, ["build", str(plan), "--check", "--format", "json", *args]
    )
    return res, json.loads(res.stdout)


def test_no_server_listening_is_not_ready(server, inputs, tmp_path):
    plan = _plan(tmp_path, inputs, "http://127.0.0.1:9/v1")  # nothing listens on port 9
    res, js = _check(plan)
    assert res.exit_code != 0 and js["ready"] is False
    assert "http://127.0.0.1:9/v1 does not answer" in js["problems"][0]
    assert "stages that would ask it: nuggets, judge" in js["problems"][0]
    assert "not ready, the build would fail (1 problem)" in str(res.exception)
    assert not (tmp_path / "p" / "out").exists()  # nothing was run or created
    # in words, the same verdict
    words = CliRunner(env={"COLUMNS": "250"}).invoke(cli, ["build", str(plan), "--check"])
    text = " ".join(words.stdout.split())
    assert words.exit_code != 0 and "NOT READY, 1 problem (nothing was run)" in text
    assert "endpoint check: FAILED: http://127.0.0.1:9/v1 does not answer" in text


def test_a_refused_key_and_an_unknown_model(server, inputs, tmp_path):
    server.require_key = "sk-the-right-key-0000000000"
    plan = _plan(tmp_path, inputs, server.base_url)
    res, js = _check(plan)
    assert res.exit_code != 0 and "refused the API key (401)" in js["problems"][0]
    assert "OPENAI_API_KEY" in js["problems"][0] and KEY not in res.output + res.stdout
    assert server.probes[-1]["auth"] == f"Bearer {KEY}"  # the key the requests would send
    server.require_key = None
    res, js = _check(plan, "--model", "no-such-model")
    assert res.exit_code != 0
    assert (
        "does not serve the model 'no-such-model' (it lists 3 models: flag-model, m, "
        in (js["problems"][0])
    )
    res, js = _check(plan, "--model", "flag-model")
    assert res.exit_code == 0 and js["ready"] and js["endpoint_check"]["model_listed"] is True
    assert not server.log  # only GET /models: no chat request was sent


def test_the_probe_itself(server):
    settings = LLMSettings(model="m", base_url=server.base_url, no_api_key=True)
    found = probe_endpoint(settings)
    assert found.answered and found.problem is None and found.model_listed
    assert found.models == ["flag-model", "m", "test-model"]
    ollama = LLMSettings(model="llama3", base_url=server.base_url, no_api_key=True)
    server.models = ["llama3:latest"]  # Ollama lists the tag and serves the bare name
    assert probe_endpoint(ollama).model_listed is True
    wrong_path = LLMSettings(model="m", base_url=server.base_url + "/nowhere", no_api_key=True)
    note = probe_endpoint(wrong_path)  # the server answers 404: no list, not a failure
    assert note.answered and note.problem is None and "has no model list (404" in note.note


def test_only_stages_that_ask_the_model_call_it(server, inputs, tmp_path):
    quiet = load_plan(_plan(tmp_path, inputs, server.base_url))
    calls = {r["stage"]: r["calls_model"] for r in plan_stages(quiet)}
    assert calls == {
        "questions": False,
        "corpus": False,
        "nuggets": True,
        "pool": False,  # techniques answer and nuggets: no rewriting
        "judge": True,
        "export": False,
        "calibrate": False,
    }
    rewriting = load_plan(_plan(tmp_path, inputs, server.base_url, '["subq", "answer"]', "r"))
    assert {r["stage"]: r["calls_model"] for r in plan_stages(rewriting)}["pool"] is True


def test_a_finished_build_is_cached_and_needs_no_endpoint(server, inputs, tmp_path):
    plan = _plan(tmp_path, inputs, server.base_url)
    done = CliRunner().invoke(cli, ["build", str(plan), "--no-progress"])
    assert done.exit_code == 0, done.output
    res, js = _check(plan)
    assert res.exit_code == 0 and js["ready"]
    actions = {r["stage"]: r["action"] for r in js["stages"]}
    assert actions == {
        "questions": "cached",
        "corpus": "cached",
        "nuggets": "cached",
        "pool": "cached",
        "judge": "cached",
        "export": "cached",
        "calibrate": "skip",
    }
    assert js["endpoint_check"] is None
    # the same build again loads every stage: what the check said
    again = CliRunner().invoke(cli, ["build", str(plan), "--no-progress"])
    assert again.exit_code == 0 and "ran" not in {
        line.split("│")[2].strip() for line in again.stderr.splitlines() if line.count("│") == 4
    }
    # the server may be down now: nothing would ask it
    res, js = _check(plan, "--base-url", server.base_url)  # same endpoint: same keys
    server.stop()
    res, js = _check(plan)
    assert res.exit_code == 0 and js["ready"] and js["endpoint_check"] is None
    # --no-cache reruns the stages that ask the model: then they call it (and it is down)
    res, js = _check(plan, "--no-cache")
    actions = {r["stage"]: r["action"] for r in js["stages"]}
    assert actions["nuggets"] == actions["judge"] == actions["pool"] == "run"
    assert actions["corpus"] == "cached" and res.exit_code != 0 and not js["ready"]
    # a changed plan (another model) reruns what depends on the model
    _, js = _check(plan, "--model", "flag-model")
    actions = {r["stage"]: r["action"] for r in js["stages"]}
    assert actions["questions"] == actions["corpus"] == "cached"
    assert actions["nuggets"] == actions["judge"] == "run"


def test_a_stage_whose_input_is_missing(server, inputs, tmp_path):
    plan = _plan(tmp_path, inputs, server.base_url)
    res, js = _check(plan, "--stage", "judge")
    actions = {r["stage"]: r["action"] for r in js["stages"]}
    assert actions["judge"] == "run" and actions["pool"] == "missing"
    assert res.exit_code != 0 and any(
        "needs the output of stage 'pool', which is missing" in p for p in js["problems"]
    )


def test_the_price_line_names_the_model_that_wins(server, inputs, tmp_path):
    plan = _plan(tmp_path, inputs, server.base_url)
    res, js = _check(plan)
    assert js["price"] == [1.0, 2.0]
    words = CliRunner(env={"COLUMNS": "250"}).invoke(
        cli, ["build", str(plan), "--check", "--model", "flag-model"]
    )
    text = " ".join(words.stdout.split())
    assert "price: none for model 'flag-model' in the plan's [prices]" in text
    built = CliRunner(env={"COLUMNS": "250"}).invoke(
        cli, ["build", str(plan), "--no-progress", "--model", "flag-model"]
    )
    assert built.exit_code == 0, built.output
    # the cost line kept its words (rich read "[prices]" as a style tag: "in )")
    text = " ".join(built.stderr.split())
    assert "(no price for the model 'flag-model' in the plan's [prices])" in text
