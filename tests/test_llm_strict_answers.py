"""LLM answers read strictly (issue 29, cases 2-6): an answer that does not carry what the prompt
asked for is re-asked, then a failure; never a guess, never a cached final answer."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from llm_server import LLMServer
from nuggetbench.cli import cli
from nuggetbench.judging import parse_final_score
from nuggetbench.llm.client import ChatResult
from nuggetbench.llm.jsonout import InvalidAnswer
from nuggetbench.llm.rankout import Scale, expected_grade, parse_answer_grade
from nuggetbench.retrieval import parse_retriever

S = Scale(0, 3)


@pytest.mark.parametrize(
    "text",
    [
        "Step two: 3 facts are missing, so I cannot grade this passage.",  # matched 'o: 3'
        "Analysis:\n1. The passage names the turbine.\n2. It does not say how.",  # read as 1
        "Category 1 and 2 both fit.",
    ],
)
def test_judge_prose_with_numbers_is_not_a_grade(text):
    with pytest.raises(InvalidAnswer):
        parse_final_score(text)


@pytest.mark.parametrize(
    ("text", "grade"),
    [("O: 2", 2), ("Reasoning first.\n2\n", 2), ('{"o": 1}', 1), ("category 3.", 3)],
)
def test_umbrela_fallbacks_still_read(text, grade):
    assert parse_final_score(text) == grade


@pytest.mark.parametrize(
    ("text", "grade"),
    [
        ("Relevance (0-3): 3", 3),  # was 0, the first integer
        ("Grade: 3", 3),
        ("**2**", 2),
        ("I would say 2 out of 3.", 2),
        ("<think>1 or 2?</think> 1", 1),
    ],
)
def test_a_pointwise_grade_is_the_only_number_besides_the_scale(text, grade):
    assert parse_answer_grade(text, S) == grade


@pytest.mark.parametrize("text", ["3 reasons make it a 1", "2.5", "grade 7", "none", "1, 2 or 3"])
def test_ambiguous_pointwise_answers_are_re_asked(text):
    with pytest.raises(InvalidAnswer):
        parse_answer_grade(text, S)


def test_log_probabilities_count_only_when_the_chosen_token_is_a_grade():
    top = [["Grade", -0.01], ["3", -6.0], ["0", -5.0]]
    assert expected_grade(top, S, chosen="Grade") is None
    assert expected_grade(top, S) == pytest.approx((3 * 2.4788e-3) / (2.4788e-3 + 6.7379e-3), 1e-3)
    reranker = parse_retriever("llm_pointwise(model=m,k=5)")
    # case 4: every passage scored 0.119 from the alternatives of "Grade"; now the text's 3
    for extra in ({"top_logprobs": top, "token": "Grade"}, {"top_logprobs": top}):
        answer = ChatResult("Grade: 3", 1, 1, False, "k", extra)
        assert reranker.grade(answer) == (3.0, False)
    good = [["2", -0.36], ["1", -1.5], ["3", -2.0]]
    value, from_logprobs = reranker.grade(ChatResult("2", 1, 1, False, "k", {"top_logprobs": good}))
    assert from_logprobs and 1.5 < value < 2.5


# --- failures are reported and never remembered (cases 2 and 3), against a loopback server ---
def _tiny(tmp_path):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    docs = {
        "d1": "turbine blades spin clockwise",
        "d2": "widgets frobnicate levels",
        "d3": "pancakes tunnel barriers",
        "d4": "turbine widgets install",
    }
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in docs.items())
    )
    queries = {"q1": "turbine blades", "q2": "widgets frobnicate"}
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items())
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t2\nq2\td4\t1\n"
    )
    return folder


@pytest.mark.parametrize(
    "spec",
    [
        "bm25 >> llm_listwise(model=m,k=4,window=3,step=1)",
        "bm25 >> llm_pointwise(model=m,k=4,logprobs=false)",
    ],
)
def test_unusable_answers_are_reported_and_asked_again_once_the_server_is_fixed(
    spec, tmp_path, monkeypatch
):
    folder = _tiny(tmp_path)
    with LLMServer(hang_seconds=5) as srv:
        monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", srv.base_url)
        srv.malformed, srv.malformed_repairs = 1.0, True  # prose or broken answers, re-asks too
        srv.malformed_kinds = ("prose",)  # a partial ranking is repaired, not unusable (issue 37)
        args = ["run", str(folder), "-r", spec, "-m", "nDCG@10", "--no-progress"]
        bad = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "a"), "--strict"])
        assert bad.exit_code != 0 and "--strict" in str(bad.exception)
        assert "LLM answers stayed unusable" in " ".join(bad.output.split())  # the warning
        saved = json.loads((tmp_path / "a" / "results.json").read_text())
        (system,) = saved["systems"].values()
        assert system["run_metadata"]["llm"]["failed"] > 0  # the system is marked
        # the server is fixed: the run is not replayed from either cache, the requests go out
        srv.malformed = 0.0
        sent = len(srv.log)
        good = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "b"), "--strict"])
        assert good.exit_code == 0, good.output
        assert len(srv.log) > sent
        fixed = json.loads((tmp_path / "b" / "results.json").read_text())
        (system,) = fixed["systems"].values()
        assert system["run_metadata"]["llm"]["failed"] == 0
        assert "cached" not in system["run_metadata"]
        # and now a usable run is cached: a third run sends nothing
        sent = len(srv.log)
        again = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "c")])
        assert again.exit_code == 0 and len(srv.log) == sent


def test_judge_strict_fails_on_unusable_answers(tmp_path, monkeypatch):
    folder = _tiny(tmp_path)
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d3 1 2 t\nq1 Q0 d4 2 1 t\n")  # two unjudged documents: two holes
    with LLMServer(hang_seconds=5) as srv:
        monkeypatch.setenv("NUGGETBENCH_LLM_BASE_URL", srv.base_url)
        srv.malformed, srv.malformed_repairs = 1.0, True
        args = ["judge", str(folder), str(run), "--model", "m", "--no-api-key", "--depth", "2"]
        lenient = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "a"), "--format", "json"])
        assert lenient.exit_code == 0, lenient.output
        assert json.loads(lenient.stdout)["judge"]["failures"] == 2
        strict = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "b"), "--strict"])
        assert strict.exit_code != 0 and "--strict: 2 answers" in str(strict.exception)
        assert (tmp_path / "b" / "qrels.txt").exists()  # still written
