"""LLM judges (``nuggetbench judge``) against the loopback server (``tests/llm_server.py``): the
server grades each pair by a hidden qrels with a known set of wrong grades, and every figure the
command prints is recomputed here from that hidden truth, independently of the package."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion

from llm_server import LLMServer
from nuggetbench.cli import cli
from nuggetbench.judging import cohen_kappa, judging_client, parse_final_score
from nuggetbench.judging.agreement import confusion_matrix, sample_pairs
from nuggetbench.llm.jsonout import InvalidAnswer

_DOC = re.compile(r"\bdoc(\d+)\b")


# --- parsing ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "grade"),
    [
        ("Reasoning...\n##final score: 2", 2),
        ("## Final Score: 3", 3),
        ("##final score: 1\nOn reflection:\n##final score: 0", 0),  # the last line wins
        ("<think>##final score: 3</think>The passage is off topic.\n##final score: 0", 0),
        ("**##final score:** 2", 2),
        ('{"final_score": 1}', 1),
        ("It falls into the category 2.", 2),
        ("3", 3),
    ],
)
def test_final_score_is_read_as_robustly_as_umbrela(text, grade):
    assert parse_final_score(text) == grade


@pytest.mark.parametrize("text", ["", "I cannot tell.", "##final score: 7", "score: high"])
def test_an_answer_without_a_grade_is_an_error_never_zero(text):
    with pytest.raises(InvalidAnswer):
        parse_final_score(text)


# --- kappa and confusion against scikit-learn -----------------------------------------------
@pytest.mark.parametrize("seed", range(30))
def test_cohen_kappa_and_confusion_equal_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 200))
    human = rng.integers(0, int(rng.integers(1, 4)) + 1, size=n)
    model = np.where(rng.random(n) < rng.random(), human, rng.integers(0, 4, size=n))
    expected = cohen_kappa_score(human, model)
    got = cohen_kappa(human.tolist(), model.tolist())
    if np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)
    grades = list(range(4))
    assert (
        confusion_matrix(human.tolist(), model.tolist(), grades)
        == sk_confusion(human, model, labels=grades).tolist()
    )


def test_sample_is_seeded_and_without_replacement():
    from nuggetbench.data import Qrels

    qrels = Qrels(
        ["q1"] * 50 + ["q2"] * 50, [f"d{i}" for i in range(100)], [i % 3 for i in range(100)]
    )
    a, b = sample_pairs(qrels, 30, 7), sample_pairs(qrels, 30, 7)
    assert a == b and len(set(a)) == 30
    assert sample_pairs(qrels, 30, 8) != a
    assert len(sample_pairs(qrels, None, 0)) == 100


# --- a synthetic BEIR folder with a hidden qrels -------------------------------------------
N_Q, N_D = 6, 40


def _wrong(q: str, d: str) -> bool:
    """The pairs the judge gets wrong: about a fifth, fixed by a hash."""
    return int(hashlib.sha256(f"{q}/{d}".encode()).hexdigest()[:8], 16) % 5 == 0


def _hidden(seed=0):
    rng = np.random.default_rng(seed)
    return {
        f"q{i}": {f"doc{j}": int(rng.choice([0, 0, 1, 2, 3])) for j in range(N_D)}
        for i in range(N_Q)
    }


def _model_grade(truth, q, d):
    g = truth[q][d]
    return (g + 1) % 4 if _wrong(q, d) else g


@pytest.fixture()
def server():
    with LLMServer(hang_seconds=10) as srv:
        yield srv


@pytest.fixture()
def beir(tmp_path, server, monkeypatch):
    truth = _hidden()
    folder = tmp_path / "synth"
    (folder / "qrels").mkdir(parents=True)
    texts = {f"q{i}": f"question number {i} about topic{i}" for i in range(N_Q)}
    with open(folder / "queries.jsonl", "w") as fh:
        for q, t in texts.items():
            fh.write(json.dumps({"_id": q, "text": t}) + "\n")
    with open(folder / "corpus.jsonl", "w") as fh:
        for j in range(N_D):
            fh.write(
                json.dumps({"_id": f"doc{j}", "title": "", "text": f"doc{j} some text"}) + "\n"
            )
    # humans judged the documents with an even number only
    human = {q: {d: g for d, g in docs.items() if int(d[3:]) % 2 == 0} for q, docs in truth.items()}
    with open(folder / "qrels" / "test.tsv", "w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q, docs in human.items():
            for d, g in docs.items():
                fh.write(f"{q}\t{d}\t{g}\n")
    by_text = {t: q for q, t in texts.items()}

    def relevance(query: str, passage: str) -> float:
        q, d = by_text[query], f"doc{_DOC.search(passage).group(1)}"
        return float(_model_grade(truth, q, d))

    server.relevance = relevance
    monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", server.base_url)
    return folder, truth, human


def _write_run(path, seed, ties=False):
    rng = np.random.default_rng(seed)
    rows = {}
    with open(path, "w") as fh:
        for i in range(N_Q):
            docs = rng.choice(N_D, size=25, replace=False)
            for r, j in enumerate(docs):
                score = float(25 - r) if not ties else float((25 - r) // 3)  # ties: doc id order
                rows.setdefault(f"q{i}", []).append((f"doc{j}", score))
                fh.write(f"q{i} Q0 doc{j} {r + 1} {score} run{seed}\n")
    return rows


def _topk(rows, k):
    """trec_eval's order, computed here: score descending, doc id descending on ties."""
    out = {}
    for q, docs in rows.items():
        by_doc = sorted(docs, key=lambda t: t[0], reverse=True)
        out[q] = [d for d, _ in sorted(by_doc, key=lambda t: -t[1])][:k]  # stable sort
    return out


