"""Sliding windows, permutation repair and grade reading (``nuggetbench.llm.rankout``)."""

from __future__ import annotations

import math
import random

import pytest

from nuggetbench.errors import InputError
from nuggetbench.llm.jsonout import InvalidAnswer
from nuggetbench.llm.rankout import (
    Scale,
    expected_grade,
    parse_answer_grade,
    parse_permutation,
    parse_scale,
    sliding_windows,
)


def test_window_schedule_equals_rank_llm_for_k100_w20_step10():
    # Expected schedule written from castorini/rank_llm,
    # src/rank_llm/rerank/listwise/listwise_rankllm.py, ListwiseRankLLM._sliding_windows_batched_async
    # (and ListwiseRankLLM.sliding_windows, which gives the same windows here): the first window
    # is [end - window, end) with end = min(rank_end, #candidates); each next one is
    # [max(start - stride, rank_start), end - stride), and the one starting at rank_start is last.
    expected = [
        (80, 100),
        (70, 90),
        (60, 80),
        (50, 70),
        (40, 60),
        (30, 50),
        (20, 40),
        (10, 30),
        (0, 20),
    ]
    assert sliding_windows(100, window=20, step=10, k=100) == expected
    assert sliding_windows(250, window=20, step=10, k=100) == expected  # the top k only


@pytest.mark.parametrize(
    "n, k, window, step, expected",
    [
        # same reading of rank_llm: fewer candidates than k clip the first window's end
        (30, 100, 20, 10, [(10, 30), (0, 20)]),
        (25, 100, 20, 10, [(5, 25), (0, 15)]),
        (15, 100, 20, 10, [(0, 15)]),  # window_size = min(window, candidates)
        (20, 100, 20, 10, [(0, 20)]),
        (100, 100, 20, 20, [(80, 100), (60, 80), (40, 60), (20, 40), (0, 20)]),
        (10, 10, 4, 3, [(6, 10), (3, 7), (0, 4)]),
        (0, 100, 20, 10, []),
    ],
)
def test_window_schedule_small_cases(n, k, window, step, expected):
    assert sliding_windows(n, window=window, step=step, k=k) == expected


def test_window_schedule_properties_on_random_sizes():
    rng = random.Random(7)
    for _ in range(300):
        window = rng.randint(1, 30)
        step = rng.randint(1, window)
        n, k = rng.randint(1, 150), rng.randint(1, 150)
        wins = sliding_windows(n, window=window, step=step, k=k)
        top = min(n, k)
        assert wins[0][1] == top and wins[-1][0] == 0
        assert all(e - s == min(window, top) or s == 0 for s, e in wins)
        assert set().union(*(range(s, e) for s, e in wins)) == set(range(top))
        for (s1, e1), (s2, e2) in zip(wins, wins[1:]):
            assert e2 == e1 - step and s2 == max(s1 - step, 0) and s1 > 0


def test_window_schedule_refuses_a_step_above_the_window():
    with pytest.raises(InputError, match="0 < step <= window"):
        sliding_windows(100, window=10, step=11)
    with pytest.raises(InputError):
        sliding_windows(100, window=10, step=0)


@pytest.mark.parametrize(
    "answer, n, order, unknown, dup, missing",
    [
        ("[3] > [1] > [2]", 3, (2, 0, 1), 0, 0, 0),
        ("[2] > [2] > [1] > [3]", 3, (1, 0, 2), 0, 1, 0),  # repeated id dropped
        ("[4] > [1] > [7] > [3] > [2]", 4, (3, 0, 2, 1), 1, 0, 0),  # unknown id dropped
        ("[3] > [1]", 4, (2, 0, 1, 3), 0, 0, 2),  # missing ones appended in order
        ("[3] > [3] > [9] > [1]", 4, (2, 0, 1, 3), 1, 1, 2),
        ("I cannot rank these.", 3, (0, 1, 2), 0, 0, 3),  # nothing usable: incoming order
        ("<think>[1] > [2] first?</think> [2] > [3] > [1]", 3, (1, 2, 0), 0, 0, 0),
        ("[②] > [①] > [３]", 3, (1, 0, 2), 0, 0, 0),  # circled and full-width digits
        ("[0] > [2] > [1]", 2, (1, 0), 1, 0, 0),  # [0] names no passage
        ("[12] > [10] > [11]", 12, (11, 9, 10, *range(9)), 0, 0, 9),
    ],
)
def test_permutation_repair_as_rank_llm(answer, n, order, unknown, dup, missing):
    perm = parse_permutation(answer, n)
    assert perm.order == order
    assert (perm.unknown, perm.duplicates, perm.missing) == (unknown, dup, missing)
    assert perm.repaired == bool(unknown or dup or missing)
    assert sorted(perm.order) == list(range(n))


def test_random_answers_always_repair_to_a_permutation():
    rng = random.Random(3)
    for _ in range(500):
        n = rng.randint(1, 25)
        ids = [rng.randint(0, n + 5) for _ in range(rng.randint(0, 2 * n))]
        text = rng.choice([" > ", ", ", " "]).join(f"[{i}]" for i in ids)
        perm = parse_permutation(text, n)
        assert sorted(perm.order) == list(range(n))
        distinct = list(dict.fromkeys(ids))
        kept = [i - 1 for i in distinct if 1 <= i <= n]
        assert list(perm.order[: len(kept)]) == kept
        assert perm.duplicates == len(ids) - len(distinct)
        assert perm.unknown == len(distinct) - len(kept)
        assert perm.missing == n - len(kept)


def test_scale_and_grades():
    s = parse_scale("0-3")
    assert s == Scale(0, 3) and list(s.grades) == [0, 1, 2, 3] and str(s) == "0-3"
    assert parse_scale(" 1 - 5 ") == Scale(1, 5)
    for bad in ("3-1", "0", "a-b", "0-101", "2-2"):
        with pytest.raises(InputError, match="LOW-HIGH"):
            parse_scale(bad)
    assert parse_answer_grade("2", s) == 2
    assert parse_answer_grade("Grade: 3.", s) == 3
    assert parse_answer_grade("<think>maybe 1 or 0</think>\n0", s) == 0
    with pytest.raises(InvalidAnswer, match="outside the scale"):
        parse_answer_grade("7", s)
    with pytest.raises(InvalidAnswer, match="no grade"):
        parse_answer_grade("quite relevant", s)


def test_expected_grade_is_hand_computed():
    s = Scale(0, 3)
    lp = [["2", math.log(0.6)], [" 3", math.log(0.2)], ["1", math.log(0.1)], ["The", math.log(0.1)]]
    # renormalised over the grades present: (2*0.6 + 3*0.2 + 1*0.1) / 0.9
    assert expected_grade(lp, s) == pytest.approx((1.2 + 0.6 + 0.1) / 0.9)
    assert expected_grade([["yes", -0.1]], s) is None
    assert expected_grade([], s) is None
    assert expected_grade([["0", 0.0]], s) == 0.0
