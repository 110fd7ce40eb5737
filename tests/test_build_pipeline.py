"""End-to-end builds against the local OpenAI-compatible server: output, resumability, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from build_fixtures import REPO_A, make_inputs, write_plan
from llm_server import LLMServer, supports
from nuggetbench.builder.pipeline import run_build
from nuggetbench.builder.plan import load_plan
from nuggetbench.cli.build import build_command
from nuggetbench.errors import InputError, LLMError

KEY = "sk-pipeline-secret-key-4242"
OUTPUTS = ("queries.jsonl", "corpus.jsonl", "corpus_metadata.jsonl", "manifest.json")


@pytest.fixture()
def server(monkeypatch):
    with LLMServer(hang_seconds=10) as srv:
        monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.delenv("NUGGETBENCH_LLM_API_KEY", raising=False)
        monkeypatch.delenv("NUGGETBENCH_LLM_MODEL", raising=False)
        yield srv


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("inputs"))


def read_outputs(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in OUTPUTS}


def test_end_to_end_build_through_the_cli(server, inputs, tmp_path):
    plan = write_plan(tmp_path / "p", inputs)
    result = CliRunner().invoke(build_command, [str(plan), "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = tmp_path / "p" / "out"
    for text in (
        "co-occurring tags",
        "corpus: 8 files seen, 4 chunked, 4 skipped (data 1, hidden 2, image 1)",
        "malformed row at line 8",
        "filter: 4 questions",
        "benchmark cost",
    ):
        assert text in result.output, text
    rows = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    # question 7 (pancakes) has no supported nugget; question 9's third sentence is supported by no chunk
    assert [r["query_id"] for r in rows] == ["1", "3"]
    readme = f"repo_a/README.md_0_{len(REPO_A['README.md'].rstrip(chr(10)).encode())}"
    first = rows[0]["nuggets"][0]
    assert first["_id"] == "1_0" and first["relevant_corpus_ids"] == [readme]
    assert (
        first["text"]
        == "Call the frobnicate function with the level parameter controlling intensity."
    )
    # every verdict maps back to the right (nugget, chunk): the server's rule agrees with each one
    corpus = {
        json.loads(line)["_id"]: json.loads(line)["text"]
        for line in (out / "corpus.jsonl").read_text().splitlines()
    }
    for r in rows:
        for nug in r["nuggets"]:
            assert nug["relevant_corpus_ids"] and set(nug["relevant_corpus_ids"]) <= set(corpus)
            for did in nug["relevant_corpus_ids"]:
                assert supports(nug["text"], corpus[did])
            for did in nug["non_relevant_corpus_ids"]:
                assert not supports(nug["text"], corpus[did])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["filter"]["no_supported_nugget"] == 1
    assert manifest["counts"]["filter"]["any_unsupported_nugget"] == 1
    assert [r["commit"] for r in manifest["sources"]["repositories"]] == [
        subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=inputs[k], capture_output=True, text=True
        ).stdout.strip()
        for k in ("repo_a", "repo_b")
    ]
    assert (
        manifest["prompts"]["judge"]["version"] == "judge.v1"
        and manifest["llm"]["model"] == "test-model"
    )
    tasks = [e.task for e in server.log]
    total = manifest["cost"]["total"]
    assert total["requests"] == len(server.log) == len(set(e.key for e in server.log))
    assert tasks.count("nuggets") == 4 and tasks.count("subq") == 4 and tasks.count("hyde") == 4
    # cost: $1 per million prompt tokens, $2 per million completion tokens (the plan's price)
    assert total["cost_usd"] == pytest.approx(
        (total["prompt_tokens"] + 2 * total["completion_tokens"]) / 1e6
    )
    # the key went over the wire, never to disk
    assert all(e.extra["auth"] == f"Bearer {KEY}" for e in server.log)
    for path in (tmp_path / "p").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    # loadable as a FreshStack folder, nuggets and all
    from nuggetbench.datasets.freshstack import load_folder

    ds = load_folder(out)
    assert sorted(ds.queries) == ["1", "3"] and ds.qrels.nuggets.n_nuggets == 4
    assert len(ds.corpus) == 4 and ds.default_measures == ["alpha_nDCG@10", "Coverage@20", "R@50"]

    # `nuggetbench run PATH` scores retrievers on it, the LLM rewriters included
    from nuggetbench.cli import cli

    n = len(server.log)
    ran = CliRunner().invoke(
        cli,
        ["run", str(out), "-r", "bm25", "-r", "hyde(bm25; model=test-model)"],
        catch_exceptions=False,
    )
    assert ran.exit_code == 0, ran.output
    assert "alpha_nDCG@10" in ran.output and "hyde(bm25;" in ran.output
    assert {e.task for e in server.log[n:]} == {"hyde"}

    # a re-run sends nothing and rewrites nothing
    before = read_outputs(out)
    n = len(server.log)
    report = run_build(load_plan(plan))
    assert len(server.log) == n
    assert {s["status"] for name, s in report.stages.items() if name != "calibrate"} == {"cached"}
    assert read_outputs(out) == before


def _kill_hook(server, state, after: int):
    def hook(entry):
        if entry.task == "judge" and state.get("pid"):
            state["judge"] = state.get("judge", 0) + 1
            if state["judge"] == after + 1:
                os.kill(state["pid"], signal.SIGKILL)
                return True  # this request is never answered
        return False

    return hook


def test_build_killed_during_judging_resumes_without_repeating_a_request(server, inputs, tmp_path):
    # reference: an uninterrupted build in its own folder
    ref_plan = write_plan(tmp_path / "ref", inputs)
    run_build(load_plan(ref_plan))
    reference = read_outputs(tmp_path / "ref" / "out")
    n_judge = sum(e.task == "judge" for e in server.log)
    assert n_judge >= 4
    server.log.clear()

    plan = write_plan(tmp_path / "run", inputs)
    state: dict = {}
    server.on_request = _kill_hook(server, state, after=2)
    code = (
        "import sys; from nuggetbench.cli.build import build_command; "
        f"build_command.main([{str(plan)!r}, '--no-progress'], standalone_mode=False)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    state["pid"] = proc.pid
    threading.Timer(120, proc.kill).start()  # never hang the suite
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    server.on_request = None
    assert state["judge"] == 3
    workdir = tmp_path / "run" / "out" / "_build"
    assert not (workdir / "judge.meta.json").exists() and (workdir / "pool.meta.json").exists()
    first_run = list(server.log)

    report = run_build(load_plan(plan))
    resumed = server.log[len(first_run) :]
    assert report.stages["judge"]["status"] == "ran" and report.stages["pool"]["status"] == "cached"
    # nothing answered before the kill is asked again; only judge requests remain to be sent
    answered_before = {e.key for e in first_run if e.answered}
    assert not answered_before & {e.key for e in resumed}
    assert {e.task for e in resumed} == {"judge"}
    assert len(resumed) == n_judge - 2
    answered = [e.key for e in server.log if e.answered]
    assert len(answered) == len(set(answered))
    assert (
        report.usage["judge"]["cached_calls"] == 2
        and report.usage["judge"]["paid_calls"] == n_judge - 2
    )
    assert read_outputs(tmp_path / "run" / "out") == reference


def test_stage_option_runs_one_stage(server, inputs, tmp_path):
    plan = load_plan(write_plan(tmp_path / "p", inputs))
    with pytest.raises(
        InputError, match="stage 'judge' needs the output of stage 'questions', which is missing"
    ):
        run_build(plan, stage="judge")
    report = run_build(plan, stage="questions")
    assert report.stages["questions"]["status"] == "ran" and report.top_tags[0] == ("widgets", 3)
    report = run_build(plan, stage="corpus")
    assert list(report.stages) == ["corpus"] and report.corpus_stats["chunks"] == 4
    assert not server.log
    report = run_build(plan, stage="nuggets")
    assert (
        report.stages["nuggets"]["status"] == "ran" and "corpus" not in report.stages
    )  # nuggets do not read it
    n = len(server.log)
    report = run_build(plan, stage="nuggets")  # runs again: every answer comes from the cache
    assert len(server.log) == n and report.usage["nuggets"]["cached_calls"] == 4


def test_changed_plan_recomputes_only_what_it_affects(server, inputs, tmp_path):
    folder = tmp_path / "p"
    run_build(load_plan(write_plan(folder, inputs)))
    n = len(server.log)
    report = run_build(
        load_plan(write_plan(folder, inputs, extra="[filter]\ndrop_any_unsupported = false\n"))
    )
    assert len(server.log) == n
    assert (
        report.stages["judge"]["status"] == "cached" and report.stages["export"]["status"] == "ran"
    )
    rows = (folder / "out" / "queries.jsonl").read_text().splitlines()
    assert [json.loads(r)["query_id"] for r in rows] == ["1", "3", "9"]


def test_repository_path_that_does_not_exist(server, inputs, tmp_path):
    bad = dict(inputs, repo_b=tmp_path / "no-such-repo")
    plan = write_plan(tmp_path / "p", bad)
    result = CliRunner().invoke(build_command, [str(plan), "--no-progress"])
    assert isinstance(result.exception, InputError)
    assert "no-such-repo does not exist; fix [[repos]] path in the plan" in str(result.exception)


def test_timeout_is_reported_and_the_build_resumes(server, inputs, tmp_path):
    plan_path = write_plan(tmp_path / "p", inputs)
    text = (
        plan_path.read_text()
        .replace("timeout = 5", "timeout = 0.3")
        .replace("max_retries = 2", "max_retries = 1")
    )
    plan_path.write_text(text)
    server.inject("hang", times=2, task="nuggets")
    with pytest.raises(LLMError, match="stage 'nuggets'.*timeout"):
        run_build(load_plan(plan_path))
    report = run_build(load_plan(plan_path))
    assert report.stages["export"]["status"] == "ran"
    assert report.usage["nuggets"]["paid_calls"] == 4


def test_rate_limits_and_bad_answers_during_a_build(server, inputs, tmp_path):
    plan = load_plan(write_plan(tmp_path / "p", inputs))
    server.inject("429", times=2, task="judge")
    server.inject("not_json", task="nuggets")
    server.inject("garbage", task="subq")
    report = run_build(plan)
    assert report.usage["judge"]["retries"] == 2 and report.usage["subq"]["retries"] == 1
    rows = (tmp_path / "p" / "out" / "queries.jsonl").read_text().splitlines()
    assert [json.loads(r)["query_id"] for r in rows] == ["1", "3"]


def test_calibrate_stage_reads_human_labels(server, inputs, tmp_path):
    folder = tmp_path / "p"
    labels = tmp_path / "labels.jsonl"
    lines = [
        {"type": "nugget", "query_id": "1", "nugget_id": "1_0", "hallucinated": False},
        {"type": "nugget", "query_id": "1", "nugget_id": "1_1", "hallucinated": True},
        {"type": "missing", "query_id": "1", "missing": 0},
        {
            "type": "support",
            "query_id": "1",
            "nugget_id": "1_0",
            "doc_id": "repo_a/README.md_0_126",
            "supported": True,
        },
    ]
    labels.write_text("\n".join(json.dumps(x) for x in lines))
    plan = load_plan(write_plan(folder, inputs, extra=f'[calibration]\nlabels = "{labels}"\n'))
    with pytest.raises(InputError, match="needs the output of stage 'questions'"):
        run_build(plan, stage="calibrate")
    run_build(plan)
    result = json.loads((folder / "out" / "calibration.json").read_text())
    # one of two nuggets hallucinated: groundedness 1/2; the judge agrees on the one labelled pair
    assert result["nuggets"]["micro"]["groundedness"] == pytest.approx(0.5)
    assert result["judge"]["pairs"] == 1 and result["judge"]["accuracy"] == 1.0
    report = run_build(plan, stage="calibrate")
    assert report.stages["calibrate"]["status"] == "ran"
