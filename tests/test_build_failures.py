"""Unusable LLM answers are failures: never recorded as a done stage, never cached as results.

Against the loopback OpenAI-compatible server of ``llm_server.py``: a build whose answers are
prose instead of JSON must exit non-zero saying how many failed and why, keep no stage output and
no cached answer of the failed requests, and a re-run after the server is fixed must re-send
exactly the failed requests (issue 13, case 8).
"""

from __future__ import annotations

import json

import pytest

from build_fixtures import make_inputs, write_plan
from llm_server import LLMServer
from nuggetbench.builder.pipeline import run_build
from nuggetbench.builder.plan import load_plan
from nuggetbench.builder.questions import Question
from nuggetbench.cli import main
from nuggetbench.errors import StageFailedError
from nuggetbench.judging.answer_nuggets import NuggetOptions, generate_nuggets
from nuggetbench.llm.client import LLMClient, LLMSettings

KEY = "sk-failures-test-key-0001"


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


def first_round(entries, task):
    """Keys of the first requests of *task* (no repair turn, no re-asked pairs)."""
    out = []
    for e in entries:
        if e.task != task:
            continue
        content = "\n".join(m["content"] for m in e.body["messages"])
        if len(e.body["messages"]) <= 2 and "<pairs>" not in content:
            out.append(e.key)
    return out


def build(plan, capsys, *extra) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["build", str(plan), "--no-progress", *extra])
        raise SystemExit(0)
    return exit_info.value.code, capsys.readouterr().err


def test_prose_answers_fail_the_build_and_a_rerun_resends_exactly_them(
    server, inputs, tmp_path, capsys
):
    plan = write_plan(tmp_path / "p", inputs)
    server.inject("not_json", times=1000, task="nuggets")
    code, err = build(plan, capsys)
    assert code != 0
    text = " ".join(err.split())
    assert "stage 'nuggets': 4 of 4 questions got no usable LLM answer" in text
    assert "4 x the answer holds no JSON object with a 'nuggets' field" in text
    work = tmp_path / "p" / "out" / "_build"
    assert not (work / "nuggets.meta.json").exists()
    assert not (tmp_path / "p" / "out" / "queries.jsonl").exists()
    log = json.loads((work / "last_run.json").read_text())
    assert log["stages"]["nuggets"]["status"] == "failed"
    # 4 questions x (first ask + 2 repairs), every answer prose
    failed = first_round(server.log, "nuggets")
    assert len(failed) == 4 and sum(e.task == "nuggets" for e in server.log) == 12

    server.faults.clear()
    n = len(server.log)
    code, err = build(plan, capsys)
    assert code == 0, err
    resent = [e.key for e in server.log[n:] if e.task == "nuggets"]
    assert sorted(resent) == sorted(failed)  # exactly the failed requests, nothing else
    rows = (tmp_path / "p" / "out" / "queries.jsonl").read_text().splitlines()
    assert [json.loads(r)["query_id"] for r in rows] == ["1", "3"]


def test_one_failed_question_stops_the_build_unless_accepted(server, inputs, tmp_path, capsys):
    # concurrency 1 and no repair round: the first question gets the one prose answer
    plan = write_plan(tmp_path / "p", inputs, extra="[nuggets]\nmax_repairs = 0\n")
    server.inject("not_json", task="nuggets")
    with pytest.raises(StageFailedError, match="1 of 4 questions"):
        run_build(load_plan(plan))
    bad = first_round(server.log, "nuggets")[0]
    # the failed answers are not in the cache: the stage reruns and asks the one question again
    n = len(server.log)
    server.inject("not_json", task="nuggets")
    code, err = build(plan, capsys, "--accept-failures")
    assert code == 0, err
    assert [e.key for e in server.log[n:] if e.task == "nuggets"] == [bad]
    meta = json.loads((tmp_path / "p" / "out" / "_build" / "nuggets.meta.json").read_text())
    assert meta["failures"]["count"] == 1 and meta["summary"]["failed"] == 1


def test_judge_answers_that_stay_unusable_fail_the_stage(server, inputs, tmp_path):
    plan = load_plan(write_plan(tmp_path / "p", inputs))
    server.inject("not_json", times=10_000, task="judge")
    with pytest.raises(
        StageFailedError, match=r"stage 'judge': (\d+) of \1 \(nugget, chunk\) pairs"
    ):
        run_build(plan)
    work = tmp_path / "p" / "out" / "_build"
    assert (work / "pool.meta.json").exists() and not (work / "judge.meta.json").exists()
    failed = first_round(server.log, "judge")
    server.faults.clear()
    n = len(server.log)
    report = run_build(plan)
    assert sorted(e.key for e in server.log[n:]) == sorted(failed)
    assert (
        report.stages["judge"]["status"] == "ran" and report.stages["judge"]["unjudged_pairs"] == 0
    )


def test_subquestions_that_stay_unusable_fail_the_pool_stage(server, inputs, tmp_path):
    plan = load_plan(write_plan(tmp_path / "p", inputs))
    server.inject("not_json", times=10_000, task="subq")
    with pytest.raises(StageFailedError, match="stage 'pool': 4 of 4 sub-question requests"):
        run_build(plan)
    assert not (tmp_path / "p" / "out" / "_build" / "pool.meta.json").exists()


def test_failed_items_leave_nothing_in_the_llm_cache(server, tmp_path):
    client = LLMClient(
        LLMSettings(model="m", base_url=server.base_url, timeout=5, backoff=0.01, concurrency=1),
        tmp_path / "c.sqlite",
    )
    q1 = Question("1", "Frobnicate?", "How?", "Call frobnicate with a level. Install it first.")
    q2 = Question("2", "Spin?", "Fast?", "Configure spin_rate in config.toml. Gizmos spin fast.")
    server.inject("not_json", task="nuggets")  # q1's only ask (no repair round)
    result = generate_nuggets(client, [q1, q2], NuggetOptions(max_repairs=0))
    assert list(result.failed) == ["1"] and list(result.nuggets) == ["2"]
    assert len(client.cache) == 1  # only q2's answer stays
    assert client.forget(["no-such-key"]) == 0
    client.close()
