"""A deadline for a whole call: :func:`call_within`.

HTTP clients bound each socket operation (connect, each read), not a request: a server that
trickles one byte every quarter second keeps a client with a 2 s timeout waiting as long as it
likes. :func:`call_within` runs the call in a daemon thread and stops waiting
at the deadline; the abandoned call ends on its own (its socket reads keep their own timeout) and
its result is dropped, so nothing it returns late is used or cached.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["DeadlineExceeded", "call_within"]

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """The call did not finish within its deadline."""


def call_within(fn: Callable[[], T], seconds: float) -> T:
    """``fn()``, or :class:`DeadlineExceeded` when it has not returned after *seconds*.

    Args:
        fn: the call (no arguments); its exception is raised here as it was raised there.
        seconds: the deadline, > 0.

    Raises:
        DeadlineExceeded: *seconds* passed first (the call goes on in its thread; its result or
            error is dropped).
    """
    box: dict[str, object] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="nuggetbench-llm-request", daemon=True).start()
    if not done.wait(seconds):
        raise DeadlineExceeded(f"no answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
