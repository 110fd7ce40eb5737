"""Ask many JSON questions, re-asking (a repair turn in the same conversation) on invalid answers.

Round 0 sends every request; each answer that the validator rejects is followed by a repair turn
(the bad answer as the assistant's message, then a user message naming the problem and the
expected form), up to ``max_repairs`` rounds. A repair request differs from the first one, so it
has its own cache entry: a resumed build replays all rounds from the cache for free.

A reply cut at ``max_reply_chars`` (:attr:`~.client.ChatResult.reply_chars`) is rejected without
being read (its start is not the answer), and its repair turn repeats only its beginning
(:meth:`~.client.ChatResult.echo`).

An item whose every round was rejected is a failure, and failures are never cached as results:
the answers of its rounds are removed from the cache (:meth:`~.client.LLMClient.forget`), so the
next run sends its first request again rather than replaying the unusable answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from nuggetbench.llm.client import ChatRequest, ChatResult, LLMClient
from nuggetbench.llm.jsonout import InvalidAnswer

T = TypeVar("T")


@dataclass(frozen=True)
class Asked:
    """What :func:`ask` got for one request.

    Attributes:
        value: the validated value, ``None`` when every round was rejected.
        error: the last rejection's message (``None`` when valid).
        reply: the text of the last answer (when it was cut at ``max_reply_chars``: its first
            characters and a note, :meth:`~.client.ChatResult.echo`).
        attempts: requests made (1 + repair turns).
        cached: whether the first answer came from the cache.
        reply_chars: the last answer's full length when it was cut, else ``None``.
    """

    value: Any
    error: str | None
    reply: str
    attempts: int
    cached: bool
    reply_chars: int | None = None


def ask(
    client: LLMClient,
    requests: Sequence[ChatRequest],
    validate: Callable[[str], Any] | Sequence[Callable[[str], Any]],
    *,
    max_repairs: int,
    instruction: str | Sequence[str],
    progress: Callable[[int], None] | None = None,
    progress_on: str = "settled",
) -> list[Asked]:
    """Answer *requests*, validating each answer, re-asking the rejected ones: the one request,
    parsing, retry and caching loop of every LLM step (judgments, nuggets, answers, rewrites).

    Round 0 sends every request (through *client*: cache, retries, concurrency, usage); an
    answer that its validator rejects (:class:`~.jsonout.InvalidAnswer`) is followed by a repair
    turn in the same conversation, the bad answer then ``"Your reply could not be used:
    <problem>. <instruction>"``, up to *max_repairs* rounds. The answers of an item rejected in
    every round are removed from the cache (:meth:`~.client.LLMClient.forget`).

    Args:
        client: the LLM client.
        requests: one request per item.
        validate: ``text -> value`` (one for all items, or one per item); raises
            :class:`~.jsonout.InvalidAnswer` on a bad answer.
        max_repairs: repair rounds after the first answer.
        instruction: what the repair message asks for (one for all items, or one per item).
        progress: advanced once per item: when it is settled (``progress_on="settled"``: valid,
            or out of repairs) or when its first answer arrives (``"sent"``).

    Returns:
        One :class:`Asked` per request, in order.
    """
    n = len(requests)
    checks = [validate] * n if callable(validate) else list(validate)
    notes = [instruction] * n if isinstance(instruction, str) else list(instruction)
    values: list[Any] = [None] * n
    errors: list[str | None] = [None] * n
    replies = [""] * n
    lengths: list[int | None] = [None] * n
    attempts = [0] * n
    cached = [False] * n
    chains: dict[int, list[str]] = {i: [] for i in range(n)}
    current = {i: req for i, req in enumerate(requests)}
    for round_no in range(max_repairs + 1):
        if not current:
            break
        order = sorted(current)
        sent = progress if progress_on == "sent" and round_no == 0 else None
        results = client.complete_many([current[i] for i in order], progress=sent)
        retry: dict[int, ChatRequest] = {}
        for i, res in zip(order, results):
            chains[i].append(res.key)
            replies[i], lengths[i] = res.echo(), res.reply_chars
            attempts[i] += 1
            cached[i] = cached[i] if round_no else res.cached
            try:
                check_length(res, client.settings.max_reply_chars)
                values[i] = checks[i](res.text)
                errors[i] = None
            except InvalidAnswer as exc:
                errors[i] = str(exc)
                if round_no < max_repairs:
                    retry[i] = _repair(current[i], res.echo(), str(exc), notes[i])
            if progress and progress_on == "settled" and i not in retry:
                progress(1)
        current = retry
    failed = [i for i in range(n) if errors[i] is not None]
    for i in failed:  # the progress bars count them as failed
        client.ledger.note_unusable(requests[i].stage)
    client.forget([k for i in failed for k in chains[i]])
    return [
        Asked(values[i], errors[i], replies[i], attempts[i], cached[i], lengths[i])
        for i in range(n)
    ]


def check_length(result: ChatResult, cap: int) -> None:
    """Reject a reply that was cut at *cap* characters (``max_reply_chars``).

    Raises:
        InvalidAnswer: naming its length and the cap.
    """
    if result.reply_chars is not None:
        raise InvalidAnswer(
            f"the reply was {result.reply_chars:,} characters long, over max_reply_chars = "
            f"{cap:,}; it was cut and not read"
        )


def _repair(request: ChatRequest, answer: str, problem: str, instruction: str) -> ChatRequest:
    """*request* continued by the rejected *answer* and a user turn naming the problem."""
    turn = (
        {"role": "assistant", "content": answer},
        {"role": "user", "content": f"Your reply could not be used: {problem}. {instruction}"},
    )
    return replace(request, messages=(*request.messages, *turn))


def ask_validated(
    client: LLMClient,
    requests: Sequence[ChatRequest],
    validate: Callable[[str], T],
    *,
    max_repairs: int,
    expected: str,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[T | None], list[str | None]]:
    """:func:`ask` for JSON answers: ``(values, errors)`` per item, the repair message asking for
    "only a JSON object of the form *expected*"; *progress* advanced as each item's first answer
    arrives (a bar that moves while the batch is answered, not when it ends)."""
    asked = ask(
        client,
        requests,
        validate,
        max_repairs=max_repairs,
        instruction=f"Reply again with only a JSON object of the form {expected}.",
        progress=progress,
        progress_on="sent",
    )
    return [a.value for a in asked], [a.error for a in asked]


__all__ = ["Asked", "ask", "ask_validated", "check_length", "InvalidAnswer"]
