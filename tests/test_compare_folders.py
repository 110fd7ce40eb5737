"""``nuggetbench compare OUT_A OUT_B``: output folders compared with paired tests, each scored with
the dataset options it records; ``compare`` reads runs as ``evaluate`` does; ``report`` reuses a
folder's recorded options (issue 30, items 2, 3, 4, 11). Synthetic data: always run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nuggetbench.cli.compare import compare_command
from nuggetbench.datasets import load_dataset
from nuggetbench.evaluation import evaluate_dataset
from nuggetbench.experiment import run_experiment
from nuggetbench.report import compare_folders, load_inputs
from report_fixtures import beir_folder, fastbook_root


@pytest.fixture
def chunkings(tmp_path, monkeypatch):
    """Two output folders of one bm25 run on a synthetic fastbook: A with the default chunker,
    B with ``chunker=paragraphs`` (other passages, so other ids and judgments)."""
    monkeypatch.setenv("NUGGETBENCH_DATA", str(fastbook_root(tmp_path)))
    monkeypatch.setenv("NUGGETBENCH_HOME", str(tmp_path / "home"))
    for name, options in (("A", {}), ("B", {"chunker": "paragraphs"})):
        ds = load_dataset("fastbook", **options)
        run_experiment(ds, ["bm25"], outdir=tmp_path / name, cache_runs=False)
    return tmp_path


def _means(folder) -> dict[str, float]:
    return json.loads((folder / "results.json").read_text())["systems"]["bm25"]["means"]


def test_folders_record_their_dataset_options(chunkings):
    prov_b = json.loads((chunkings / "B" / "results.json").read_text())["provenance"]
    prov_a = json.loads((chunkings / "A" / "results.json").read_text())["provenance"]
    assert prov_b["dataset_options"] == {"chunker": "paragraphs"}
    assert prov_a["dataset_options"] == {}
    assert prov_a["dataset_fingerprint"] != prov_b["dataset_fingerprint"]


def test_compare_two_chunkings_by_folder(chunkings):
    a, b = chunkings / "A", chunkings / "B"
    res = CliRunner().invoke(
        compare_command, [str(a), str(b), "--format", "json", "--resamples", "200"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["systems"] == ["A/bm25", "B/bm25"] and data["baseline"] == "A/bm25"
    means = {(e["system"], e["measure"]): e["mean"] for e in data["estimates"]}
    # each folder's run scored on its own chunking: the means are the ones `run` recorded
    for folder in (a, b):
        for measure, value in _means(folder).items():
            assert means[(f"{folder.name}/bm25", measure)] == pytest.approx(value)
    diffs = {d["measure"]: d["diff"] for d in data["differences"]}
    for measure, value in _means(b).items():
        assert diffs[measure] == pytest.approx(value - _means(a)[measure])
    assert any(v > 0 for v in _means(b).values())  # B is not scored as all zeros


def test_compare_folders_baseline_by_system_name_or_position(chunkings):
    folders = [chunkings / "A", chunkings / "B"]
    assert compare_folders(folders, baseline="B/bm25", n_resamples=50).baseline == "B/bm25"
    assert compare_folders(folders, baseline="2", n_resamples=50).baseline == "B/bm25"
    with pytest.raises(Exception, match="several folders"):
        compare_folders(folders, baseline="bm25")


def test_run_file_of_another_chunking_is_refused_naming_the_folder_form(chunkings):
    a, b = chunkings / "A", chunkings / "B"
    res = CliRunner().invoke(
        compare_command, ["fastbook", str(a / "runs" / "bm25.trec"), str(b / "runs" / "bm25.trec")]
    )
    assert res.exit_code != 0
    assert "nuggetbench compare" in str(res.exception) and "chunker" in str(res.exception)
    # with B's options, B's run file is accepted
    b_run = str(b / "runs" / "bm25.trec")
    args = ["fastbook", "-O", "chunker=paragraphs", b_run, b_run, "--resamples", "50"]
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code == 0, res.output


def test_folder_forms_do_not_mix(chunkings):
    a, b = chunkings / "A", chunkings / "B"
    res = CliRunner().invoke(compare_command, ["fastbook", str(a), str(b)])
    assert res.exit_code != 0 and "give only folders" in str(res.exception)
    res = CliRunner().invoke(compare_command, [str(a), str(b / "runs" / "bm25.trec")])
    assert res.exit_code != 0 and "not an output folder" in str(res.exception)
    res = CliRunner().invoke(compare_command, [str(a), str(b), "-O", "chunker=paragraphs"])
    assert res.exit_code != 0 and "not for output folders" in str(res.exception)


def test_folders_on_other_data_are_refused(chunkings, tmp_path):
    beir = beir_folder(tmp_path / "other")
    run_experiment(str(beir), ["bm25"], outdir=tmp_path / "C", cache_runs=False)
    with pytest.raises(Exception, match="not on the same data: dataset"):
        compare_folders([chunkings / "A", tmp_path / "C"])


def test_report_inputs_reuse_the_recorded_options(chunkings):
    inputs = load_inputs(chunkings / "B")  # no -O chunker=paragraphs typed again
    assert inputs.dataset.options == {"chunker": "paragraphs"}
    with pytest.raises(Exception, match="made with -O chunker=paragraphs"):
        load_inputs(chunkings / "B", options={"chunker": "paragraphs:group=3,headers=true"})


# --- compare reads runs as evaluate does --------------------------------------------------------


def _qrels_and_runs(tmp_path):
    qrels = [f"{q} 0 d{d} {int(d < 2)}" for q in range(6) for d in range(4)]
    (tmp_path / "qrels.txt").write_text("\n".join(qrels) + "\n")
    orders = {"a": [[0, 1, 2, 3]] * 6, "b": [[3, 2, 1, 0], [0, 2, 1, 3], [2, 0, 3, 1]] * 2}
    for name, per_query in orders.items():
        lines = [
            f"{q} Q0 d{d} {r + 1} {10 - r} {name} trailing words"
            for q, order in enumerate(per_query)
            for r, d in enumerate(order)
        ]
        (tmp_path / f"{name}.trec").write_text("\n".join(lines) + "\n")
    return [str(tmp_path / f) for f in ("qrels.txt", "a.trec", "b.trec")]


def test_compare_ignore_trailing(tmp_path):
    args = _qrels_and_runs(tmp_path)
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code != 0 and "--ignore-trailing" in str(res.exception)
    res = CliRunner().invoke(
        compare_command, [*args, "--ignore-trailing", "--format", "json", "--resamples", "50"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["systems"] == ["a", "b"]


def test_compare_duplicates_first(tmp_path):
    qrels, a, b = _qrels_and_runs(tmp_path)
    text = Path(a).read_text()
    Path(a).write_text(text + text.splitlines()[0] + "\n")  # one (query, doc) pair twice
    args = [qrels, a, b, "--ignore-trailing", "--resamples", "50"]
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code != 0 and "duplicate" in str(res.exception).lower()
    res = CliRunner().invoke(compare_command, [*args, "--duplicates", "first", "--format", "json"])
    assert res.exit_code == 0, res.output


def test_compare_keeps_the_rank_column_for_ndeval(tmp_path):
    """Diversity qrels (topic subtopic doc grade) and runs whose rank column disagrees with
    their scores: ``compare --profile 'ndeval -c'`` scores each run as ``evaluate`` does."""
    qrels = tmp_path / "div.ndeval.qrels"
    lines = [f"{q} {s} d{d} 1" for q in range(5) for s in range(2) for d in range(4) if (d + s) % 2]
    qrels.write_text("\n".join(lines) + "\n")
    runs = []
    for name, shift in (("x", 0), ("y", 1)):
        path = tmp_path / f"{name}.trec"
        rows = [
            f"{q} Q0 d{(r + shift + q) % 4} {r + 1} {(r * 7) % 4} {name}"  # scores out of rank order
            for q in range(5)
            for r in range(4)
        ]
        path.write_text("\n".join(rows) + "\n")
        runs.append(str(path))
    args = [str(qrels), *runs, "--profile", "ndeval -c", "-m", "alpha_nDCG@20"]
    res = CliRunner().invoke(compare_command, [*args, "--format", "json", "--resamples", "50"])
    assert res.exit_code == 0, res.output
    means = {e["system"]: e["mean"] for e in json.loads(res.stdout)["estimates"]}
    for name, path in zip("xy", runs):
        ev = evaluate_dataset(str(qrels), path, ["alpha_nDCG@20"], "ndeval -c")
        assert means[name] == pytest.approx(ev.results.means["alpha_nDCG@20"])


def test_evaluate_refuses_a_run_file_of_another_chunking(chunkings):
    run = chunkings / "B" / "runs" / "bm25.trec"
    with pytest.raises(Exception, match="-O chunker=paragraphs"):
        evaluate_dataset("fastbook", run)
    ev = evaluate_dataset("fastbook", run, options={"chunker": "paragraphs"})
    assert ev.results.means == pytest.approx(_means(chunkings / "B"))


def test_append_of_another_chunking_points_at_compare(chunkings):
    ds = load_dataset("fastbook", chunker="paragraphs")
    with pytest.raises(Exception, match=r"chunker.*nuggetbench compare"):
        run_experiment(
            ds, ["bm25:k1=0.9"], outdir=chunkings / "A", existing="append", cache_runs=False
        )
