"""The shipped example plan (issue 18, point 12) parses and passes ``build --check``."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from llm_server import LLMServer
from nuggetbench.builder.plan import load_plan
from nuggetbench.cli import cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "stackexchange-plan.toml"


def test_example_plan_parses_and_documents_itself():
    plan = load_plan(EXAMPLE)
    assert plan.llm.no_api_key and plan.llm.base_url.startswith("http://127.0.0.1")
    assert plan.questions.source.name == "Posts.xml" and plan.repos
    text = EXAMPLE.read_text()
    comments = [line for line in text.splitlines() if "#" in line]
    assert len(comments) > 30  # a commented plan, not a bare one


def test_example_plan_passes_the_check(shared_data, tmp_path):
    text = EXAMPLE.read_text()
    text = text.replace("../../shared/data", str(shared_data))
    text = text.replace('path = "../docs"', f'path = "{EXAMPLE.parents[1] / "docs"}"')
    text = text.replace('output = "../out/coffee-demo"', f'output = "{tmp_path / "out"}"')
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    with LLMServer() as server:  # the plan's local server, up (issue 37: --check probes it)
        server.models = [load_plan(EXAMPLE).llm.model]
        url = server.base_url
        out = CliRunner().invoke(
            cli, ["build", str(plan), "--check", "--format", "json", "--base-url", url]
        )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["ready"] is True and server.probes
    down = CliRunner().invoke(cli, ["build", str(plan), "--check", "--base-url", url])
    assert down.exit_code != 0 and "does not answer" in str(down.exception)
    missing = tmp_path / "missing.toml"
    missing.write_text(text.replace(str(shared_data), str(tmp_path / "nowhere")))
    bad = CliRunner().invoke(cli, ["build", str(missing), "--check"])
    assert bad.exit_code != 0 and "does not exist" in str(bad.exception)
