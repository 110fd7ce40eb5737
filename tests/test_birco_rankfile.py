"""Rank files {qid: [doc, ...]} from restricted pickles / JSON, and checks against candidate pools."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from nuggetbench.data.formats.rankfile import (
    check_pools,
    filter_to_pools,
    is_rank_file,
    read_rank_file,
)
from nuggetbench.errors import DuplicateError, FormatError, InputError


class _Evil:
    def __reduce__(self):
        return (exec, ("raise SystemExit('executed')",))


def test_pickle_and_json_rank_files_keep_order(tmp_path):
    ranks = {np.str_("q1"): ["d3", "d1", "d2"], "q2": [np.str_("d9"), "d8"]}
    p = tmp_path / "system.pickle"
    p.write_bytes(pickle.dumps(ranks, protocol=4))
    j = tmp_path / "system.json"
    j.write_text(json.dumps({"q1": ["d3", "d1", "d2"], "q2": ["d9", "d8"]}))
    for path in (p, j):
        assert is_rank_file(path)
        run = read_rank_file(path)
        assert run.name == "system"
        assert run.doc_ids("q1") == ["d3", "d1", "d2"]
        assert run.doc_ids("q2") == ["d9", "d8"]
        assert [s for _, s in run["q1"]] == [3.0, 2.0, 1.0]
    assert read_rank_file(p) == read_rank_file(j)


def test_scored_json_run_is_not_a_rank_file(tmp_path):
    j = tmp_path / "run.json"
    j.write_text(json.dumps({"q1": {"d1": 1.0}}))
    assert not is_rank_file(j)
    with pytest.raises(FormatError, match="load_run"):
        read_rank_file(j)


def test_malicious_rank_pickle_is_refused(tmp_path):
    p = tmp_path / "evil.pickle"
    p.write_bytes(pickle.dumps({"q1": ["d1"], "x": _Evil()}))
    with pytest.raises(FormatError, match="exec"):
        read_rank_file(p)


def test_bad_shapes_and_duplicates(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(["d1", "d2"]))
    with pytest.raises(FormatError, match="query_id"):
        read_rank_file(p)
    p.write_text(json.dumps({"q1": "d1"}))
    with pytest.raises(FormatError, match="'q1'"):
        read_rank_file(p)
    p.write_text(json.dumps({"q1": ["d1", "d2", "d1"]}))
    with pytest.raises(
        DuplicateError, match="d1"
    ):  # issue 12: rank files keep the first by default
        read_rank_file(p, duplicates="error")
    assert read_rank_file(p).doc_ids("q1") == ["d1", "d2"]
    with pytest.raises(InputError, match="does not exist"):
        read_rank_file(tmp_path / "missing.pickle")


def test_documents_outside_the_pool_are_reported(tmp_path):
    p = tmp_path / "ranks.json"
    p.write_text(json.dumps({"q1": ["d1", "zz", "d2"], "q2": ["d5"], "q3": ["d7"]}))
    run = read_rank_file(p)
    pools = {"q1": ["d1", "d2", "d3"], "q2": {"d4", "d5"}}
    with pytest.raises(InputError) as err:
        check_pools(run, pools, source=str(p))
    msg = str(err.value)
    assert "'q1': 'zz'" in msg and str(p) in msg
    check = check_pools(run, pools, on_outside="report")
    assert not check.ok and check.outside == {"q1": ["zz"]} and check.n_outside == 1
    assert check.unranked == {"q1": 1, "q2": 1}
    assert check.without_pool == ["q3"]
    kept = filter_to_pools(run, pools)
    assert kept.doc_ids("q1") == ["d1", "d2"] and kept.doc_ids("q3") == []
    ok = check_pools(kept, pools, on_outside="report")
    assert ok.ok


def test_published_birco_rank_files_read(shared_data):
    path = shared_data / "birco" / "wtb" / "ranks" / "e5_rank.pickle"
    if not path.exists():
        pytest.skip("no BIRCO rank files")
    run = read_rank_file(path)
    assert len(run) == 100 and set(run.lengths().tolist()) <= {50, 51}


def test_rank_file_sniffing(tmp_path):
    p = tmp_path / "r.json"
    p.write_text('  {"q:1 [x]" :\n ["d1", "d2"]}')
    assert is_rank_file(p)
    p.write_text('{"q:1": {"d1": 2.0}}')
    assert not is_rank_file(p)
    p.write_text("1 Q0 d1 1 2.0 run\n")
    assert not is_rank_file(p)
