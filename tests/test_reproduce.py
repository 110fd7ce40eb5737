"""``nuggetbench reproduce`` and its recipes on synthetic data: schema and validation, verdicts,
skips with their reasons, the output folder, the page, the formats, run files fetched like a
dataset. Expected values come from pytrec_eval on the same rankings (the reference tool), never
from nuggetbench itself."""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from nuggetbench.cli import main
from nuggetbench.errors import FormatError
from nuggetbench.experiment import Experiment
from nuggetbench.reproduce import (
    REPRODUCED,
    ValueCheck,
    parse_recipe,
    read_recipe,
    reproduce,
)
from nuggetbench.reproduce.commands import substitute_models

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_fixtures import beir_folder  # noqa: E402

pytrec_eval = pytest.importorskip("pytrec_eval")

# The schema's own example (RECIPE_SCHEMA.md, agreed between the helpers): accepted unchanged.
SCHEMA_EXAMPLE = '''
schema = 1                       # required, integer
name = "beir-bm25-flat"          # required; [a-z0-9-]+, equals the file stem for shipped recipes
title = "BEIR: BM25 flat (Pyserini 2CR)"
description = """One paragraph: what is reproduced and how."""

[source]                         # where the expected values come from (required)
kind = "tool"                    # "tool" | "paper" | "results" (published results file/sheet)
name = "Pyserini two-click reproductions"   # tool or paper name
version = "pyserini 0.22.1"      # tool version / paper version (arXiv v2...) / commit
file = "pyserini/resources/beir.yaml"       # file within the tool, or table within the paper
table = ""                       # for papers: "Table 3"
url = "https://github.com/castorini/pyserini/blob/<commit>/pyserini/2cr/beir.yaml"
precision = 4
citation = "Lin et al., SIGIR 2021"   # optional free text

[needs]                          # what a run needs (all optional)
extras = ["lucene"]              # nuggetbench extras: fast, dense, lucene, llm, irds, ...
gpu = false                      # true when it is impractical without a GPU
llm = false                      # true when it needs an OpenAI-compatible endpoint
download = "1.2 GB"              # human-readable size of the data to download
runtime = "10 min on 2 cores"    # rough run time
notes = ""                       # anything else (licence to accept, etc.)

profile = "beir"                 # default measure profile for the recipe (optional)
measures = ["nDCG@10", "R@100"]  # default measures for all conditions

[[datasets]]                     # one table per dataset (required, >= 1)
id = "beir/scifact"              # any nuggetbench dataset id, irds:... included
options = { }                    # loader options, as -O key=value (optional)
label = "SciFact"                # short display name (optional)

[[conditions]]                   # one table per condition (required, >= 1)
name = "bm25-flat"               # [a-z0-9._-]+
title = "BM25 flat (k1=0.9, b=0.4)"
retriever = "bm25:preset=lucene-flat"   # a retriever spec or pipeline as `run -r` takes it
measures = ["nDCG@10"]           # optional override of the recipe's measures
profile = "beir"                 # optional override
datasets = ["beir/scifact"]      # optional: subset of the recipe's datasets this condition runs on
needs = { extras = ["dense"], gpu = false }   # optional override/extension of [needs]

[[expected]]
condition = "bm25-flat"
dataset = "beir/scifact"
values = { "nDCG@10" = 0.6789 }
notes = { "nDCG@10" = "why this value departs from the source, if it does" }   # optional
tolerance = { }                  # optional per-measure absolute tolerance override
'''


def test_the_agreed_schema_example_is_accepted_unchanged():
    r = parse_recipe(SCHEMA_EXAMPLE)
    assert r.name == "beir-bm25-flat" and r.profile == "beir"
    assert r.measures == ("nDCG@10", "R@100")  # written after [needs], still the recipe's
    cond = r.condition("bm25-flat")
    assert cond.measures == ("nDCG@10",) and cond.needs.extras == ("lucene", "dense")
    assert r.expected[0].values == {"nDCG@10": 0.6789}
    assert r.default_tolerance() == pytest.approx(0.00005)


