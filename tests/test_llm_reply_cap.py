"""Bounded LLM replies and a cache file that shrinks (issue 35, item 6): a reply over
``max_reply_chars`` is cut, stored cut with its length noted and never used; its repair turn
repeats only its start; the judgments file notes the length; deleting rows (unusable answers are
dropped from the cache) gives the space back to the file system."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from llm_fixtures import tiny_llm_inputs
from llm_server import LLMServer
from nuggetbench.cli import cli
from nuggetbench.errors import InputError
from nuggetbench.llm.asking import ask, check_length
from nuggetbench.llm.cache import LLMCache
from nuggetbench.llm.client import ECHO_CHARS, ChatRequest, LLMClient
from nuggetbench.llm.jsonout import InvalidAnswer
from nuggetbench.llm.settings import MAX_REPLY_CHARS, LLMSettings


def _client(tmp_path, replies, cap=1000):
    sent = []

    def transport(body):
        sent.append(body)
        return replies[len(sent) - 1], 5, 7

    settings = LLMSettings(model="m", base_url="http://127.0.0.1:9/v1", max_reply_chars=cap)
    return LLMClient(settings, tmp_path / "c.sqlite", transport=transport), sent


def _request(text="grade this"):
    return ChatRequest(({"role": "user", "content": text},), "judge", "v1")


def test_the_default_cap_is_one_mebibyte_of_text():
    assert MAX_REPLY_CHARS == 1024 * 1024 == LLMSettings(model="m").max_reply_chars
    for bad in (0, -5, 2.5, True):
        with pytest.raises(InputError, match="max_reply_chars"):
            LLMSettings(model="m", max_reply_chars=bad)


def test_a_reply_over_the_cap_is_cut_stored_cut_and_its_length_noted(tmp_path):
    client, _ = _client(tmp_path, ["y" * 5000, "short"], cap=1000)
    got = client.complete(_request())
    assert (len(got.text), got.reply_chars) == (1000, 5000) and not got.cached
    db = sqlite3.connect(tmp_path / "c.sqlite")
    length, extra = db.execute("SELECT length(response), extra FROM responses").fetchone()
    assert length == 1000 and json.loads(extra) == {"reply_chars": 5000}
    again = client.complete(_request())  # served from the cache, still noted
    assert again.cached and (len(again.text), again.reply_chars) == (1000, 5000)
    ok = client.complete(_request("another"))
    assert ok.text == "short" and ok.reply_chars is None and ok.echo() == "short"
    echo = got.echo()
    assert echo.startswith("y" * min(ECHO_CHARS, 1000))
    assert "5,000 characters" in echo and len(echo) <= ECHO_CHARS + 80


def test_a_cut_reply_is_unusable_and_its_repair_repeats_only_its_start(tmp_path):
    client, sent = _client(tmp_path, ["z" * 50_000] * 3, cap=10_000)
    asked = ask(client, [_request()], lambda text: text, max_repairs=1, instruction="Be brief.")
    assert asked[0].value is None and "over max_reply_chars = 10,000" in asked[0].error
    assert asked[0].reply_chars == 50_000 and len(asked[0].reply) < ECHO_CHARS + 80
    repeated = sent[1]["messages"][1]["content"]  # the repair turn's assistant message
    assert sent[1]["messages"][1]["role"] == "assistant"
    assert len(repeated) < ECHO_CHARS + 80 and "50,000 characters" in repeated
    # the validator never saw the cut text (it accepts anything); the failed answers were
    # dropped from the cache, so asking again sends again
    with pytest.raises(InvalidAnswer):
        check_length(client.complete(_request()), 10_000)
    assert len(sent) == 3


def _judge(tmp_path, *extra):
    args = ["judge", str(tmp_path / "ds"), str(tmp_path / "a.trec"), "--model", "m"]
    result = CliRunner().invoke(
        cli, [*args, "--no-api-key", "--depth", "6", "--format", "json", *extra, "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["judge"]


def test_judge_keeps_huge_replies_out_of_its_files_and_cache(tmp_path, monkeypatch):
    """Before: 10 MB replies gave a 50 MB judgments.jsonl and a 300 MB cache.sqlite with 0 rows
    (5 holes, 3 requests each); now every file stays small."""
    home = tmp_path / "home"
    monkeypatch.setenv("NUGGETBENCH_HOME", str(home))
    tiny_llm_inputs(tmp_path)
    with LLMServer() as srv:
        srv.huge_chars = 3_000_000
        srv.inject("huge", times=100, task="umbrela")
        shown = _judge(tmp_path, "--base-url", srv.base_url, "-o", str(tmp_path / "o"))
        bodies = [e.body for e in srv.log]
    assert shown["holes"] == shown["failures"] == 4 and shown["requests_sent"] == 12
    rows = [json.loads(x) for x in (tmp_path / "o" / "judgments.jsonl").read_text().splitlines()]
    assert [r["reply_chars"] for r in rows] == [3_000_000] * 4
    assert all("max_reply_chars" in r["error"] and len(r["reply"]) < 2100 for r in rows)
    assert (tmp_path / "o" / "judgments.jsonl").stat().st_size < 20_000
    repeated = [m["content"] for b in bodies for m in b["messages"] if m["role"] == "assistant"]
    assert len(repeated) == 4 * (1 + 2) and max(len(t) for t in repeated) < 2100
    cache = LLMCache(home / "cache" / "llm" / "cache.sqlite")
    assert len(cache) == 0 and cache.file_bytes() < 200_000  # rows dropped, space returned
    cache.close()


def test_max_reply_chars_sets_the_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / "home"))
    tiny_llm_inputs(tmp_path)
    with LLMServer() as srv:
        srv.huge_chars = 200_000
        srv.inject("huge", times=100, task="umbrela")
        args = ("--base-url", srv.base_url, "--max-repairs", "0")
        _judge(tmp_path, *args, "--max-reply-chars", "300000", "-o", str(tmp_path / "big"))
        _judge(tmp_path, *args, "--max-reply-chars", "50000", "-o", str(tmp_path / "cut"))
    big = [json.loads(x) for x in (tmp_path / "big" / "judgments.jsonl").read_text().splitlines()]
    cut = [json.loads(x) for x in (tmp_path / "cut" / "judgments.jsonl").read_text().splitlines()]
    assert all(len(r["reply"]) == 200_000 and "reply_chars" not in r for r in big)
    assert all(r["reply_chars"] == 200_000 and "50,000" in r["error"] for r in cut)


def _fill(cache: LLMCache, n: int, size: int) -> None:
    for i in range(n):
        cache.put(
            f"k{i}",
            model="m",
            stage="s",
            prompt_version="v",
            request={"i": i},
            response="x" * size,
            prompt_tokens=1,
            completion_tokens=1,
        )


def test_deleting_rows_gives_the_space_back(tmp_path):
    cache = LLMCache(tmp_path / "new.sqlite")
    _fill(cache, 30, 200_000)
    full = cache.file_bytes()
    assert full > 30 * 200_000
    assert cache.discard([f"k{i}" for i in range(29)]) == 29
    assert len(cache) == 1 and cache.file_bytes() < full / 10
    assert cache.get("k29").text == "x" * 200_000  # what is kept is intact
    cache.close()


def test_a_cache_made_before_auto_vacuum_is_converted_on_its_first_deletion(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)  # the table as the first versions made it, no auto-vacuum
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, stage TEXT NOT NULL, "
        "prompt_version TEXT NOT NULL, request TEXT NOT NULL, response TEXT NOT NULL, "
        "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, created REAL NOT NULL)"
    )
    db.commit()
    db.close()
    cache = LLMCache(path)
    assert cache._db.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    _fill(cache, 20, 200_000)
    full = cache.file_bytes()
    cache.discard([f"k{i}" for i in range(19)])
    assert cache.file_bytes() < full / 10
    assert cache._db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental from now
    cache.close()
