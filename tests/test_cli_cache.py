"""``nuggetbench cache list|size|clear [--older-than]`` (issue 18, point 11)."""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.errors import InputError
from nuggetbench.store import Artifact, cache_entries, cache_root, parse_age


def _fill():
    """Two bm25 artifacts (one old), a run-cache folder, the LLM SQLite file, a hub cache."""
    made = []
    for label, params in (("old", {"a": 1}), ("new", {"a": 2})):
        art = Artifact("bm25", params, label=label)
        with art.build() as (folder, _):
            (folder / "data.npy").write_bytes(b"x" * 1000)
        made.append(art.path)
    old = time.time() - 40 * 86400
    for p in [made[0], *made[0].rglob("*")]:
        os.utime(p, (old, old))
    runs = cache_root() / "runs" / "bm25-0123456789abcdef01234567"
    runs.mkdir(parents=True)
    (runs / "k1000.trec").write_bytes(b"y" * 500)
    (cache_root() / "llm").mkdir()
    (cache_root() / "llm" / "cache.sqlite").write_bytes(b"z" * 300)
    hub = cache_root() / "huggingface" / "datasets" / "x"
    hub.mkdir(parents=True)
    (hub / "part.arrow").write_bytes(b"w" * 200)
    return made


def test_list_size_and_clear():
    made = _fill()
    entries = cache_entries()
    assert {(e.kind, e.path.name) for e in entries} == {
        ("bm25", made[0].name),
        ("bm25", made[1].name),
        ("runs", "bm25-0123456789abcdef01234567"),
        ("llm", "llm"),  # the LLM answers (one SQLite file)
        ("huggingface", "huggingface"),  # a foreign cache is one entry, not every file in it
    }
    listed = json.loads(CliRunner().invoke(cli, ["cache", "list", "--format", "json"]).stdout)
    assert len(listed) == 5
    sizes = json.loads(CliRunner().invoke(cli, ["cache", "size", "--format", "json"]).stdout)
    assert sizes["runs"] == {"entries": 1, "bytes": 500} and sizes["bm25"]["entries"] == 2
    assert sizes["bm25"]["bytes"] > 2000  # the data and each meta.json
    table = CliRunner(env={"COLUMNS": "120"}).invoke(cli, ["cache", "size"]).stdout
    assert "total" in table and "runs" in table
    old = CliRunner().invoke(cli, ["cache", "list", "--older-than", "30d", "--format", "json"])
    assert [e["path"] for e in json.loads(old.stdout)] == [str(made[0])]

    refused = CliRunner().invoke(cli, ["cache", "clear", "bm25"], input="n\n")
    assert refused.exit_code != 0 and made[1].exists()
    cleared = CliRunner().invoke(cli, ["cache", "clear", "bm25", "--older-than", "30d", "--yes"])
    assert cleared.exit_code == 0 and "1 cache entries" in cleared.stderr
    assert not made[0].exists() and made[1].exists()
    everything = CliRunner().invoke(cli, ["cache", "clear", "-y"])
    assert everything.exit_code == 0 and cache_entries() == []


def test_ages():
    assert (
        parse_age("30d") == 30 * 86400
        and parse_age("12h") == 43200
        and parse_age("2w") == 14 * 86400
    )
    with pytest.raises(InputError, match="30d"):
        parse_age("thirty days")
    out = CliRunner().invoke(cli, ["cache", "list", "--older-than", "soon"])
    assert out.exit_code != 0
