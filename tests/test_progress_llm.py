"""Live progress on the long and paid commands (issue 37, item 1).

Before: ``judge``'s bar sat at ``0 pairs`` while its requests completed (``complete_many`` waited
for the whole batch before counting), ``nuggets`` showed nothing, and off a terminal no command
said anything until it ended. Now one machinery (:class:`nuggetbench.progress.Meter`): a bar with
its total, rate, ETA and the requests sent, cached and failed and the running cost; off a
terminal a line every ``NUGGETBENCH_PROGRESS_SECONDS``. The tests drive the commands against the
loopback server and look at the counts *while* the requests are answered.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time

import click
import pytest
from click.testing import CliRunner

from llm_fixtures import tiny_llm_inputs
from llm_server import LLMServer
from nuggetbench import progress
from nuggetbench.cli import cli
from nuggetbench.cli._globals import progress_style
from nuggetbench.llm.client import ChatRequest, LLMClient
from nuggetbench.llm.settings import LLMSettings
from nuggetbench.progress import Meter, expect

LINE = re.compile(r"INFO nuggetbench\.progress: (\w+): (?:done, )?(\d+)(?:/(\d+))? (\w+)")


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / "home"))
    for name in ("NUGGETBENCH_LLM_BASE_URL", "OPENAI_BASE_URL", "NUGGETBENCH_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture()
def slow_server():
    """The loopback server, each answer taking 30 ms (so that a batch takes a while)."""
    with LLMServer() as srv:
        srv.on_request = lambda entry: time.sleep(0.03)
        yield srv


def _request(i: int) -> ChatRequest:
    return ChatRequest(({"role": "user", "content": f"question {i}"},), "s", "p.v1", {})


def test_counts_arrive_as_requests_complete_not_at_the_batch_end(slow_server, tmp_path):
    """At each request's arrival the server notes how many answers the caller has counted: the
    late requests see the early answers counted (before issue 37: 0 until the batch ended)."""
    counted: list[int] = []
    seen: list[int] = []
    slow_server.on_request = lambda entry: (seen.append(len(counted)), time.sleep(0.03))[1]
    settings = LLMSettings(model="m", base_url=slow_server.base_url, no_api_key=True, concurrency=2)
    client = LLMClient(settings, tmp_path / "c.sqlite")
    try:
        client.complete_many([_request(i) for i in range(24)], progress=counted.append)
    finally:
        client.close()
    assert len(counted) == 24 and seen[0] == 0
    assert seen[-1] >= 18  # 2 in flight: the 24th request leaves after >= 22 answers came back
    assert seen == sorted(seen)  # counted as they came


def test_meter_total_rate_eta_and_llm_stats_in_log_lines(slow_server, tmp_path, caplog):
    settings = LLMSettings(
        model="m", base_url=slow_server.base_url, no_api_key=True, price=(2.0, 8.0)
    )
    client = LLMClient(settings, tmp_path / "c.sqlite")
    caplog.set_level(logging.INFO, logger="nuggetbench.progress")
    try:
        with Meter(
            "asking", None, "requests", style="log", every=0.05, stats=client.ledger.brief
        ) as m:
            expect(m, 20)
            client.complete_many([_request(i) for i in range(20)], progress=m)
            client.complete_many([_request(i) for i in range(5)], progress=m)  # cached now
            expect(m, 5)
    finally:
        client.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "nuggetbench.progress"]
    assert len(lines) >= 3, lines
    counts = [int(re.match(r"asking: (?:done, )?(\d+)", ln).group(1)) for ln in lines]
    assert counts == sorted(counts) and 0 < counts[-2] <= 25 and counts[-1] == 25
    middle = [ln for ln in lines[:-1] if "ETA" in ln]
    assert middle and all("/20 requests" in ln for ln in middle)  # the total, a share, an ETA
    final = lines[-1]
    assert final.startswith("asking: done, 25/25 requests, ")
    assert "20 sent, 5 cached, 0 failed, $" in final  # the running cost from the price
    cost = float(final.rsplit("$", 1)[1])
    usage = client.ledger.summary()["s"]
    assert cost == pytest.approx(
        (usage["paid_prompt_tokens"] * 2 + usage["paid_completion_tokens"] * 8) / 1e6, abs=1e-4
    )


def test_bar_style_draws_total_and_stats(capsys):
    with Meter("judging", None, "pairs", style="bar", stats=lambda: "3 sent, 0 cached") as m:
        expect(m, 4)
        for _ in range(4):
            m(1)
    err = capsys.readouterr().err
    assert "4/4" in err and "3 sent, 0 cached" in err and "pairs/s" in err


def _judge(root, url, *extra, env=None):
    args = ["judge", str(root / "ds"), str(root / "a.trec"), "--model", "m", "--base-url", url,
            "--no-api-key", "--depth", "40", "-o", str(root / "out"), *extra]  # fmt: skip
    return CliRunner(env={"COLUMNS": "200", **(env or {})}).invoke(cli, args)


def test_judge_off_a_terminal_writes_progress_lines(home, slow_server):
    tiny_llm_inputs(home, n_docs=40)  # 38 holes in the top 40
    res = _judge(home, slow_server.base_url, "--price", "2.5,10",
                 env={"NUGGETBENCH_PROGRESS_SECONDS": "0.1"})  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = [m.groups() for m in map(LINE.match, res.stderr.splitlines()) if m]
    assert len(lines) >= 3, res.stderr
    assert {d for d, *_ in lines} == {"judging"} and lines[-1][1:] == ("38", "38", "pairs")
    counts = [int(n) for _, n, _, _ in lines]
    assert counts == sorted(counts) and any(0 < c < 38 for c in counts)  # while it ran
    last = res.stderr.split("judging: done, 38/38 pairs")[1].splitlines()[0]
    assert "38 sent, 0 cached, 0 failed, $" in last
    # --no-progress: none of it
    quiet = _judge(home, slow_server.base_url, "--no-cache", "--no-progress",
                   env={"NUGGETBENCH_PROGRESS_SECONDS": "0.1"})  # fmt: skip
    assert quiet.exit_code == 0 and "nuggetbench.progress" not in quiet.stderr


def test_judge_on_a_terminal_redraws_with_counts_growing(home, slow_server):
    tiny_llm_inputs(home, n_docs=30)
    res = _judge(home, slow_server.base_url, env={"TTY_COMPATIBLE": "1"})
    assert res.exit_code == 0, res.output
    states = [s for s in re.split(r"[\r\n]", res.stderr) if s.startswith("judging:")]
    counts = [int(m.group(1)) for s in states if (m := re.search(r"\| (\d+)/28 ", s))]
    assert counts and counts[-1] == 28 and len(set(counts)) >= 5  # moved, not one jump
    assert "28 sent, 0 cached, 0 failed" in states[-1] and "tokens (no price)" in states[-1]


def test_nuggets_and_answers_report_their_windows(home, slow_server):
    root = home
    tiny_llm_inputs(root, n_docs=25)  # q1 has 2 relevant documents: 1 creation window
    env = {"NUGGETBENCH_PROGRESS_SECONDS": "0.05", "COLUMNS": "200"}
    made = CliRunner(env=env).invoke(
        cli,
        ["nuggets", str(root / "ds"), "--model", "m", "--base-url", slow_server.base_url,
         "--no-api-key", "-o", str(root / "n.jsonl"), "--rel-level", "1"],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    assert re.search(r"nuggets: done, 2/2 windows, .*2 sent, 0 cached, 0 failed", made.stderr)
    nuggets = [json.loads(line) for line in (root / "n.jsonl").read_text().splitlines()]
    rows = [{"qid": "q1", "query": "why", "nuggets": [
        {"text": f"Cats purr {i}", "importance": "vital"} for i in range(25)]}]  # fmt: skip
    (root / "many.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assigned = CliRunner(env=env).invoke(
        cli,
        ["answers", str(root / "many.jsonl"), str(root / "sysA.jsonl"), "--model", "m",
         "--base-url", slow_server.base_url, "--no-api-key"],
    )  # fmt: skip
    assert assigned.exit_code == 0, assigned.output
    assert re.search(r"assigning: done, 3/3 windows, .*3 sent", assigned.stderr)
    assert nuggets


def test_the_command_line_leaves_the_process_as_it_found_it(home, slow_server):
    tiny_llm_inputs(home)
    res = _judge(home, slow_server.base_url, env={"NUGGETBENCH_PROGRESS_SECONDS": "0.1"})
    assert res.exit_code == 0, res.output
    logger = logging.getLogger("nuggetbench.progress")
    assert progress.style() == "bar" and not logger.handlers and logger.propagate


def test_progress_lines_are_masked_and_the_interval_is_checked(capsys):
    @click.command()
    def probe():
        assert progress_style() == "log"  # stderr is not a terminal here
        logging.getLogger("nuggetbench.progress").info("at http://alice:pw8Kq2Zt7HunterTwo@h/v1")

    res = CliRunner().invoke(probe, [])
    assert res.exit_code == 0, res.output
    assert "http://***@h/v1" in res.stderr and "pw8Kq2Zt7HunterTwo" not in res.stderr
    bad = CliRunner(env={"NUGGETBENCH_PROGRESS_SECONDS": "soon"}).invoke(probe, [])
    assert bad.exit_code == 2 and "NUGGETBENCH_PROGRESS_SECONDS='soon'" in bad.output


def test_a_log_meter_ticks_while_nothing_settles(caplog):
    caplog.set_level(logging.INFO, logger="nuggetbench.progress")
    with Meter("waiting", 3, "items", style="log", every=0.02):
        time.sleep(0.15)  # a request that takes long: lines keep coming
    lines = [r.getMessage() for r in caplog.records]
    assert sum("waiting: 0/3 items (0%)" in ln for ln in lines) >= 3
    assert lines[-1].startswith("waiting: done, 0/3 items")
    assert not [t for t in threading.enumerate() if t.name == "progress"]  # the ticker ended


def test_a_short_step_without_llm_work_writes_no_line(caplog):
    caplog.set_level(logging.INFO, logger="nuggetbench.progress")
    with Meter("bm25 search", 2, "step", style="log", every=5.0) as m:
        m(2)
    with Meter("judging", 1, "pairs", style="log", every=5.0, stats=lambda: "1 sent") as m:
        m(1)
    lines = [r.getMessage() for r in caplog.records]  # the LLM step's end only
    assert len(lines) == 1 and lines[0].startswith("judging: done, 1/1 pairs")


def test_dense_encoding_meter_off_a_terminal(caplog):
    """The encoding loop of the dense retrievers reports through the same meter: in the ``log``
    style (a command off a terminal), lines with the documents done and the ETA."""
    import numpy as np

    from nuggetbench.retrieval.models.loading import progress_bar
    from nuggetbench.retrieval.models.plumbing import encode_in_length_order

    caplog.set_level(logging.INFO, logger="nuggetbench.progress")
    ids = [f"d{i}" for i in range(23)]

    def slow(texts):
        time.sleep(0.03)
        return [t.upper() for t in texts]

    progress.configure("log", 0.02)
    try:
        bar = progress_bar(True, len(ids), "encoding corpus")
        encode_in_length_order(
            lambda xs: xs, ids, np.arange(23), slow, lambda rows, v: None, chunk=10,
            progress=bar.update, step=4,
        )  # fmt: skip
        bar.close()
    finally:
        progress.configure("bar", 10.0)
    lines = [r.getMessage() for r in caplog.records]
    counts = [int(re.match(r"encoding corpus: (?:done, )?(\d+)", ln).group(1)) for ln in lines]
    assert len(lines) >= 3 and counts == sorted(counts) and 0 < counts[1] < 23
    assert lines[-1].startswith("encoding corpus: done, 23/23 doc")
    assert any("/23 doc (" in ln and "ETA" in ln for ln in lines[:-1])
