"""Warnings rare and true (issue 38, item 5).

Every warning site of ``src/`` is listed in ``docs/warnings.md`` with the input that triggers it
and its consequence for the numbers (found here by its key: a finding's kind, the first words of
a logged message, or the expression a command prints); and the clean inputs below (dicts, frames,
ir_measures objects, TREC files, a BEIR folder, through ``nb.evaluate``, ``evaluate``, ``run``
and ``compare``) trigger no warning at all: Python warnings are errors and no log record or
``warning:`` line reaches stderr.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import nuggetbench as nb
from nuggetbench.cli import cli
from nuggetbench.errors import EvaluationWarning

SRC = Path(__file__).resolve().parents[1] / "src" / "nuggetbench"
DOC = Path(__file__).resolve().parents[1] / "docs" / "warnings.md"


def _literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else " " for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _literal(node.left), _literal(node.right)
        return None if a is None or b is None else a + b
    return None


def _key(node: ast.AST) -> str:
    """The first three words of a literal message (placeholders dropped), else the expression."""
    text = _literal(node)
    if text is None:
        return ast.unparse(node)
    text = re.sub(r"%[sdrf]", " ", text)
    return " ".join(re.findall(r"[A-Za-z_][A-Za-z_'-]*", text)[:3])


def warning_sites() -> list[tuple[str, str]]:
    """``(file under src/nuggetbench, key)`` of every warning the package can emit."""
    sites = []
    for path in sorted(SRC.rglob("*.py")):
        where = str(path.relative_to(SRC))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            f, first = node.func, node.args[0]
            if isinstance(f, ast.Name) and f.id == "Finding":
                if isinstance(first, ast.Constant) and first.value == "warning":
                    kind = node.args[1]
                    kinds = [kind.body, kind.orelse] if isinstance(kind, ast.IfExp) else [kind]
                    sites += [(where, _key(k)) for k in kinds]
            elif (
                isinstance(f, ast.Attribute)
                and f.attr == "warning"
                or (
                    isinstance(f, ast.Attribute)
                    and f.attr == "warn"
                    and getattr(f.value, "id", "") == "warnings"
                )
                or isinstance(f, ast.Name)
                and f.id == "warn"
            ):
                sites.append((where, _key(first)))
    return sites


def test_every_warning_is_listed_with_its_trigger_and_consequence():
    doc = DOC.read_text()
    sites = warning_sites()
    assert len(sites) > 40  # the collector finds them (it would pass vacuously otherwise)
    rows = [line for line in doc.splitlines() if line.startswith("| ") and "`" in line]
    missing = []
    for where, key in sites:
        if not any(
            where in row and f"`{key}`" in row or f"{key}`" in row and where in row for row in rows
        ):
            missing.append((where, key))
    assert not missing, f"warnings not in docs/warnings.md: {missing}"
    for row in rows:  # each row says the trigger and the consequence
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 4 and all(cells), row


# --- clean inputs trigger nothing -------------------------------------------------------------
@pytest.fixture
def caught():
    """Log records at WARNING of the package, and Python warnings as errors."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("nuggetbench")
    logger.addHandler(handler)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield records
    logger.removeHandler(handler)


def test_clean_python_inputs_warn_nothing(caught):
    """The issue's dict (no arrival order to respect), a pandas frame, ir_measures ScoredDoc
    objects listed worst first: no EvaluationWarning (it would raise here), no log record."""
    pd = pytest.importorskip("pandas")
    ir_measures = pytest.importorskip("ir_measures")
    res = nb.evaluate({"q1": {"d1": 1}}, {"q1": {"d2": 1.0, "d1": 2.0}}, "nDCG@10")
    assert res.means["nDCG@10"] == 1.0
    frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d2", "d1"], "score": [1.0, 2.0]})
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    assert nb.evaluate(qrels, frame, "nDCG@10").means["nDCG@10"] == 1.0
    scored = [ir_measures.ScoredDoc("q1", "d2", 1.0), ir_measures.ScoredDoc("q1", "d1", 2.0)]
    judged = [ir_measures.Qrel("q1", "d1", 1)]
    assert nb.evaluate(judged, scored, "nDCG@10").means["nDCG@10"] == 1.0
    assert not caught


def test_trec_eval_results_trunc_warns_only_what_is_true(shared_data, caught):
    """trec_eval's own results.trunc: lines out of score order, ranks that agree: nothing about
    sorting; the one true warning is the judged query 302 it lacks."""
    folder = shared_data / "trec_eval10"
    if not folder.is_dir():
        pytest.skip("../shared/data/trec_eval10 is absent")
    run = nb.read_run(folder / "results.trunc", trailing="ignore")
    with pytest.warns(EvaluationWarning) as seen:
        warnings.simplefilter("always")
        nb.evaluate(nb.read_qrels(folder / "qrels.test"), run, "nDCG@10")
    messages = [str(w.message) for w in seen]
    assert len(messages) == 1 and "1 judged queries are missing from the run" in messages[0]


@pytest.fixture
def clean(tmp_path):
    """A BEIR folder (120 documents sharing a word, 6 judged queries) and two 100-deep TREC runs
    of every query, written in rank order."""
    root = tmp_path / "clean"
    (root / "qrels").mkdir(parents=True)
    docs = {f"d{i:03d}": f"shared word{i} topic{i % 9}" for i in range(120)}
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in docs.items())
    )
    queries = {f"q{i}": f"shared topic{i}" for i in range(6)}
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    lines = [f"q{i}\td{j:03d}\t{1 + (j % 2)}\n" for i in range(6) for j in range(i, 120, 9)]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(lines))
    runs = []
    rng = np.random.default_rng(1)
    for name in ("a", "b"):
        path = tmp_path / f"{name}.trec"
        with open(path, "w") as fh:
            for q in queries:
                order = rng.permutation(120)[:100]
                for r, j in enumerate(order):
                    fh.write(f"{q} Q0 d{j:03d} {r + 1} {100 - r} {name}\n")
        runs.append(path)
    return root, runs


def _no_warning(result) -> None:
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr.lower(), result.stderr


def test_clean_command_lines_warn_nothing(clean, tmp_path, caught):
    root, (a, b) = clean
    qrels = str(root / "qrels" / "test.tsv")
    measures = ["-m", "nDCG@10", "-m", "R@100", "-m", "AP"]
    runner = CliRunner()
    for fmt in ("table", "json", "trec_eval"):
        _no_warning(runner.invoke(cli, ["evaluate", qrels, str(a), *measures, "--format", fmt]))
    _no_warning(runner.invoke(cli, ["trec_eval", "-m", "map", qrels, str(a)]))
    _no_warning(
        runner.invoke(cli, ["compare", qrels, str(a), str(b), *measures, "--resamples", "100"])
    )
    _no_warning(
        runner.invoke(
            cli,
            [
                "run",
                str(root),
                "-r",
                "bm25",
                "-r",
                "bm25:k1=0.9,b=0.4",
                *measures,
                "-k",
                "100",
                "-o",
                str(tmp_path / "out"),
            ],
        )
    )
    assert not caught, [r.getMessage() for r in caught]