# --- a synthetic BEIR folder and its reference values ---------------------------------------
@pytest.fixture(scope="module")
def beir(tmp_path_factory) -> Path:
    return beir_folder(tmp_path_factory.mktemp("data"), n_queries=12, n_docs=80)


def _reference(folder: Path, run: dict) -> dict[str, float]:
    """nDCG@10 and R@20 means by pytrec_eval (every judged query counted, as trec_eval -c)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        qrels.setdefault(q, {})[d] = int(g)
    per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.20"}).evaluate(run)
    mean = {
        m: sum(per.get(q, {}).get(m, 0.0) for q in qrels) / len(qrels)
        for m in ("ndcg_cut_10", "recall_20")
    }
    return {"nDCG@10": mean["ndcg_cut_10"], "R@20": mean["recall_20"]}


@pytest.fixture(scope="module")
def expected(beir) -> dict[str, float]:
    """The reference values of plain BM25 on the folder, rounded to 4 decimals as printed."""
    from nuggetbench.datasets import load_dataset
    from nuggetbench.retrieval import parse_retriever

    ds = load_dataset(str(beir))
    run = ds.postprocess_run(parse_retriever("bm25").index(ds.corpus).search(ds.queries, 100))
    return {m: round(v, 4) for m, v in _reference(beir, run.to_dict()).items()}


def _recipe_text(dataset: Path, values: dict[str, float], **more: str) -> str:
    pairs = ", ".join(f'"{m}" = {v!r}' for m, v in values.items())
    return f'''
schema = 1
name = "{more.get("name", "synthetic")}"
title = "BM25 on a synthetic folder"
description = "Plain BM25 against pytrec_eval's values."
profile = "trec_eval -c"
measures = ["nDCG@10", "R@20"]
depth = 100
{more.get("top", "")}

[source]
kind = "results"
name = "pytrec_eval on the same run"
url = "https://github.com/cvangysel/pytrec_eval"
precision = 4

[needs]
{more.get("needs", "")}

[[datasets]]
id = "{dataset}"
label = "synthetic"

[[conditions]]
name = "bm25"
title = "BM25 defaults"
retriever = "bm25"
{more.get("condition", "")}

[[expected]]
condition = "bm25"
dataset = "{dataset}"
values = {{ {pairs} }}
{more.get("expected", "")}
'''


def _write(tmp_path: Path, text: str, name: str = "recipe.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture()
def nb(capsys):
    """Run the command line as the console script does (errors: one line, exit 2)."""

    def run(args: list[str], code: int | None = 0):
        try:
            main([str(a) for a in args])
            got = 0
        except SystemExit as exc:
            got = exc.code if isinstance(exc.code, int) else 1
        out = capsys.readouterr()
        result = SimpleNamespace(
            exit_code=got, stdout=out.out, stderr=out.err, output=out.out + out.err
        )
        if code is not None:
            assert got == code, result.output
        return result

    return run


def test_a_recipe_that_reproduces_exits_0_with_its_table(nb, tmp_path, beir, expected):
    path = _write(tmp_path, _recipe_text(beir, expected))
    out = nb(["reproduce", str(path)]).stdout
    lines = out.strip().splitlines()
    assert lines[-1] == "2 of 2 values reproduced, 0 skipped"
    rows = [ln for ln in lines if ln.startswith(str(beir))]
    assert len(rows) == 2 and all(ln.endswith("OK") for ln in rows)
    assert any(ln.startswith("wall time ") for ln in lines)


def test_one_changed_value_exits_1_and_is_marked(nb, tmp_path, beir, expected):
    changed = {**expected, "R@20": round(expected["R@20"] + 0.0002, 4)}
    path = _write(tmp_path, _recipe_text(beir, changed))
    out = nb(["reproduce", str(path)], code=1).stdout
    rows = {ln.split()[1]: ln for ln in out.splitlines() if ln.startswith(str(beir))}
    assert rows["R@20"].endswith("FAIL") and rows["nDCG@10"].endswith("OK")
    _, _, shown, obtained, difference, _ = rows["R@20"].split()
    assert float(shown) == changed["R@20"]
    assert float(difference) == pytest.approx(float(obtained) - changed["R@20"], abs=1e-6)
    assert len(obtained.split(".")[1]) == 6  # two decimals more than the source prints
    assert out.strip().splitlines()[-1] == "1 of 2 values reproduced, 0 skipped"


def test_the_tolerance_is_half_a_unit_of_the_printed_precision():
    check = ValueCheck("c", "d", "m", 0.6789, 0.00005, 4)
    assert check.judge(0.67885).verdict == REPRODUCED
    assert check.judge(0.678949).verdict == REPRODUCED
    assert check.judge(0.67884).verdict != REPRODUCED
    assert check.judge(0.67896).verdict != REPRODUCED


def test_dry_run_prints_commands_whose_numbers_are_the_same(
    nb, tmp_path, beir, expected, monkeypatch
):
    path = _write(tmp_path, _recipe_text(beir, expected))
    out = nb(["reproduce", str(path), "--dry-run"]).stdout
    commands = [ln for ln in out.splitlines() if ln.startswith("nuggetbench ")]
    assert commands == [
        f"nuggetbench run {beir} -r bm25 -m nDCG@10 -m R@20 --profile 'trec_eval -c' -k 100"
    ]
    args = shlex.split(commands[0])[1:] + ["--format", "json", "-o", str(tmp_path / "run")]
    means = json.loads(nb(args).stdout)["results"]["bm25"]
    assert {m: round(v, 4) for m, v in means.items()} == expected
    assert "wall time" not in out  # nothing ran


def test_output_folder_is_a_run_folder_with_reproduction_json(nb, tmp_path, beir, expected):
    path = _write(tmp_path, _recipe_text(beir, expected))
    out = tmp_path / "out"
    nb(["reproduce", str(path), "-o", str(out)])
    data = json.loads((out / "synthetic" / "reproduction.json").read_text())
    assert data["summary"]["line"] == "2 of 2 values reproduced, 0 skipped"
    assert {v["measure"]: v["verdict"] for v in data["values"]} == {
        "nDCG@10": "reproduced",
        "R@20": "reproduced",
    }
    assert data["datasets"][str(beir)]["fingerprint"] and data["versions"]["nuggetbench"]
    assert data["machine"]["cpus"] >= 1 and data["wall_seconds"] > 0
    folder = out / "synthetic" / data["folders"][str(beir)]
    exp = Experiment.load(folder)
    assert list(exp.systems) == ["bm25"] and exp.k == 100
    assert round(exp.means()["bm25"]["nDCG@10"], 4) == expected["nDCG@10"]
    nb(["report", str(folder)])  # `report` takes it as any run folder
    again = nb(["reproduce", str(path), "-o", str(out)], code=2)
    assert "--overwrite" in again.output
    nb(["reproduce", str(path), "-o", str(out), "--overwrite"])


def test_formats_carry_the_same_values(nb, tmp_path, beir, expected):
    path = _write(tmp_path, _recipe_text(beir, expected))
    data = json.loads(nb(["reproduce", str(path), "--format", "json"]).stdout)
    values = data["reproductions"][0]["values"]
    assert {v["measure"]: round(v["obtained"], 4) for v in values} == expected
    rows = list(csv.DictReader(io.StringIO(nb(["reproduce", str(path), "--format", "csv"]).stdout)))
    assert {r["measure"]: r["verdict"] for r in rows} == {
        "nDCG@10": "reproduced",
        "R@20": "reproduced",
    }
    md = nb(["reproduce", str(path), "--format", "markdown"]).stdout
    assert "| condition | dataset |" in md and md.strip().endswith(
        "2 of 2 values reproduced, 0 skipped"
    )


def test_report_page_is_self_contained(nb, tmp_path, beir, expected):
    changed = {**expected, "R@20": round(expected["R@20"] + 0.01, 4)}
    path = _write(tmp_path, _recipe_text(beir, changed))
    page = tmp_path / "page.html"
    nb(["reproduce", str(path), "--report", str(page)], code=1)
    html = page.read_text()
    assert html.count('class="v ok"') == 1 and html.count('class="v fail"') == 1
    assert "nuggetbench run" in html and "1 of 2 values reproduced, 0 skipped" in html
    assert not re.search(r"<script[^>]+src=|<link[^>]+stylesheet", html)


# --- skipped conditions -------------------------------------------------------------------
@pytest.mark.parametrize(
    "needs,reason",
    [
        ("gpu = true", "needs a GPU"),
        ("llm = true", "needs an OpenAI-compatible LLM endpoint"),
    ],
)
def test_missing_needs_skip_with_the_reason_and_fail_under_strict(
    nb, tmp_path, beir, expected, needs, reason, monkeypatch
):
    monkeypatch.delenv("NUGGETBENCH_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    if needs == "gpu = true":
        torch = pytest.importorskip("torch")
        if torch.cuda.is_available():
            pytest.skip("a GPU is here")
    path = _write(tmp_path, _recipe_text(beir, expected, needs=needs))
    out = nb(["reproduce", str(path)]).stdout  # skipped is not failed
    assert out.strip().splitlines()[-1] == "0 of 2 values reproduced, 2 skipped"
    assert reason in out and "skipped [1]" in out
    nb(["reproduce", str(path), "--strict"], code=1)


def test_absent_dataset_offline_is_skipped_with_what_to_fetch(tmp_path):
    text = _recipe_text(Path("beir/nfcorpus"), {"nDCG@10": 0.3218})
    rep = reproduce(parse_recipe(text))
    assert [c.verdict for c in rep.checks] == ["skipped"]
    assert "beir/nfcorpus is not on disk and downloads are off" in rep.checks[0].reason
    assert "nfcorpus.zip" in rep.checks[0].reason  # the URL to fetch by hand


def test_a_model_that_cannot_be_had_offline_is_skipped(beir):
    pytest.importorskip("sentence_transformers")
    text = _recipe_text(beir, {"nDCG@10": 0.5}).replace(
        'retriever = "bm25"', 'retriever = "dense:sentence-transformers/all-MiniLM-L6-v2"'
    )
    rep = reproduce(parse_recipe(text))
    assert [c.verdict for c in rep.checks] == ["skipped"]
    assert "'sentence-transformers/all-MiniLM-L6-v2' is not in the local" in rep.checks[0].reason
    assert rep.datasets[str(beir)]["fingerprint"]  # the data was there: the model was not


def test_substitute_models_replaces_whole_ids_only():
    models = {"sentence-transformers/all-MiniLM-L6-v2": "/w/minilm"}
    assert substitute_models("dense:sentence-transformers/all-MiniLM-L6-v2", models) == (
        "dense:/w/minilm"
    )
    assert substitute_models(
        "bm25 >> rerank:sentence-transformers/all-MiniLM-L6-v2@100", models
    ) == ("bm25 >> rerank:/w/minilm@100")
    assert substitute_models("dense:sentence-transformers/all-MiniLM-L6-v2-x", models) == (
        "dense:sentence-transformers/all-MiniLM-L6-v2-x"
    )


# --- published run files ------------------------------------------------------------------
def _run_recipe(beir: Path, run_file: Path, values: dict, sha256: str) -> str:
    text = _recipe_text(beir, values)
    return text.replace(
        'retriever = "bm25"',
        f'''[[conditions.runs]]
dataset = "{beir}"
url = "{run_file.as_uri()}"
sha256 = "{sha256}"
path = "published/bm25.trec"
format = "trec"''',
    )


@pytest.fixture()
def published(tmp_path, beir):
    """A TREC run file 'published' elsewhere (a file:// URL), its sha256 and reference values."""
    from nuggetbench.data import write_run
    from nuggetbench.datasets import load_dataset
    from nuggetbench.datasets.download import file_digest
    from nuggetbench.retrieval import parse_retriever

    ds = load_dataset(str(beir))
    run = parse_retriever("bm25:k1=0.9,b=0.4").index(ds.corpus).search(ds.queries, 50)
    path = write_run(run, tmp_path / "remote" / "bm25.trec")
    values = {m: round(v, 4) for m, v in _reference(beir, run.to_dict()).items()}
    return path, file_digest(path, "sha256"), values


def test_run_file_offline_is_skipped_naming_the_url(nb, tmp_path, beir, published):
    path, sha, values = published
    recipe = _write(tmp_path, _run_recipe(beir, path, values, sha))
    out = nb(["reproduce", str(recipe)]).stdout
    assert "0 of 2 values reproduced, 2 skipped" in out
    flat = " ".join(out.split())
    assert path.as_uri() in flat and "published/bm25.trec" in flat
    dry = nb(["reproduce", str(recipe), "--dry-run"]).stdout
    assert f"# fetch {path.as_uri()} (sha256 {sha})" in dry


def test_run_file_is_downloaded_verified_and_scored_as_evaluate_does(
    nb, tmp_path, beir, published, monkeypatch, _isolated_home
):
    path, sha, values = published
    monkeypatch.delenv("NUGGETBENCH_OFFLINE")
    monkeypatch.delenv("HF_HUB_OFFLINE")  # home.offline() reads it too
    recipe = _write(tmp_path, _run_recipe(beir, path, values, sha))
    out = nb(["reproduce", str(recipe), "-o", str(tmp_path / "out")]).stdout
    assert out.strip().splitlines()[-1] == "2 of 2 values reproduced, 0 skipped"
    assert (_isolated_home / "published" / "bm25.trec").read_bytes() == path.read_bytes()
    exp = Experiment.load(
        tmp_path
        / "out"
        / "synthetic"
        / json.loads((tmp_path / "out" / "synthetic" / "reproduction.json").read_text())["folders"][
            str(beir)
        ]
    )
    assert list(exp.systems) == ["bm25"]  # the condition's name
    command = [
        ln
        for ln in nb(["reproduce", str(recipe), "--dry-run"]).stdout.splitlines()
        if ln.startswith("nuggetbench evaluate")
    ][0]
    shown = json.loads(nb([*shlex.split(command)[1:], "--format", "json"]).stdout)
    assert {m: round(shown[m], 4) for m in values} == values


def test_a_run_file_with_another_checksum_is_refused(nb, tmp_path, beir, published, _isolated_home):
    path, sha, values = published
    (_isolated_home / "published").mkdir()
    (_isolated_home / "published" / "bm25.trec").write_text("q0 Q0 d1 1 1.0 x\n")
    recipe = _write(tmp_path, _run_recipe(beir, path, values, sha))
    out = nb(["reproduce", str(recipe)], code=2).output
    assert "has sha256" in out and sha in out and "replace it" in out


# --- validation -----------------------------------------------------------------------------
def _valid() -> str:
    return _recipe_text(Path("beir/scifact"), {"nDCG@10": 0.6789})


@pytest.mark.parametrize(
    "edit,fragment",
    [
        (("schema = 1", "schema = 2"), "schema = 1 recipes"),
        (('title = "BM25 defaults"', 'titel = "x"'), "unknown field 'titel'. Did you mean 'title'"),
        (('measures = ["nDCG@10", "R@20"]', 'measures = ["nDCG@1O"]'), "measures[0]"),
        (('condition = "bm25"', 'condition = "bm26"'), "'bm26' is not a declared condition"),
        (('kind = "results"', 'kind = "blog"'), "source.kind"),
        (
            ('url = "https://github.com/cvangysel/pytrec_eval"', 'url = "github.com/x"'),
            "source.url",
        ),
        (('retriever = "bm25"', 'retriever = "bm25"\nruns = []'), "either retriever"),
        (('"nDCG@10" = 0.6789', '"nDCG@10" = "0.6789"'), "a number as the source prints it"),
        (('"nDCG@10" = 0.6789', '"P@10" = 0.1'), "not one of condition 'bm25''s measures"),
        (
            ('dataset = "beir/scifact"\nvalues', 'dataset = "beir/nq"\nvalues'),
            "not one of condition",
        ),
    ],
)
def test_invalid_recipes_are_one_line_naming_the_field(edit, fragment):
    text = _valid().replace(*edit)
    assert text != _valid()
    with pytest.raises(FormatError) as info:
        parse_recipe(text, "r.toml")
    message = str(info.value)
    assert message.startswith("r.toml: ") and fragment in message and "\n" not in message


def test_a_wide_tolerance_needs_a_note():
    text = _valid().replace("[[expected]]", '[[expected]]\ntolerance = { "nDCG@10" = 0.01 }')
    with pytest.raises(FormatError, match="write why in notes"):
        parse_recipe(text)
    noted = text.replace(
        "tolerance =", 'notes = { "nDCG@10" = "another copy of the corpus" }\ntolerance ='
    )
    r = parse_recipe(noted)
    assert r.tolerance(r.expected[0], "nDCG@10") == 0.01


def test_run_files_are_validated():
    base = _valid().replace(
        'retriever = "bm25"',
        '[[conditions.runs]]\ndataset = "beir/scifact"\nurl = "https://x/r.trec"\n'
        'sha256 = "SHA"\npath = "PATH"',
    )
    good = base.replace("SHA", "a" * 64).replace("PATH", "x/r.trec")
    assert parse_recipe(good).condition("bm25").runs[0].path == "x/r.trec"
    with pytest.raises(FormatError, match="64 hexadecimal digits"):
        parse_recipe(base.replace("SHA", "abc").replace("PATH", "x/r.trec"))
    with pytest.raises(FormatError, match="without '..'"):
        parse_recipe(base.replace("SHA", "a" * 64).replace("PATH", "../r.trec"))


def test_a_shipped_recipe_is_named_as_its_file(tmp_path):
    path = _write(tmp_path, _valid(), "other-name.toml")
    assert read_recipe(path).name == "synthetic"
    with pytest.raises(FormatError, match="differs from the file's name"):
        read_recipe(path, shipped=True)


def test_unknown_selection_is_a_usage_error(nb, tmp_path, beir, expected):
    path = _write(tmp_path, _recipe_text(beir, expected))
    out = nb(["reproduce", str(path), "--condition", "bm52"], code=2).output
    assert "no condition 'bm52'" in out and "Did you mean 'bm25'" in out
    out = nb(["reproduce", str(path), "--dataset", "nope"], code=2).output
    assert "no dataset 'nope'" in out
    assert "name a recipe" in nb(["reproduce"], code=2).output


def test_query_subsets_are_refused_with_the_reason(nb, tmp_path, beir, expected):
    """A recipe's expected values are means over every query: ``run``'s subset options are
    refused here (one usage error saying why and what to do), before any work."""
    path = _write(tmp_path, _recipe_text(beir, expected))
    for args in (["--first-queries", "1"], ["--queries", "q1"], ["--sample-queries", "1"]):
        out = nb(["reproduce", str(path), *args, "-o", tmp_path / "o"], code=2).output
        assert f"{args[0]}: reproduce runs every query" in out and "--dry-run" in out
        assert "Traceback" not in out and not (tmp_path / "o").exists()
    help_text = nb(["reproduce", "--help"]).stdout
    assert "--first-queries N" not in help_text  # not options of reproduce: not documented
    dry = nb(["reproduce", str(path), "--dry-run"]).stdout
    assert "nuggetbench run " in dry  # the commands a subset can be added to


def test_a_statistic_the_dataset_does_not_print_is_an_error(nb, tmp_path, beir, expected):
    path = _write(tmp_path, _recipe_text(beir, expected, top='statistic = "bootstrap mean"'))
    out = nb(["reproduce", str(path)], code=2).output
    assert "statistic 'bootstrap mean' is not a row" in out


def test_list_fits_80_columns(nb, tmp_path, beir, expected, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    path = _write(tmp_path, _recipe_text(beir, expected, name="a-very-long-recipe-name"))
    out = nb(["reproduce", str(path), "--list"]).stdout
    assert "runs here" in out and "yes: everything is on disk" in out
    assert max(len(ln) for ln in out.splitlines()) <= 80
    listed = json.loads(nb(["reproduce", str(path), "--list", "--format", "json"]).stdout)
    assert listed["recipes"][0]["values"] == 2
