"""Ask many JSON questions, re-asking (a repair turn in the same conversation) on invalid answers.

Round 0 sends every request; each answer that the validator rejects is followed by a repair turn
(the bad answer as the assistant's message, then a user message naming the problem and the
expected form), up to ``max_repairs`` rounds. A repair request differs from the first one, so it
has its own cache entry: a resumed build replays all rounds from the cache for free.

An item whose every round was rejected is a failure, and failures are never cached as results:
the answers of its rounds are removed from the cache (:meth:`~.client.LLMClient.forget`), so the
next run sends its first request again rather than replaying the unusable answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from nuggetbench.llm.client import ChatRequest, LLMClient
from nuggetbench.llm.jsonout import InvalidAnswer

T = TypeVar("T")


def ask_validated(
    client: LLMClient,
    requests: Sequence[ChatRequest],
    validate: Callable[[str], T],
    *,
    max_repairs: int,
    expected: str,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[T | None], list[str | None]]:
    """Answer *requests*, validating each answer, re-asking the invalid ones.

    Args:
        client: the LLM client.
        requests: one request per item.
        validate: ``text -> value``; raises :class:`~.jsonout.InvalidAnswer` on a bad answer.
        max_repairs: repair rounds after the first answer.
        expected: the reply form, quoted in the repair message (e.g. ``{"nuggets": [...]}``).
        progress: advanced once per item when it is settled (valid, or out of repairs).

    Returns:
        ``(values, errors)``: per item the validated value (``None`` when every round failed) and
        the last error message (``None`` when valid). The cached answers of the failed items are
        removed from the client's cache.
    """
    values: list[T | None] = [None] * len(requests)
    errors: list[str | None] = [None] * len(requests)
    chains: dict[int, list[str]] = {i: [] for i in range(len(requests))}
    current = {i: req for i, req in enumerate(requests)}
    for round_no in range(max_repairs + 1):
        if not current:
            break
        order = sorted(current)
        results = client.complete_many([current[i] for i in order])
        retry: dict[int, ChatRequest] = {}
        for i, res in zip(order, results):
            chains[i].append(res.key)
            try:
                values[i] = validate(res.text)
                errors[i] = None
                if progress:
                    progress(1)
            except InvalidAnswer as exc:
                errors[i] = str(exc)
                if round_no == max_repairs:
                    if progress:
                        progress(1)
                    continue
                req = current[i]
                messages = (
                    *req.messages,
                    {"role": "assistant", "content": res.text},
                    {
                        "role": "user",
                        "content": f"Your reply could not be used: {exc}. Reply again "
                        f"with only a JSON object of the form {expected}.",
                    },
                )
                retry[i] = replace(req, messages=messages)
        current = retry
    client.forget([k for i, keys in chains.items() if values[i] is None for k in keys])
    return values, errors


__all__ = ["ask_validated", "InvalidAnswer"]
