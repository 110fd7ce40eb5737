"""``nuggetbench answers`` against the loopback assigner (``tests/llm_server.py``), which labels a
nugget from a marker in the answer (``+W`` support, ``~W`` partial support of the nugget whose first
word is ``W``): every score is recomputed here from the markers the test wrote."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import ttest_rel

from llm_server import LLMServer
from nuggetbench.cli import cli
from nuggetbench.errors import FormatError
from nuggetbench.judging.answers import nugget_scores, parse_labels, read_answers, read_nuggets
from nuggetbench.llm.jsonout import InvalidAnswer


@pytest.fixture()
def server(monkeypatch):
    with LLMServer(hang_seconds=10) as srv:
        monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", srv.base_url)
        yield srv


def _invoke(*args):
    result = CliRunner().invoke(cli, [*args, "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _synthetic(tmp_path, seed=0):
    """Nuggets of 9 questions (0 to 23 nuggets; one question with no vital nugget) and two
    systems whose answers carry markers; system B leaves one question unanswered."""
    rng = np.random.default_rng(seed)
    counts = [3, 10, 11, 23, 1, 7, 0, 15, 5]
    nuggets, truth = {}, {"A": {}, "B": {}}
    with open(tmp_path / "nuggets.jsonl", "w") as fh:
        for i, n in enumerate(counts):
            qid = f"t{i}"
            imps = ["okay" if (i == 4 or rng.random() < 0.4) else "vital" for _ in range(n)]
            ns = [
                {"text": f"N{i}x{j} is a fact about topic {i}", "importance": imp}
                for j, imp in enumerate(imps)
            ]
            nuggets[qid] = ns
            fh.write(
                json.dumps({"qid": qid, "query": f"what about topic {i}?", "nuggets": ns}) + "\n"
            )
    for system, p in (("A", (0.5, 0.2)), ("B", (0.3, 0.3))):
        with open(tmp_path / f"{system}.jsonl", "w") as fh:
            for qid, ns in nuggets.items():
                if system == "B" and qid == "t2":
                    truth[system][qid] = None
                    continue
                labels = rng.choice(
                    ["support", "partial_support", "not_support"],
                    size=len(ns),
                    p=[p[0], p[1], 1 - sum(p)],
                ).tolist()
                truth[system][qid] = labels
                marks = [
                    ("+" if lab == "support" else "~") + n["text"].split()[0]
                    for n, lab in zip(ns, labels)
                    if lab != "not_support"
                ]
                sentences = [
                    {"text": f"Sentence about topic {qid} {m}.", "citations": [0]} for m in marks
                ]
                sentences.append({"text": "Nothing else.", "citations": []})
                fh.write(
                    json.dumps(
                        {
                            "run_id": system,
                            "topic_id": qid,
                            "topic": "q",
                            "references": [],
                            "response_length": 10,
                            "answer": sentences,
                        }
                    )
                    + "\n"
                )
    return nuggets, truth


def _expected(nuggets, labels):
    """nuggetizer's four scores, computed here from the definitions."""
    vital = [lab for lab, n in zip(labels, nuggets) if n["importance"] == "vital"]

    def score(ls, partial):
        if not ls:
            return 0.0
        return (
            sum(x == "support" for x in ls) + partial * sum(x == "partial_support" for x in ls)
        ) / len(ls)

    return {
        "vital_score": score(vital, 0.5),
        "strict_vital_score": score(vital, 0.0),
        "all_score": score(labels, 0.5),
        "strict_all_score": score(labels, 0.0),
    }