def _invoke(*args):
    """stdout of a command that must succeed (warnings go to stderr)."""
    result = CliRunner().invoke(cli, [*args, "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_judge_fills_holes_and_a_rerun_sends_nothing(beir, server, tmp_path):
    folder, truth, human = beir
    runs = {
        "a": _write_run(tmp_path / "a.trec", 1),
        "b": _write_run(tmp_path / "b.trec", 2, ties=True),
    }
    k = 10
    top = {n: _topk(r, k) for n, r in runs.items()}
    holes = {
        (q, d) for t in top.values() for q, docs in t.items() for d in docs if d not in human[q]
    }
    out = tmp_path / "judged"
    args = [
        "judge",
        str(folder),
        str(tmp_path / "a.trec"),
        str(tmp_path / "b.trec"),
        "--depth",
        str(k),
        "--model",
        "test-model",
        "-o",
        str(out),
        "--format",
        "json",
    ]
    shown = json.loads(_invoke(*args))["judge"]
    assert shown["holes"] == len(holes) > 0
    assert shown["requests_sent"] == len(holes) == len(server.answered("umbrela"))
    assert shown["failures"] == 0
    for name, t in top.items():
        before = np.mean([sum(d in human[q] for d in docs) / len(docs) for q, docs in t.items()])
        assert shown["judged_before"][name] == pytest.approx(before)
        assert shown["judged_after"][name] == pytest.approx(1.0)
    # qrels.txt: the human judgments untouched plus the model's grade of every hole
    lines = (out / "qrels.txt").read_text().split("\n")
    got = {(q, d): int(g) for q, z, d, g in (ln.split() for ln in lines if ln)}
    expected = {(q, d): g for q, docs in human.items() for d, g in docs.items()}
    expected.update({(q, d): _model_grade(truth, q, d) for q, d in holes})
    assert got == expected
    rows = [json.loads(ln) for ln in (out / "judgments.jsonl").read_text().splitlines()]
    assert {(r["query_id"], r["doc_id"]) for r in rows} == holes
    assert all(r["grade"] == _model_grade(truth, r["query_id"], r["doc_id"]) for r in rows)
    assert all(
        r["model"] == "test-model" and r["prompt"] == "umbrela.v1" and "##final score" in r["reply"]
        for r in rows
    )
    assert all(r["human_grade"] is None for r in rows)
    # the re-run is answered from the cache: 0 requests
    n = len(server.log)
    again = json.loads(_invoke(*args))["judge"]
    assert len(server.log) == n and again["requests_sent"] == 0
    assert again["judged_after"] == shown["judged_after"]
    assert "key" not in (out / "judge.json").read_text().lower().replace("api_key_env", "")


def test_a_human_judgment_always_wins_and_unparsable_answers_are_failures(beir, server, tmp_path):
    folder, truth, human = beir
    _write_run(tmp_path / "a.trec", 3)
    server.malformed = 1.0
    server.malformed_repairs = True
    out = tmp_path / "judged"
    shown = json.loads(
        _invoke(
            "judge",
            str(folder),
            str(tmp_path / "a.trec"),
            "--depth",
            "5",
            "--model",
            "m",
            "-o",
            str(out),
            "--format",
            "json",
            "--max-repairs",
            "1",
        )
    )["judge"]
    assert shown["failures"] == shown["holes"] > 0
    assert shown["requests_sent"] == 2 * shown["holes"]  # first answer and one repair each
    rows = [json.loads(ln) for ln in (out / "judgments.jsonl").read_text().splitlines()]
    assert all(r["grade"] is None and r["error"] and r["attempts"] == 2 for r in rows)
    lines = [ln.split() for ln in (out / "qrels.txt").read_text().splitlines()]
    assert {(q, d) for q, _, d, _ in lines} == {(q, d) for q in human for d in human[q]}
    # failures are not cached as answers: a later run with a sane server asks again and succeeds
    server.malformed, server.malformed_repairs = 0.0, False
    again = json.loads(
        _invoke(
            "judge",
            str(folder),
            str(tmp_path / "a.trec"),
            "--depth",
            "5",
            "--model",
            "m",
            "-o",
            str(out),
            "--format",
            "json",
        )
    )["judge"]
    assert again["failures"] == 0 and again["requests_sent"] == shown["holes"]


def test_malformed_first_answers_are_repaired(beir, server, tmp_path):
    folder, truth, human = beir
    _write_run(tmp_path / "a.trec", 4)
    server.malformed = 0.5
    out = tmp_path / "judged"
    shown = json.loads(
        _invoke(
            "judge",
            str(folder),
            str(tmp_path / "a.trec"),
            "--depth",
            "10",
            "--model",
            "m",
            "-o",
            str(out),
            "--format",
            "json",
        )
    )["judge"]
    rows = [json.loads(ln) for ln in (out / "judgments.jsonl").read_text().splitlines()]
    repaired = sum(r["attempts"] == 2 for r in rows)
    assert 0 < repaired < len(rows)
    assert shown["requests_sent"] == len(rows) + repaired and shown["failures"] == 0
    assert all(r["grade"] == _model_grade(truth, r["query_id"], r["doc_id"]) for r in rows)


def test_killed_judge_resumes_without_repeating_a_request(beir, server, tmp_path):
    folder, truth, human = beir
    _write_run(tmp_path / "a.trec", 5)
    env = {**os.environ, "NUGGETBENCH_LLM_BASE_URL": server.base_url}
    cmd = [
        sys.executable,
        "-m",
        "nuggetbench",
        "judge",
        str(folder),
        str(tmp_path / "a.trec"),
        "--depth",
        "10",
        "--model",
        "m",
        "--concurrency",
        "1",
        "--format",
        "json",
        "--no-progress",
        "-o",
        str(tmp_path / "out"),
    ]
    state: dict = {}

    def hook(entry):
        state["seen"] = state.get("seen", 0) + 1
        if state["seen"] == 8:
            os.kill(state["pid"], signal.SIGKILL)
            return True
        return False

    server.on_request = hook
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    state["pid"] = proc.pid
    timer = threading.Timer(120, proc.kill)
    timer.start()
    proc.communicate()
    timer.cancel()
    assert proc.returncode == -signal.SIGKILL
    server.on_request = None
    first = list(server.log)
    assert sum(e.answered for e in first) == 7
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["judge"]
    answered = [e.key for e in server.log if e.answered]
    assert len(answered) == len(set(answered)) == shown["holes"]  # no request answered twice
    assert shown["requests_sent"] == shown["holes"] - 7


def test_agreement_figures_equal_the_hidden_truth(beir, server, tmp_path):
    folder, truth, human = beir
    for s in (6, 7, 8):
        _write_run(tmp_path / f"r{s}.trec", s)
    out = tmp_path / "agree"
    shown = json.loads(
        _invoke(
            "judge",
            str(folder),
            str(tmp_path / "r6.trec"),
            str(tmp_path / "r7.trec"),
            str(tmp_path / "r8.trec"),
            "--agreement",
            "--sample",
            "50",
            "--seed",
            "3",
            "--model",
            "m",
            "-o",
            str(out),
            "--format",
            "json",
            "-m",
            "nDCG@10",
        )
    )["agreement"]
    pairs = sorted((q, d) for q in human for d in human[q])
    chosen = [
        pairs[i] for i in np.sort(np.random.default_rng(3).choice(len(pairs), 50, replace=False))
    ]
    h = [human[q][d] for q, d in chosen]
    m = [_model_grade(truth, q, d) for q, d in chosen]
    assert shown["pairs"] == shown["judged"] == shown["requests_sent"] == 50
    assert shown["cohen_kappa"] == pytest.approx(cohen_kappa_score(h, m))
    assert shown["rel_level"] == 1
    hb, mb = [int(x >= 1) for x in h], [int(x >= 1) for x in m]
    assert shown["cohen_kappa_binary"] == pytest.approx(cohen_kappa_score(hb, mb))
    assert shown["confusion"] == sk_confusion(h, m, labels=[0, 1, 2, 3]).tolist()
    # Kendall's tau from pytrec_eval's nDCG@10 under both sets of grades of the chosen pairs
    import pytrec_eval

    def means(grades):
        qrels = {}
        for (q, d), g in zip(chosen, grades):
            qrels.setdefault(q, {})[d] = g
        out = []
        for s in (6, 7, 8):
            run = {}
            for ln in (tmp_path / f"r{s}.trec").read_text().splitlines():
                q, _, d, _, score, _ = ln.split()
                run.setdefault(q, {})[d] = float(score)
            per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
            out.append(np.mean([per[q]["ndcg_cut_10"] for q in qrels]))
        return out

    tau = kendalltau(means(h), means(m)).statistic
    assert shown["kendall_tau"] == pytest.approx(tau)
    rows = [json.loads(ln) for ln in (out / "judgments.jsonl").read_text().splitlines()]
    assert [(r["query_id"], r["doc_id"], r["human_grade"], r["grade"]) for r in rows] == [
        (q, d, a, b) for (q, d), a, b in zip(chosen, h, m)
    ]


def test_agreement_on_birco_clinical_trial(shared_data, server, monkeypatch, tmp_path):
    """300 judged pairs of birco/clinical-trial (grades 0-2); the judge errs on a known fifth."""
    from nuggetbench.datasets import load_dataset

    monkeypatch.setenv("NUGGETBENCH_DATA", str(shared_data))
    monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", server.base_url)
    ds = load_dataset("birco/clinical-trial")
    by_query = {" ".join(ds.queries[q].split()): q for q in ds.queries}
    by_passage = {
        " ".join(ds.corpus.texts([d])[0].split()[:400]): d for q in ds.qrels for d in ds.qrels[q]
    }

    def model(q, d):
        g = ds.qrels[q][d]
        return (g + 1) % 4 if _wrong(q, d) else g

    server.relevance = lambda query, passage: float(model(by_query[query], by_passage[passage]))
    shown = json.loads(
        _invoke(
            "judge",
            "birco/clinical-trial",
            "--agreement",
            "--sample",
            "300",
            "--seed",
            "1",
            "--model",
            "m",
            "--format",
            "json",
        )
    )["agreement"]
    pairs = sorted((q, d) for q in ds.qrels for d in ds.qrels[q])
    chosen = [
        pairs[i] for i in np.sort(np.random.default_rng(1).choice(len(pairs), 300, replace=False))
    ]
    h = [ds.qrels[q][d] for q, d in chosen]
    m = [model(q, d) for q, d in chosen]
    assert shown["judged"] == 300
    assert shown["cohen_kappa"] == pytest.approx(cohen_kappa_score(h, m))
    level = shown["rel_level"]
    assert shown["cohen_kappa_binary"] == pytest.approx(
        cohen_kappa_score([x >= level for x in h], [x >= level for x in m])
    )
    assert shown["confusion"] == sk_confusion(h, m, labels=[0, 1, 2, 3]).tolist()


def test_usage_errors_are_clear(beir, tmp_path, monkeypatch):
    folder, _, _ = beir
    result = CliRunner().invoke(cli, ["judge", str(folder), "--model", "m"])
    assert result.exit_code == 2 and "RUN files and -o DIR" in result.output
    monkeypatch.delenv("NUGGETBENCH_LLM_MODEL", raising=False)
    run = tmp_path / "a.trec"
    _write_run(run, 9)
    result = CliRunner().invoke(cli, ["judge", str(folder), str(run), "-o", str(tmp_path / "o")])
    assert result.exit_code != 0 and "--model" in str(result.exception)
    (tmp_path / "bad.trec").write_text("q0 Q0 nodoc 1 1.0 x\n")
    result = CliRunner().invoke(
        cli,
        [
            "judge",
            str(folder),
            str(tmp_path / "bad.trec"),
            "--model",
            "m",
            "-o",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code != 0 and "nodoc" in str(result.exception)


def test_judge_shows_one_progress_bar_counting_the_pairs(beir, server, tmp_path):
    folder, truth, human = beir
    _write_run(tmp_path / "a.trec", 1)
    args = ["judge", str(folder), str(tmp_path / "a.trec"), "--depth", "5", "--model", "m"]
    terminal = CliRunner(env={"TTY_COMPATIBLE": "1"})  # stderr taken for a terminal (rich's test)
    shown = terminal.invoke(cli, [*args, "-o", str(tmp_path / "o1"), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    holes = json.loads(shown.stdout)["judge"]["holes"]
    # issue 37: the bar knows its total and shows the requests sent
    assert holes > 0 and "judging: 100%" in shown.stderr and f"{holes}/{holes}" in shown.stderr
    assert f"{holes} sent, 0 cached, 0 failed" in shown.stderr
    hidden = terminal.invoke(cli, [*args, "-o", str(tmp_path / "o2"), "--no-progress"])
    assert hidden.exit_code == 0 and "judging" not in hidden.stderr
    # issue 30, item 20: piped (CliRunner's stderr is no terminal), no bar and no \r redraws;
    # issue 37: progress lines instead (here the last one only: the judging took under 10 s)
    piped = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "o3")])
    assert piped.exit_code == 0, piped.output
    assert "\r" not in piped.stderr
    assert f"INFO nuggetbench.progress: judging: done, {holes}/{holes} pairs" in piped.stderr
    assert f"holes found in the top 5: {holes}" in piped.stderr  # the final summary line stays


def test_judge_out_names_each_file_it_writes(beir, server, tmp_path):
    """Issue 30, item 19: ``judge -o`` names every file, the summary included."""
    folder, truth, human = beir
    _write_run(tmp_path / "a.trec", 1)
    out = tmp_path / "o"
    args = ["judge", str(folder), str(tmp_path / "a.trec"), "--depth", "5", "--model", "m"]
    result = CliRunner(env={"COLUMNS": "300"}).invoke(cli, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in out.iterdir())
    assert written == ["judge.json", "judgments.jsonl", "qrels.txt"]
    named = [line for line in result.stderr.splitlines() if line.startswith("wrote ")]
    assert sorted(line.split()[1] for line in named) == sorted(str(out / n) for n in written)
    assert any("judge.json (the summary)" in line for line in named)
    agreement = CliRunner(env={"COLUMNS": "300"}).invoke(
        cli, ["judge", str(folder), "--agreement", "--model", "m", "-o", str(tmp_path / "ag")]
    )
    assert agreement.exit_code == 0, agreement.output
    named = {line.split()[1] for line in agreement.stderr.splitlines() if line.startswith("wrote ")}
    assert named == {str(p) for p in (tmp_path / "ag").iterdir()} and len(named) == 2


def test_no_api_key_is_a_stated_choice(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "set-but-unwanted")
    stated = judging_client("m", base_url="http://127.0.0.1:9/v1", no_api_key=True)
    assert stated.settings.api_key() is None and stated.settings.key_problem() is None
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("NUGGETBENCH_LLM_API_KEY", raising=False)
    silent = judging_client("m", base_url="http://127.0.0.1:9/v1")
    assert "--no-api-key" in silent.settings.key_problem()
    help_text = CliRunner().invoke(cli, ["judge", "--help"]).output
    assert "--no-api-key" in help_text


def test_agreement_on_one_grade_is_valid_json_with_raw_agreement(beir, server, tmp_path):
    """A qrels of one grade (SciFact's) that the model calls relevant everywhere: the binary
    kappa is undefined (expected agreement 1). The JSON holds null with the reason beside it,
    never NaN; the raw agreement is there (1.0 on the binary labels, 0.0 on the grades); the
    table says "undefined" instead of printing nan."""
    folder, truth, human = beir
    with open(folder / "qrels" / "test.tsv", "w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q, docs in human.items():
            for d in docs:
                fh.write(f"{q}\t{d}\t1\n")
    server.relevance = lambda query, passage: 2.0
    text = _invoke("judge", str(folder), "--agreement", "--model", "m", "--format", "json")

    def refuse(name):
        raise AssertionError(f"{name} in the JSON output")

    shown = json.loads(text, parse_constant=refuse)["agreement"]
    n = sum(len(docs) for docs in human.values())
    h, m = [1] * n, [2] * n
    assert shown["cohen_kappa"] == pytest.approx(cohen_kappa_score(h, m))  # 0: defined
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(cohen_kappa_score([1] * n, [1] * n))  # scikit-learn: undefined too
    assert shown["cohen_kappa_binary"] is None and "undefined" in shown["cohen_kappa_binary_note"]
    assert shown["raw_agreement"] == 0.0 and shown["raw_agreement_binary"] == 1.0
    table = CliRunner(env={"COLUMNS": "200"}).invoke(
        cli, ["judge", str(folder), "--agreement", "--model", "m", "--no-progress"]
    )
    assert table.exit_code == 0, table.output
    assert "nan" not in table.stdout.lower()
    assert (
        "agreement (binary, relevant at grade >= 1): 1.0000 of the pairs; Cohen's kappa "
        "undefined" in table.stdout
    )
