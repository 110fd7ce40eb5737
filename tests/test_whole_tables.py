"""Tables that never hide anything, one vocabulary, paper tables (issue 30, items 1 and 12-17).

Every check runs at 80 and 200 columns: every header and value appears, no line is longer than
the width, no id or label is split."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from nuggetbench.cli import cli
from nuggetbench.cli._tables import Grid, layout, table_width
from nuggetbench.compare import compare, parse_cells
from nuggetbench.errors import SpecError, UnknownNameError

WIDTHS = [80, 200]


@pytest.fixture()
def files(tmp_path):
    """A qrels file and two runs over queries with long ids (``clinical-trial-2014-1``...)."""
    qids = [f"clinical-trial-2014-{i}" for i in range(1, 6)]
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 d{j} {j % 3}\n" for q in qids for j in range(8)))
    for name, shift in (("one", 0), ("two", 3)):
        lines = [
            f"{q} Q0 d{(j + shift + i) % 10} {j + 1} {20 - j} {name}\n"
            for i, q in enumerate(qids)
            for j in range(10)
        ]
        (tmp_path / f"{name}.trec").write_text("".join(lines))
    return qrels, tmp_path / "one.trec", tmp_path / "two.trec", qids


def _invoke(width: int, args: list[str]):
    out = CliRunner(env={"COLUMNS": str(width)}).invoke(cli, args, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out


def _fits(text: str, width: int) -> None:
    lines = text.splitlines()
    assert lines and max(len(line) for line in lines) <= width, max(lines, key=len)


# --- item 1: no zero-width column -------------------------------------------------------------
@pytest.mark.parametrize("width", WIDTHS)
def test_official_measures_all_shown(files, width):
    qrels, one, _, _ = files
    js = json.loads(
        _invoke(
            width, ["evaluate", str(qrels), str(one), "-m", "official", "--format", "json"]
        ).stdout
    )
    text = _invoke(width, ["evaluate", str(qrels), str(one), "-m", "official"]).stdout
    _fits(text, width)
    cut = js.pop("beyond_depth")["measures"]  # shown with the depth mark
    assert js.pop("averaged")["queries"] == 5
    assert len(js) > 20
    for measure, mean in js.items():  # every header whole, with its value on its line
        measure += "\u00a7" * (measure in cut)
        line = next((ln for ln in text.splitlines() if f" {measure} " in ln), None)
        if line is None:  # the wide table (200 columns): header and value in the same column
            assert re.search(rf"[┃│] +{re.escape(measure)} +[┃│]", text), measure
        else:
            digits = 0 if measure.startswith("num_") else 4
            assert f"{mean:.{digits}f}" in line, (measure, line)
    assert "…" not in text


@pytest.mark.parametrize("width", WIDTHS)
def test_per_query_ids_never_split(files, width):
    qrels, one, _, qids = files
    args = ["evaluate", str(qrels), str(one), "-m", "official", "-q"]
    text = _invoke(width, args).stdout
    _fits(text, width)
    for q in qids:
        assert q in text  # whole, on one line
    assert "clinical-trial-201\n" not in text and "…" not in text


def test_layout_turns_then_splits():
    wide = Grid("", [f"measure_{i:02d}" for i in range(20)], {"mean": ["0.1234"] * 20})
    assert table_width(wide.widths()) > 80
    (turned,) = layout(wide, 80)
    assert turned.columns == ["mean"] and list(turned.rows) == wide.columns
    many = Grid("q", wide.columns, {f"query-{i}": ["0.1234"] * 20 for i in range(30)})
    parts = layout(many, 80)
    assert len(parts) > 1 and sum(len(p.columns) for p in parts) == 20
    assert all(table_width(p.widths()) <= 80 for p in parts)
    assert all(list(p.rows) == list(many.rows) for p in parts)  # each repeats the labels
    small = Grid("q", ["a", "b"], {"x": ["1", "2"]})
    assert layout(small, 80) == [small]


# --- item 15: labels abbreviated with a legend, never split -------------------------------------
@pytest.mark.parametrize("width", WIDTHS)
def test_long_labels_abbreviated_with_legend(width):
    from rich.console import Console

    from nuggetbench.cli._tables import print_grid

    long = "bm25:preset=lucene-flat,k1=0.9,b=0.4,stemmer=porter,stopwords=none"
    rows = {long: ["0.5000", "0.2500"], "bm25:preset=lucene-flat": ["0.1000", "0.2000"]}
    console = Console(width=width, record=True, color_system=None)
    print_grid(console, "t", Grid("system", ["nDCG@10", "AP"], rows))
    text = console.export_text()
    _fits(text, width)
    assert "bm25:preset=lucene-flat " in text  # whole, never "lucene-fl" / "at"
    legend = " ".join(text.split("└")[1].split("\n", 1)[1].split())  # the lines under the table
    assert re.fullmatch(r"bm25:\S*…\S* = " + re.escape(long), legend), legend
    assert long in text  # whole, on a line of its own when it is long


# --- item 12: measures and retrievers as plain lists ---------------------------------------------
@pytest.mark.parametrize("width", WIDTHS)
def test_measures_listing_readable(width):
    from nuggetbench.measures import PROFILES, all_family_names

    text = _invoke(width, ["measures"]).stdout
    _fits(text, width)
    heads = [line for line in text.splitlines() if line and not line.startswith(" ")]
    for family in all_family_names():
        assert any(h.split(" ")[0] == family for h in heads), family
    for profile in PROFILES:
        assert f"  {profile}" in text
    # allowed values listed (vocab added ir_measures' log2; the list may wrap at 80 columns)
    assert "one of linear, exp-log2, log2" in " ".join(text.split())
    ndcg = _invoke(width, ["measures", "ndcg"]).stdout
    assert "nDCG (also" in ndcg and "AP (also" not in ndcg
    bad = CliRunner().invoke(cli, ["measures", "nosuchthing"])
    assert bad.exit_code == 2 and "no measure family" in bad.output


@pytest.mark.parametrize("width", WIDTHS)
def test_retrievers_listing_readable(width):
    from nuggetbench.retrieval.bm25.retriever import BM25

    text = _invoke(width, ["retrievers"]).stdout
    _fits(text, width)
    flat = " ".join(text.split())
    for preset, options in BM25.PRESETS.items():
        assert f"{preset} (" in flat and all(f"{k}=" in flat for k in options)
        assert " ".join(BM25.PRESET_NOTES[preset].split()[:3]) in flat  # what it reproduces
    pointwise = flat.split("llm_pointwise(OPTION=VALUE, ...)")[1].split("    ")[0]
    assert "see the" not in pointwise
    only = _invoke(width, ["retrievers", "bm25"]).stdout
    assert only.startswith("bm25:") and "dense:" not in only and "preset=" in only


# --- item 13: a spec error shows the right spelling ---------------------------------------------
def test_comma_after_prefix_suggests_colon():
    from nuggetbench.retrieval import parse_retriever

    with pytest.raises(SpecError, match="write 'bm25:name=x'"):
        parse_retriever("bm25,name=x")
    out = CliRunner().invoke(cli, ["retrievers"])
    assert "bm25:name=x" in out.stdout


# --- item 16: one vocabulary ----------------------------------------------------------------------
def test_evaluate_and_compare_use_the_same_names(files):
    qrels, one, two, _ = files
    measures = ["-m", "P.5,10", "-m", "map", "-m", "ndcg_cut_10"]
    ev = json.loads(
        _invoke(200, ["evaluate", str(qrels), str(one), *measures, "--format", "json"]).stdout
    )
    ev = {k: v for k, v in ev.items() if k not in ("averaged", "beyond_depth")}
    cmp_args = ["compare", str(qrels), str(one), str(two), *measures, "--resamples", "50"]
    cmp = json.loads(_invoke(200, [*cmp_args, "--format", "json"]).stdout)
    assert list(ev) == cmp["measures"] == ["map", "P_5", "P_10", "ndcg_cut_10"]
    for fmt in ("markdown", "latex", "table"):
        text = _invoke(200, [*cmp_args, "--format", fmt]).stdout.replace("\\_", "_")
        assert all(m in text for m in ev) and "P@5" not in text and "nDCG@10" not in text
    official = json.loads(
        _invoke(
            200, ["evaluate", str(qrels), str(one), "-m", "official", "--format", "json"]
        ).stdout
    )
    back = _invoke(200, ["evaluate", str(qrels), str(one), "-m", "iprec_at_recall_0.10"]).stdout
    assert f"{official['iprec_at_recall_0.10']:.4f}" in back  # a printed name reads back


def test_python_tables_share_one_long_shape():
    from nuggetbench.data import Qrels, Run
    from nuggetbench.measures import score

    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}})
    run = Run.from_dict({"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 2.0, "b": 1.0}})
    res = score(qrels, run, ["RR", "P@1"])
    frame = res.to_pandas()
    assert list(frame.columns) == ["query_id", "measure", "value"]
    assert frame.set_index(["query_id", "measure"]).value.to_dict() == {
        ("q1", "RR"): 1.0,
        ("q2", "RR"): 0.5,
        ("q1", "P@1"): 1.0,
        ("q2", "P@1"): 0.0,
    }
    assert list(res.to_pandas(wide=True).columns) == ["RR", "P@1"]
    rep = compare({"a": {"RR": [1.0, 0.5]}, "b": {"RR": [0.5, 0.5]}}, query_ids=["q1", "q2"])
    assert list(rep.delta_records()[0]) == ["system", "query_id", "measure", "delta"]


# --- item 14: paper tables ------------------------------------------------------------------------
def _report():
    qids = [f"q{i}" for i in range(12)]
    return compare(
        {
            "bm25": {"nDCG@10": [0.1] * 12, "AP": [0.6] * 12},
            "dense": {"nDCG@10": [0.5 + i / 100 for i in range(12)], "AP": [0.2] * 12},
        },
        query_ids=qids,
        n_resamples=200,
    )


def test_cells_choose_what_a_cell_holds():
    rep = _report()
    tex = rep.to_latex(cells="mean,dagger")
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert "booktabs" in tex and r"\scriptsize" not in tex and "W/T/L 12" not in tex
    assert r"dense & \textbf{0.5550}$^{\dagger}$ & 0.2000" in tex
    assert r"bm25 (baseline) & 0.1000 & \textbf{0.6000}" in tex
    md = rep.to_markdown(cells=["mean", "p"])
    line = next(ln for ln in md.splitlines() if ln.startswith("| dense"))
    assert "**0.5550**" in line and "(p<0.001)" in line and "[" not in line and "†" not in line
    full = rep.to_latex()
    assert r"\scriptsize" in full and "W/T/L 12/0/0" in full  # every part by default
    assert parse_cells("dagger") == ("mean", "dagger")
    with pytest.raises(UnknownNameError, match="'ci'"):
        parse_cells("mean,cis")


def test_cells_option_on_compare(files):
    qrels, one, two, _ = files
    args = ["compare", str(qrels), str(one), str(two), "-m", "AP", "--resamples", "50"]
    tex = _invoke(80, [*args, "--format", "latex", "--cells", "mean,dagger"]).stdout
    assert "W/T/L" not in tex.split(r"\bottomrule")[0] and r"\textbf{" in tex
    bad = CliRunner().invoke(cli, [*args, "--format", "latex", "--cells", "mean,wlt"])
    assert bad.exit_code == 2 and "wtl" in bad.output


# --- machine formats keep full precision -----------------------------------------------------------
def test_tsv_full_precision(files):
    qrels, one, _, _ = files
    js = json.loads(
        _invoke(80, ["evaluate", str(qrels), str(one), "-m", "AP", "--format", "json"]).stdout
    )
    tsv = _invoke(80, ["evaluate", str(qrels), str(one), "-m", "AP", "--format", "tsv"]).stdout
    assert float(tsv.split("\t")[2]) == js["AP"]


# --- item 17: the header and the coverage line agree ------------------------------------------------
@pytest.mark.realdata
def test_fastbook_overlap_counts_the_evaluated_queries(shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    notebooks = sorted(str(p) for p in (shared_data / "fastbook" / "notebooks").glob("*.ipynb"))
    corpus = tmp_path / "c.jsonl"
    _invoke(200, ["chunk", *notebooks[:-1], "-o", str(corpus)])  # one chapter left out
    _invoke(200, ["run", "fastbook", "-r", "bm25", "-o", str(tmp_path / "o")])
    run = tmp_path / "o" / "runs" / "bm25.trec"
    out = _invoke(200, ["evaluate", "fastbook", str(run), "--corpus", str(corpus)])
    n = int(re.search(r"\((\d+) queries, profile 'fastbook'\)", out.stdout).group(1))
    line = " ".join(out.stderr.split())
    found = re.search(r"(\d+) queries evaluated .*?: (\d+) have judgments, (\d+) have none", line)
    assert found, line
    assert int(found.group(1)) == n == int(found.group(2)) + int(found.group(3))
    assert int(found.group(3)) > 0 and "(ignored)" not in line
