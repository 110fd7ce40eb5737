"""Per-query comparison (issue 18, point 4): wins/ties/losses and per-query deltas, in the report
and in ``run``'s output (``--baseline NAME``)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.compare import compare


@pytest.mark.parametrize("seed", range(5))
def test_wins_ties_losses_and_deltas_match_the_per_query_values(seed):
    rng = random.Random(seed)
    qids = [f"q{i}" for i in range(rng.randint(5, 40))]
    grid = [0.0, 0.25, 0.5, 1.0]  # coarse values: many exact ties
    values = {name: [rng.choice(grid) for _ in qids] for name in ("a", "b", "c")}
    rep = compare(
        {n: {"m": v} for n, v in values.items()}, query_ids=qids, baseline="b", n_resamples=50
    )
    base = np.array(values["b"])
    for name in ("a", "c"):
        delta = np.array(values[name]) - base
        d = rep.difference(name, "m")
        assert (d.wins, d.ties, d.losses) == (
            int((delta > 0).sum()),
            int((delta == 0).sum()),
            int((delta < 0).sum()),
        )
        assert rep.deltas[name]["m"] == pytest.approx(dict(zip(qids, delta.tolist())))
        assert np.mean(list(rep.deltas[name]["m"].values())) == pytest.approx(d.diff)
    assert "b" not in rep.deltas
    records = rep.delta_records()
    assert len(records) == 2 * len(qids) and set(records[0]) == {
        "system",
        "measure",
        "query_id",
        "delta",
    }
    row = next(r for r in rep.rows() if r["system"] == "a")
    assert (row["wins"], row["ties"], row["losses"]) == (
        rep.difference("a", "m").wins,
        rep.difference("a", "m").ties,
        rep.difference("a", "m").losses,
    )
    wtl = rep.difference("a", "m").wtl
    assert wtl in rep.to_markdown() and wtl in rep.to_latex() and wtl in rep.render("table")
    assert json.loads(rep.to_json())["deltas"]["a"]["m"] == pytest.approx(rep.deltas["a"]["m"])


def test_tiny_float_noise_is_a_tie():
    rep = compare(
        {"x": {"m": [0.3, 0.5]}, "y": {"m": [0.1 + 0.2, 0.6]}}, query_ids=["1", "2"], n_resamples=20
    )
    assert (rep.difference("y", "m").wins, rep.difference("y", "m").ties) == (1, 1)


def test_run_baseline_option(tmp_path):
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "\n".join(
            json.dumps({"_id": f"d{i}", "title": "", "text": f"word{i} common"}) for i in range(6)
        )
    )
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": f"q{i}", "text": f"word{i} common"}) for i in range(4))
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(4))
    )
    args = [
        "run",
        str(folder),
        "-r",
        "bm25",
        "-r",
        "bm25:k1=0.1,b=0.1",
        "-m",
        "RR",
        "--format",
        "json",
    ]
    out = CliRunner().invoke(
        cli, [*args, "--baseline", "bm25:k1=0.1,b=0.1", "-o", str(tmp_path / "o1")]
    )
    assert out.exit_code == 0, out.output
    comparison = json.loads(out.stdout)["comparison"]
    assert comparison["baseline"] == "bm25:k1=0.1,b=0.1"
    assert set(comparison["deltas"]) == {"bm25"} and len(comparison["deltas"]["bm25"]["RR"]) == 4
    diff = comparison["differences"][0]
    assert diff["wins"] + diff["ties"] + diff["losses"] == 4
    by_position = CliRunner().invoke(cli, [*args, "--baseline", "2", "-o", str(tmp_path / "o2")])
    assert json.loads(by_position.stdout)["comparison"]["baseline"] == "bm25:k1=0.1,b=0.1"
    saved = json.loads((tmp_path / "o2" / "results.json").read_text())
    assert (
        saved["baseline"] == "bm25:k1=0.1,b=0.1"
        and saved["comparison"]["baseline"] == saved["baseline"]
    )
    bad = CliRunner().invoke(cli, [*args, "--baseline", "bm26", "-o", str(tmp_path / "o3")])
    assert bad.exit_code != 0 and "bm25" in str(bad.exception)
    assert not (tmp_path / "o3" / "runs").exists() or not any((tmp_path / "o3" / "runs").iterdir())
    table = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [*args[:-2], "-o", str(tmp_path / "o4")])
    assert "W/T/L" in table.stdout
