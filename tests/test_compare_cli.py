"""``nuggetbench compare`` (the click command, invoked directly)."""

from __future__ import annotations

import csv
import io
import json
import pickle

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats as sps

from nuggetbench.cli.compare import compare_command


def _files(tmp_path, n=25, seed=0):
    rng = np.random.default_rng(seed)
    qrels, runs = [], {"a": [], "b": [], "c": []}
    for q in range(n):
        for d in range(6):
            qrels.append(f"{q} 0 d{d} {int(d < 2)}")
        for name, boost in (("a", 0.0), ("b", 2.0), ("c", 0.1)):
            scores = rng.random(6) + boost * (np.arange(6) < 2) * rng.random()
            runs[name] += [f"{q} Q0 d{d} 0 {s:.6f} {name}" for d, s in enumerate(scores)]
    (tmp_path / "qrels.txt").write_text("\n".join(qrels) + "\n")
    for name, lines in runs.items():
        (tmp_path / f"{name}.trec").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_compare_json_and_csv(tmp_path):
    root = _files(tmp_path)
    args = [
        str(root / "qrels.txt"),
        str(root / "a.trec"),
        str(root / "b.trec"),
        str(root / "c.trec"),
        "-m",
        "nDCG@10",
        "-m",
        "AP",
        "--resamples",
        "500",
    ]
    res = CliRunner().invoke(compare_command, [*args, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert (
        data["baseline"] == "a"
        and data["correction"] == "holm"
        and data["systems"] == ["a", "b", "c"]
    )
    diffs = {(d["system"], d["measure"]): d for d in data["differences"]}
    assert diffs[("b", "nDCG@10")]["significant"] is True and diffs[("b", "nDCG@10")]["diff"] > 0
    res = CliRunner().invoke(
        compare_command,
        [*args, "--format", "csv", "--baseline", "c", "--test", "wilcoxon"],
        catch_exceptions=False,
    )
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [r["system"] for r in rows[::2]] == ["c", "a", "b"]


def test_compare_against_direct_scipy(tmp_path):
    from nuggetbench.data import read_document_qrels as load_qrels
    from nuggetbench.data import read_run as load_run
    from nuggetbench.measures import score as evaluate

    root = _files(tmp_path, seed=4)
    qrels = load_qrels(root / "qrels.txt")
    a = evaluate(qrels, load_run(root / "a.trec"), ["AP"]).per_query["AP"]
    c = evaluate(qrels, load_run(root / "c.trec"), ["AP"]).per_query["AP"]
    res = CliRunner().invoke(
        compare_command,
        [
            str(root / "qrels.txt"),
            str(root / "a.trec"),
            str(root / "c.trec"),
            "-m",
            "AP",
            "--format",
            "json",
            "--resamples",
            "200",
        ],
    )
    d = json.loads(res.stdout)["differences"][0]
    assert d["p_value"] == pytest.approx(sps.ttest_rel(c, a).pvalue)
    assert d["p_adjusted"] == d["p_value"]  # two runs: no correction by default


def test_compare_birco_rank_files_with_pool_warning(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "birco" / "wtb"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    qrel, corpus = {}, {}
    for q in range(12):
        docs = [f"c{q}_{i}" for i in range(12)]
        corpus.update({d: f"text {d}" for d in docs})
        qrel[f"q{q}"] = {d: int(i == 0) for i, d in enumerate(docs)}
    (folder / "test_set.pickle").write_bytes(
        pickle.dumps({"query": {q: "t" for q in qrel}, "corpus": corpus, "qrel": qrel})
    )
    good = {q: sorted(p, key=lambda d: (d != f"c{q[1:]}_0", rng.random())) for q, p in qrel.items()}
    bad = {
        q: [d for d in rng.permutation(list(p))] + (["intruder"] if q == "q3" else [])
        for q, p in qrel.items()
    }
    (tmp_path / "good.pickle").write_bytes(pickle.dumps(good))
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    monkeypatch.setenv("NUGGETBENCH_DATA", str(tmp_path / "data"))
    res = CliRunner().invoke(
        compare_command,
        [
            "birco/wtb",
            str(tmp_path / "bad.json"),
            str(tmp_path / "good.pickle"),
            "--format",
            "markdown",
            "--resamples",
            "300",
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    assert "'q3': 'intruder'" in res.stderr
    assert "RRmax@10" in res.stdout and "good" in res.stdout and "\u2020" in res.stdout
    good_line = next(line for line in res.stdout.splitlines() if line.startswith("| good"))
    assert (
        "| **100.00**"  # perfect nDCG@10 under the birco profile (x100), the best: bold
        in good_line
        and "[100.00, 100.00]" in good_line
    )
