"""LLM answers read strictly (issue 29, cases 2-6): an answer that does not carry what the prompt
asked for is re-asked, then a failure; never a guess, never a cached final answer."""

from __future__ import annotations

import pytest

from nuggetbench.judging import parse_final_score
from nuggetbench.llm.client import ChatResult
from nuggetbench.llm.jsonout import InvalidAnswer
from nuggetbench.llm.rankout import Scale, expected_grade, parse_grade
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
    assert parse_grade(text, S) == grade


@pytest.mark.parametrize("text", ["3 reasons make it a 1", "2.5", "grade 7", "none", "1, 2 or 3"])
def test_ambiguous_pointwise_answers_are_re_asked(text):
    with pytest.raises(InvalidAnswer):
        parse_grade(text, S)


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