def test_two_systems_scores_calls_and_paired_comparison(server, tmp_path):
    nuggets, truth = _synthetic(tmp_path)
    out = tmp_path / "assigned"
    shown = json.loads(
        _invoke(
            "answers",
            str(tmp_path / "nuggets.jsonl"),
            str(tmp_path / "A.jsonl"),
            str(tmp_path / "B.jsonl"),
            "--model",
            "m",
            "-o",
            str(out),
            "--format",
            "json",
        )
    )
    per = {s: {} for s in truth}
    for s in truth:
        for qid, ns in nuggets.items():
            labels = truth[s][qid] or ["not_support"] * len(ns)
            per[s][qid] = _expected(ns, labels)
        for m in ("vital_score", "strict_vital_score", "all_score", "strict_all_score"):
            assert shown["results"][s][m] == pytest.approx(np.mean([per[s][q][m] for q in nuggets]))
    # one call per window of at most 10 nuggets of each answered question
    windows = sum(
        -(-len(ns) // 10) for s in truth for q, ns in nuggets.items() if truth[s][q] is not None
    )
    # identical requests (same question, answer text and window) are sent once
    distinct = {
        (q, tuple(truth[s][q]), start)
        for s in truth
        for q, ns in nuggets.items()
        if truth[s][q] is not None
        for start in range(0, len(ns), 10)
    }
    assert shown["windows"] == windows
    assert shown["requests_sent"] == len(distinct) == len(server.answered("assign"))
    sizes = [
        int(e.body["messages"][1]["content"].split('count="')[1].split('"')[0])
        for e in server.answered("assign")
    ]
    assert sorted(sizes) == sorted(min(10, len(nuggets[q]) - start) for q, _, start in distinct)
    assert max(sizes) == 10
    assert shown["missing"] == {"A": 0, "B": 1} and shown["failures"] == {"A": 0, "B": 0}
    # the paired comparison, B against A (the baseline), equals a paired t-test on the rows above
    cmp = shown["comparison"]
    qids = list(nuggets)
    for m in ("all_score", "vital_score"):
        a = [per["A"][q][m] for q in qids]
        b = [per["B"][q][m] for q in qids]
        diff = next(d for d in cmp["differences"] if d["system"] == "B" and d["measure"] == m)
        assert diff["diff"] == pytest.approx(np.mean(b) - np.mean(a))
        assert diff["p_value"] == pytest.approx(ttest_rel(b, a).pvalue)
    rows = [json.loads(ln) for ln in (out / "assignments.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * sum(len(ns) for ns in nuggets.values())
    for r in rows:
        j = int(r["nugget"].split()[0].split("x")[1])
        expected = truth[r["system"]][r["qid"]]
        assert r["assignment"] == (expected[j] if expected else "not_support")
    # a re-run is answered from the cache
    n = len(server.log)
    again = json.loads(
        _invoke(
            "answers",
            str(tmp_path / "nuggets.jsonl"),
            str(tmp_path / "A.jsonl"),
            str(tmp_path / "B.jsonl"),
            "--model",
            "m",
            "--format",
            "json",
        )
    )
    assert len(server.log) == n and again["requests_sent"] == 0
    assert again["results"] == shown["results"]


def test_bad_replies_are_repaired_then_failed_and_reported(server, tmp_path):
    nuggets, truth = _synthetic(tmp_path, seed=1)
    server.malformed = 0.5
    shown = json.loads(
        _invoke(
            "answers",
            str(tmp_path / "nuggets.jsonl"),
            str(tmp_path / "A.jsonl"),
            "--model",
            "m",
            "--format",
            "json",
        )
    )
    expected = np.mean([_expected(ns, truth["A"][q])["all_score"] for q, ns in nuggets.items()])
    assert shown["results"]["A"]["all_score"] == pytest.approx(expected)
    assert shown["requests_sent"] > shown["windows"] and shown["failures"] == {"A": 0}
    server.malformed, server.malformed_repairs = 1.0, True
    result = CliRunner().invoke(
        cli,
        [
            "answers",
            str(tmp_path / "nuggets.jsonl"),
            str(tmp_path / "B.jsonl"),
            "--model",
            "m2",
            "--max-repairs",
            "1",
            "--format",
            "json",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0
    assert "could not be parsed" in result.output
    body = json.loads(result.stdout)
    assert body["failures"]["B"] == body["windows"] > 0
    assert body["results"]["B"]["all_score"] == 0.0  # failed counts as not supported, as nuggetizer


def test_scores_follow_nuggetizer_definitions():
    assert nugget_scores([], []) == dict.fromkeys(
        ("vital_score", "strict_vital_score", "all_score", "strict_all_score"), 0.0
    )
    s = nugget_scores(
        ["support", "partial_support", "not_support", "failed"], ["vital", "vital", "okay", "vital"]
    )
    assert s == {
        "vital_score": 1.5 / 3,
        "strict_vital_score": 1 / 3,
        "all_score": 1.5 / 4,
        "strict_all_score": 1 / 4,
    }
    assert nugget_scores(["support"], ["okay"])["vital_score"] == 0.0


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ('["support", "not_support"]', ["support", "not_support"]),
        ("```python\n['Support', 'partial support']\n```", ["support", "partial_support"]),
        (
            'Thinking [draft]... final: ["not_support","partial_support"]',
            ["not_support", "partial_support"],
        ),
    ],
)
def test_labels_are_parsed(text, labels):
    assert parse_labels(text, 2) == labels


@pytest.mark.parametrize("text", ["support, support", '["support"]', '["yes", "no"]', "[1, 2]"])
def test_bad_label_lists_are_invalid(text):
    with pytest.raises(InvalidAnswer):
        parse_labels(text, 2)


def test_readers_accept_both_answer_forms_and_name_bad_lines(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(
        '{"query_id": "1", "answer": "plain text"}\n{"topic_id": "2", "answer": [{"text": "a"}, {"text": "b"}]}\n'
    )
    assert read_answers(p) == {"1": "plain text", "2": "a b"}
    p.write_text('{"query_id": "1", "answer": "x"}\n{"query_id": "1", "answer": "y"}\n')
    with pytest.raises(FormatError, match=r"s.jsonl, line 2"):
        read_answers(p)
    n = tmp_path / "n.jsonl"
    n.write_text('{"qid": "1", "query": "q", "nuggets": [{"text": "t", "importance": "high"}]}\n')
    with pytest.raises(FormatError, match=r"n.jsonl, line 1.*importance"):
        read_nuggets(n)


def test_freshstack_queries_file_gives_vital_nuggets(tmp_path):
    p = tmp_path / "queries.jsonl"
    p.write_text(
        json.dumps(
            {
                "query_id": "7",
                "query_title": "T",
                "query_text": "body",
                "answer_text": "",
                "nuggets": [
                    {"_id": "7_1", "text": "first", "relevant_corpus_ids": []},
                    {"_id": "7_2", "text": "second", "relevant_corpus_ids": []},
                ],
            }
        )
        + "\n"
    )
    sets = read_nuggets(p)
    assert [(n.text, n.importance) for n in sets["7"].nuggets] == [
        ("first", "vital"),
        ("second", "vital"),
    ]


def test_usage_and_cost_are_in_the_output_and_a_bad_price_is_refused(server, tmp_path):
    _synthetic(tmp_path, seed=2)
    args = ["answers", str(tmp_path / "nuggets.jsonl"), str(tmp_path / "A.jsonl"), "--model", "m"]
    shown = json.loads(_invoke(*args, "--price", "1.5,4", "--format", "json"))
    usage = shown["usage"]
    assert usage["paid_calls"] == shown["requests_sent"] > 0
    # the server reports each message's words as its tokens
    prompt_words = 0
    for e in server.answered("assign"):
        prompt_words += len("\n".join(m["content"] for m in e.body["messages"]).split())
    assert usage["prompt_tokens"] == prompt_words
    expected = (usage["prompt_tokens"] * 1.5 + usage["completion_tokens"] * 4) / 1e6
    assert (
        usage["cost_usd"] == pytest.approx(expected, abs=1e-6) and usage["cost_usd"] > 0
    )  # 6 decimals
    result = CliRunner().invoke(cli, [*args, "--price", "cheap"])
    assert result.exit_code != 0 and "IN,OUT" in str(result.exception or result.output)


def test_fastbook_answer_components_are_the_nuggets(shared_data):
    sets = read_nuggets(shared_data / "fastbook" / "fastbook-benchmark.json")
    assert len(sets) == 191 and sum(len(s.nuggets) for s in sets.values()) == 357
    assert all(n.importance == "vital" for s in sets.values() for n in s.nuggets)


def test_out_names_each_file_it_writes(server, tmp_path):
    """``answers -o`` names every file it writes on stderr, as ``judge -o`` does; the JSON output
    lists them under ``files``."""
    _synthetic(tmp_path)
    out = tmp_path / "o"
    args = ["answers", str(tmp_path / "nuggets.jsonl"), str(tmp_path / "A.jsonl"), "--model", "m"]
    result = CliRunner(env={"COLUMNS": "300"}).invoke(cli, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in out.iterdir())
    assert written == ["answers.json", "assignments.jsonl"]
    named = [line for line in result.stderr.splitlines() if line.startswith("wrote ")]
    assert sorted(line.split()[1] for line in named) == [str(out / n) for n in written]
    assert f"wrote {out / 'answers.json'} (the summary)" in named
    assert f"wrote {out / 'assignments.jsonl'} (every assignment)" in named
    shown = json.loads(_invoke(*args, "-o", str(tmp_path / "j"), "--format", "json"))
    assert shown["files"] == {
        "assignments": str(tmp_path / "j" / "assignments.jsonl"),
        "summary": str(tmp_path / "j" / "answers.json"),
    }
    assert json.loads((tmp_path / "j" / "answers.json").read_text())["files"] == shown["files"]
    assert "files" not in json.loads(_invoke(*args, "--format", "json"))  # nothing written


def test_strict_exits_2_when_answers_stay_unusable(server, tmp_path, capsys):
    """``--strict`` as on ``judge``: the results are still shown and written, then exit 2."""
    from nuggetbench.cli import main

    _synthetic(tmp_path)
    args = ["answers", str(tmp_path / "nuggets.jsonl"), str(tmp_path / "A.jsonl")]
    args += ["--max-repairs", "0", "--no-progress", "--format", "json"]
    assert "files" not in json.loads(_invoke(*args, "--model", "m", "--strict"))  # exit 0
    server.malformed, server.malformed_repairs = 1.0, True
    args += ["--model", "m2"]  # answers of m are cached
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main([*args, "--strict", "-o", str(tmp_path / "o")])
    assert stop.value.code == 2
    shown, err = capsys.readouterr()
    failures = json.loads(shown)["failures"]["A"]
    assert failures > 0 and f"--strict: {failures} answers stayed unusable" in err
    assert (tmp_path / "o" / "assignments.jsonl").exists()  # still written
    assert CliRunner().invoke(cli, args).exit_code == 0  # without --strict: a warning only


def test_average_over_common_leaves_unanswered_questions_out(server, tmp_path):
    """``--average-over common``: B did not answer t2, so the means, the interval and the
    paired test are over the 8 questions both answered (the test equals scipy's on them), and
    the output says so; by default t2 scores 0 for B and the JSON counts it as missing."""
    nuggets, truth = _synthetic(tmp_path)
    args = ["answers", str(tmp_path / "nuggets.jsonl"), str(tmp_path / "A.jsonl")]
    args += [str(tmp_path / "B.jsonl"), "--model", "m", "--format", "json"]
    common = json.loads(_invoke(*args, "--average-over", "common"))
    qids = [q for q in nuggets if truth["B"][q] is not None]
    per = {s: {q: _expected(nuggets[q], truth[s][q]) for q in qids} for s in truth}
    for s in truth:
        for m in ("vital_score", "all_score"):
            assert common["results"][s][m] == pytest.approx(np.mean([per[s][q][m] for q in qids]))
    diff = next(d for d in common["comparison"]["differences"] if d["measure"] == "all_score")
    a, b = [per["A"][q]["all_score"] for q in qids], [per["B"][q]["all_score"] for q in qids]
    assert diff["p_value"] == pytest.approx(ttest_rel(b, a).pvalue)
    assert common["comparison"]["n_queries"] == 8 and common["comparison"]["left_out"] == 1
    assert common["averaging"] == "mean over the 8 questions every system answered; 1 left out"
    every = json.loads(_invoke(*args))
    assert every["comparison"]["n_queries"] == 9 and every["comparison"]["missing"]["B"] == 1
    assert (
        every["averaging"] == "mean over 9 questions; unanswered, scored 0 (an empty answer): B 1"
    )
