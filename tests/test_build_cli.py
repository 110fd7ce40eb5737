"""``nuggetbench build``'s command line (issue 30, item 19): the help points at the shipped example
plan; ``--model``/``--base-url``/``--no-api-key`` mean what they mean for ``judge``, ``nuggets`` and
``answers`` and override the plan's ``[llm]``; ``--check`` prints what would run, in words (JSON
with ``--format json``)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from build_fixtures import make_inputs, write_plan
from llm_server import LLMServer
from nuggetbench.builder.plan import load_plan
from nuggetbench.cli import cli

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-build-cli-test-key-4242"


@pytest.fixture()
def server(monkeypatch):
    with LLMServer(hang_seconds=10) as srv:
        monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        for name in ("NUGGETBENCH_LLM_API_KEY", "NUGGETBENCH_LLM_MODEL", "OPENAI_BASE_URL"):
            monkeypatch.delenv(name, raising=False)
        yield srv


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("inputs"))


def _invoke(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["build", *args])


def test_help_points_at_the_example_plan_which_exists():
    text = " ".join(_invoke("--help").output.split())
    named = re.findall(r"examples/[\w.-]+\.toml", text)
    assert named and all((ROOT / path).is_file() for path in named)
    assert "builder/plan.py" not in text and "nuggetbench.builder" not in text
    for flag in ("--model NAME", "--base-url URL", "--no-api-key"):
        assert flag in text
    assert "the plan's [llm] model, else NUGGETBENCH_LLM_MODEL" in text


@pytest.mark.parametrize("command", ["judge", "nuggets", "answers"])
def test_the_endpoint_options_are_the_same_options(command):
    """One decorator: the same names, types and flags in build and the LLM commands."""
    import click

    def options(name):
        cmd = cli.get_command(click.Context(cli), name)
        return {
            p.name: (tuple(p.opts), p.is_flag, p.type.name)
            for p in cmd.params
            if p.name in ("model", "base_url", "no_api_key")
        }

    assert options(command) == options("build") and len(options("build")) == 3


def test_flags_override_the_plan_and_the_environment(server, inputs, tmp_path):
    plan = write_plan(tmp_path / "p", inputs)
    plain = json.loads(_invoke(str(plan), "--check", "--format", "json").stdout)
    assert plain["llm"]["model"] == "test-model" and plain["llm"]["base_url"] == server.base_url
    assert plain["api_key"] == "set"
    over = _invoke(
        str(plan),
        "--check",
        "--format",
        "json",
        "--model",
        "flag-model",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--no-api-key",
    )
    # nothing listens there (issue 37): the check says so and exits non-zero
    assert over.exit_code != 0 and "not ready" in str(over.exception)
    assert "127.0.0.1:9/v1 does not answer" in str(over.exception)
    llm = json.loads(over.stdout)["llm"]
    assert (llm["model"], llm["base_url"], llm["no_api_key"]) == (
        "flag-model",
        "http://127.0.0.1:9/v1",
        True,
    )
    assert json.loads(over.stdout)["api_key"].startswith("not needed")
    assert json.loads(over.stdout)["ready"] is False
    # a plan without a model runs with --model; [prices] are those of the model that wins
    text = plan.read_text().replace('model = "test-model"\n', "")
    text = text.replace('"test-model" = {', '"flag-model" = {')
    bare = tmp_path / "bare.toml"
    bare.write_text(text)
    assert load_plan(bare, llm={"model": "flag-model"}).llm.price == (1.0, 2.0)
    assert load_plan(plan, llm={"model": "flag-model"}).llm.price is None
    failed = _invoke(str(bare), "--check")
    assert failed.exit_code != 0 and "no LLM model" in str(failed.exception)


def test_a_build_sends_the_flag_model_to_the_flag_endpoint(server, inputs, tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    plan = write_plan(tmp_path / "p", inputs)
    done = _invoke(
        str(plan), "--no-progress", "--model", "flag-model", "--base-url", server.base_url
    )
    assert done.exit_code == 0, done.output
    assert server.log and {e.body.get("model") for e in server.log} == {"flag-model"}
    manifest = json.loads((tmp_path / "p" / "out" / "manifest.json").read_text())
    assert manifest["llm"]["model"] == "flag-model"


def _rows(text: str) -> dict[str, list[str]]:
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 4 and cells[0]:
            out[cells[0]] = cells[1:]
    return out


def test_check_prints_what_would_run_in_words(server, inputs, tmp_path):
    plan = write_plan(tmp_path / "p", inputs)
    before = _invoke(str(plan), "--check")
    assert before.exit_code == 0, before.output
    text = before.stdout
    assert not text.lstrip().startswith("{") and "ready (nothing was run)" in text
    assert f"endpoint: {server.base_url} (openai), model test-model; API key: set" in text
    assert "endpoint check: answers, serves the model (3 models listed), key accepted" in text
    assert "price: $1 / $2 per million input / output tokens" in text
    assert server.probes and server.probes[-1]["auth"] == f"Bearer {KEY}"  # GET /models
    assert "repositories (2):" in text and "retrievers bm25" in text
    rows = _rows(text)
    assert list(rows) == ["questions", "corpus", "nuggets", "pool", "judge", "export", "calibrate"]
    assert [rows[s][0] for s in rows] == ["run"] * 6 + ["not run"]  # no [calibration] labels
    assert rows["nuggets"][1] == "yes" and rows["corpus"][1] == "no"
    assert rows["pool"][1] == "yes"  # the default techniques rewrite with subq and hyde
    assert all(r[2] == "-" for r in rows.values()) and "none yet" in text
    assert KEY not in before.output and not (tmp_path / "p" / "out").exists()  # ran nothing

    assert _invoke(str(plan), "--no-progress").exit_code == 0  # the whole build
    after = _invoke(str(plan), "--check", "--stage", "export")
    assert after.exit_code == 0, after.output
    rows = _rows(after.stdout)
    assert rows["export"][0] == "run" and rows["judge"][0] == "be read"
    assert rows["calibrate"][0] == "not run"
    kept = json.loads((tmp_path / "p" / "out" / "_build" / "questions.meta.json").read_text())
    assert rows["questions"][2] == ", ".join(f"{k} {v}" for k, v in kept["summary"].items())
    cache = tmp_path / "p" / "out" / "_build" / "llm_cache.sqlite"
    with sqlite3.connect(cache) as db:
        counts = dict(db.execute("SELECT stage, COUNT(*) FROM responses GROUP BY stage"))
    assert counts and all(f"{n} {s} answers" in after.stdout for s, n in counts.items())
    probes = len(server.probes)
    js = json.loads(_invoke(str(plan), "--check", "--format", "json").stdout)
    assert js["llm_cache"]["answers"] == counts and js["ready"] is True
    # issue 37: a finished build's stages are cached; none would call the model, so the
    # endpoint is not probed (and need not be up)
    assert [r["action"] for r in js["stages"]] == ["cached"] * 6 + ["skip"]
    assert not any(r["calls_model"] for r in js["stages"]) and js["endpoint_check"] is None
    assert len(server.probes) == probes


def test_progress_bars_only_on_a_terminal(server, inputs, tmp_path):
    """Issue 30, item 20: piped, a build prints its summary and no ``\\r`` redraws; on a
    terminal (rich's ``TTY_COMPATIBLE=1``) the same build draws its bars."""
    piped = CliRunner(env={"COLUMNS": "200"}).invoke(
        cli, ["build", str(write_plan(tmp_path / "a", inputs))]
    )
    assert piped.exit_code == 0, piped.output
    assert "\r" not in piped.stderr and "it/s" not in piped.stderr
    assert "output: " in piped.stderr  # the final summary stays
    # issue 37: progress lines instead of redraws, one per stage at its end at least
    lines = [ln for ln in piped.stderr.splitlines() if ln.startswith("INFO nuggetbench.progress")]
    assert any("nuggets: done, 4/4 q" in ln and "sent" in ln and "$" in ln for ln in lines)
    assert any("judging: done" in ln for ln in lines)
    terminal = CliRunner(env={"COLUMNS": "200", "TTY_COMPATIBLE": "1"}).invoke(
        cli, ["build", str(write_plan(tmp_path / "b", inputs))]
    )
    assert terminal.exit_code == 0, terminal.output
    assert "\r" in terminal.stderr and "nuggets:" in terminal.stderr


def _bounded(folder: Path, inputs, *, timeout: float, max_retries: int) -> Path:
    """The test plan with its ``[llm] timeout`` and ``max_retries`` replaced."""
    plan = write_plan(folder, inputs)
    text = plan.read_text()
    assert "\ntimeout = 5\n" in text and "\nmax_retries = 2\n" in text
    text = text.replace("\ntimeout = 5\n", f"\ntimeout = {timeout}\n")
    plan.write_text(text.replace("\nmax_retries = 2\n", f"\nmax_retries = {max_retries}\n"))
    return plan


def test_timeout_and_max_retries_flags_win_over_the_plan(server, inputs, tmp_path):
    """``--timeout`` / ``--max-retries`` as on judge/answers/nuggets: the flag, then the plan's
    ``[llm]``, then the defaults. The server hangs (10 s) on the first request only."""
    slow = _bounded(tmp_path / "slow", inputs, timeout=30, max_retries=0)
    server.inject("hang")
    flag = _invoke(str(slow), "--no-progress", "--timeout", "0.5")
    assert flag.exit_code != 0 and "within 0.5 s" in str(flag.exception)  # not 30 s: the flag
    quick = _bounded(tmp_path / "quick", inputs, timeout=0.5, max_retries=0)
    server.inject("hang")
    plan = _invoke(str(quick), "--no-progress")
    assert plan.exit_code != 0 and "within 0.5 s" in str(plan.exception)  # the plan's [llm]
    server.inject("hang")
    retried = _invoke(str(quick), "--no-progress", "--max-retries", "1")
    assert retried.exit_code == 0, retried.output  # the hung request was asked again
    assert load_plan(quick, llm={"timeout": None, "max_retries": 2}).llm.max_retries == 2
    assert load_plan(quick).llm.timeout == 0.5
