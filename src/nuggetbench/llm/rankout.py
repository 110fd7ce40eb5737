"""Reading ranking answers: the sliding-window schedule, permutations and relevance grades.

* :func:`sliding_windows`: RankGPT's schedule (Sun et al., 2023, "Is ChatGPT Good at Search?"),
  as castorini's rank_llm runs it (``ListwiseRankLLM._sliding_windows_batched_async`` in
  ``src/rank_llm/rerank/listwise/listwise_rankllm.py``): windows of ``window`` documents moving
  from the bottom of the top ``k`` to the top by ``step``;
* :func:`parse_permutation`: a listwise answer (``[3] > [1] > [2]``) read and repaired as rank_llm's
  ``receive_permutation`` does (same file), with every repair counted;
* :func:`parse_answer_grade` / :func:`expected_grade`: a pointwise answer read as a grade on a
  stated scale, or the expected grade from the first answer token's log-probabilities (a grade
  in a judgments file is :func:`nuggetbench.data.source.parse_grade`'s).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nuggetbench.errors import InputError
from nuggetbench.llm.jsonout import InvalidAnswer

__all__ = [
    "Permutation",
    "Scale",
    "expected_grade",
    "parse_answer_grade",
    "parse_permutation",
    "parse_scale",
    "sliding_windows",
]


def sliding_windows(
    n: int, *, window: int, step: int, k: int | None = None
) -> list[tuple[int, int]]:
    """The windows ``(start, end)`` (0-based, end exclusive) reranked in order, bottom first.

    Args:
        n: candidates available for the query.
        window: documents per window (``w``).
        step: how far the window moves up each time (rank_llm's ``stride``), ``0 < step <= window``.
        k: rerank the top *k* only (default: all *n*).

    The first window ends at ``min(k, n)`` and starts ``window`` above it (not above 0); each next
    window moves up by *step* (start clipped at 0); the window that starts at 0 is the last. For
    ``n = k = 100, window = 20, step = 10``: ``(80, 100), (70, 90), ..., (0, 20)``, nine windows.

    Raises:
        InputError: *window* < 1, or *step* outside ``1..window`` (a step above the window would
            leave documents never seen, which rank_llm refuses too).
    """
    if window < 1 or step < 1 or step > window:
        raise InputError(
            f"sliding window: need window >= 1 and 0 < step <= window, got window={window}, "
            f"step={step}"
        )
    end = min(n, k if k is not None else n)
    start = max(end - min(window, end), 0)
    out: list[tuple[int, int]] = []
    while end > start:
        out.append((start, end))
        if start == 0:
            break
        end -= step
        start = max(start - step, 0)
    return out


@dataclass(frozen=True)
class Permutation:
    """A listwise answer read and repaired as rank_llm does, with what was repaired counted.

    Attributes:
        order: 0-based positions, best first; always a permutation of ``range(n)``.
        unknown: distinct ids in the answer that name no passage (dropped).
        duplicates: ids repeated in the answer (later copies dropped).
        missing: passages the answer left out (appended in their incoming order).
        named: distinct passages the answer names (``0``: no usable ranking).
    """

    order: tuple[int, ...]
    unknown: int = 0
    duplicates: int = 0
    missing: int = 0
    named: int = -1

    def __post_init__(self) -> None:
        if self.named < 0:  # not given: every passage not missing was named
            object.__setattr__(self, "named", len(self.order) - self.missing)

    @property
    def repaired(self) -> bool:
        """Whether the answer needed any repair."""
        return bool(self.unknown or self.duplicates or self.missing)

    @property
    def usable(self) -> bool:
        """Whether the answer ranks at least one passage of the window: a partial or repeated
        ranking is usable once repaired; prose, or ids that name no passage, is not (rank_llm
        then keeps the incoming order; nuggetbench re-asks first)."""
        return self.named > 0


#: rank_llm's ``fake_numbers_map`` (``clean_ranking_response`` in
#: ``src/rank_llm/rerank/listwise/response_utils.py``): superscript, subscript, circled, negative
#: circled, full-width and "digit full stop" digits, read as their ASCII digits.
_FAKE_DIGITS = str.maketrans(
    "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
    "\u2080\u2081\u2082\u2083\u2084\u2085\u2086\u2087\u2088\u2089"
    "\u2460\u2461\u2462\u2463\u2464\u2465\u2466\u2467\u2468"
    "\u2776\u2777\u2778\u2779\u277a\u277b\u277c\u277d\u277e"
    "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19"
    "\U0001f100\U0001f101\U0001f102\U0001f103\U0001f104"
    "\U0001f105\U0001f106\U0001f107\U0001f108\U0001f109",
    "0123456789012345678912345678912345678901234567890123456789",
)


def _ascii_digits(text: str, other: str | None = None) -> str:
    """Every character that is a digit in any script (superscripts, circled and full-width digits
    included) as its ASCII digit; every other character kept, or replaced by *other*."""
    out = []
    for ch in text:
        d = unicodedata.digit(ch, None)
        out.append(str(d) if d is not None else (ch if other is None else other))
    return "".join(out)


def parse_permutation(text: str, n: int) -> Permutation:
    """Read a listwise answer naming passages ``[1]..[n]`` and repair it as rank_llm does.

    castorini/rank_llm, ``src/rank_llm/rerank/listwise/``: ``clean_ranking_response``
    (``response_utils.py``: the text after the last ``</think>``; superscript, circled and
    full-width digits mapped to ASCII; every other non-digit character a space) and
    ``ListwiseRankLLM.receive_permutation`` with ``_remove_duplicate`` (``listwise_rankllm.py``):
    every run of digits is an id (1-based); repeated ids are dropped (the first kept), then ids
    outside ``1..n``; the passages not named follow in their incoming order. An answer with no
    id, or a digit run that is not a number (rank_llm's ``except`` branch), keeps the incoming
    order (``named == 0``: not :attr:`~Permutation.usable`).

    Returns:
        A :class:`Permutation` with the repairs counted.
    """
    if "</think>" in text:
        text = text.split("</think>")[-1].strip()
    cleaned = "".join(c if c.isdigit() else " " for c in text.translate(_FAKE_DIGITS))
    try:
        ids = [int(tok) - 1 for tok in cleaned.split()]
    except ValueError:  # a digit with no integer value (rank_llm: the incoming order)
        return Permutation(tuple(range(n)), 0, 0, n, 0)
    seen = list(dict.fromkeys(ids))
    known = [i for i in seen if 0 <= i < n]
    named = set(known)
    rest = [i for i in range(n) if i not in named]
    return Permutation(
        tuple(known + rest), len(seen) - len(known), len(ids) - len(seen), len(rest), len(known)
    )


@dataclass(frozen=True)
class Scale:
    """An integer grade scale ``low..high`` (``0-3``)."""

    low: int
    high: int

    @property
    def grades(self) -> range:
        return range(self.low, self.high + 1)

    def __str__(self) -> str:
        return f"{self.low}-{self.high}"


def parse_scale(text: str, *, where: str = "scale") -> Scale:
    """``"0-3"`` -> ``Scale(0, 3)``.

    Raises:
        InputError: not ``LOW-HIGH`` with integers ``0 <= LOW < HIGH <= 100``.
    """
    m = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", str(text))
    if m is None or not int(m.group(1)) < int(m.group(2)) <= 100:
        raise InputError(
            f"{where}: {text!r} is not a grade scale; write LOW-HIGH with integers, e.g. 0-3"
        )
    return Scale(int(m.group(1)), int(m.group(2)))


def parse_answer_grade(text: str, scale: Scale) -> int:
    """The grade of a pointwise answer, read strictly: after the last ``</think>``, with the
    scale itself (``0-3``, ``0 to 3``, ``out of 3``, ``/3``) taken out, the answer must hold
    exactly one number, an integer on the scale (``3``, ``Grade: 3``, ``Relevance (0-3): 3``).

    Raises:
        InvalidAnswer: no number, several different numbers (``"3 reasons, so 1"``), a fraction,
            or a grade outside the scale: the answer is then re-asked, never guessed.
    """
    if "</think>" in text:
        text = text.split("</think>")[-1]
    t = _ascii_digits(text)
    low, high = scale.low, scale.high
    t = re.sub(rf"(?<![\d.]){low}\s*(?:-|\u2013|\u2014|to)\s*{high}(?![\d.]*\d)", " ", t)
    t = re.sub(rf"(?:out\s+of|/)\s*{high}(?![\d.]*\d)", " ", t)
    numbers = re.findall(r"\d+(?:\.\d+)?", t)
    if not numbers:
        raise InvalidAnswer(f"the answer holds no grade from {low} to {high}")
    values = {float(n) for n in numbers}
    if len(values) > 1:
        raise InvalidAnswer(
            f"the answer holds several numbers ({', '.join(sorted(set(numbers)))}), not one grade"
        )
    value = values.pop()
    if value != int(value):
        raise InvalidAnswer(f"{numbers[0]} is not a whole grade from {low} to {high}")
    grade = int(value)
    if grade not in scale.grades:
        raise InvalidAnswer(f"grade {grade} is outside the scale {low} to {high}")
    return grade


def expected_grade(
    top_logprobs: Iterable[Sequence], scale: Scale, *, chosen: str | None = None
) -> float | None:
    """The expected grade ``sum_g g * p(g) / sum_g p(g)`` over the grades among the first answer
    token's alternatives ``[(token, logprob), ...]`` (tokens compared after stripping spaces;
    the probabilities renormalised over the grades present). ``None`` when no alternative is a
    grade of *scale*, or when the token the model *chosen* is not a grade (an answer starting
    ``Grade: 3`` says nothing through the unlikely grade tokens among the alternatives of
    ``Grade``); the answer text is then read with :func:`parse_answer_grade`.

    The expected relevance of a graded judgment from token probabilities, as in pointwise LLM
    rankers (Zhuang et al., 2024, "Beyond Yes and No: Improving Zero-Shot LLM Rankers via
    Scoring Fine-Grained Relevance Labels").
    """
    probs: dict[int, float] = {}
    grades = {str(g): g for g in scale.grades}
    if chosen is not None and str(chosen).strip() not in grades:
        return None
    for token, logprob in top_logprobs:
        g = grades.get(str(token).strip())
        if g is not None and logprob is not None and math.isfinite(float(logprob)):
            probs[g] = probs.get(g, 0.0) + math.exp(float(logprob))
    total = sum(probs.values())
    if not probs or total <= 0:
        return None
    return sum(g * p for g, p in probs.items()) / total
