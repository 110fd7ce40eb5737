"""The LLM client of the judging commands: settings from options and the environment."""

from __future__ import annotations

import os

from nuggetbench import home as _home
from nuggetbench.errors import InputError
from nuggetbench.llm.client import ENV_MODEL, LLMClient, LLMSettings

__all__ = ["judging_client", "parse_price"]


def parse_price(text: str) -> tuple[float, float]:
    """``"2.5,10"`` -> ``(2.5, 10.0)``: USD per million input and output tokens.

    Raises:
        InputError: not two numbers >= 0 separated by a comma.
    """
    parts = [p.strip() for p in text.split(",")]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 2 or min(values) < 0:
        raise InputError(
            f"--price {text!r}: give USD per million input and output tokens as IN,OUT, e.g. 2.5,10"
        )
    return values[0], values[1]


def judging_client(
    model: str | None,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    no_api_key: bool = False,
    concurrency: int = 4,
    timeout: float | None = None,
    max_retries: int | None = None,
    price: tuple[float, float] | str | None = None,
    max_calls: int | None = None,
    max_reply_chars: int | None = None,
    no_cache: bool = False,
) -> LLMClient:
    """A client for *model* (else ``NUGGETBENCH_LLM_MODEL``) at *base_url* (else
    ``NUGGETBENCH_LLM_BASE_URL`` / ``OPENAI_BASE_URL``), caching every answer in
    ``<home>/cache/llm/cache.sqlite`` (shared with the rerankers and the builder). The key is read
    from the environment variable *api_key_env* by the client and never written anywhere;
    *no_api_key* states that the server needs none (none is sent).

    *price* is USD per million ``(input, output)`` tokens, or the text ``"IN,OUT"``; *timeout*
    (seconds for one whole request), *max_retries* and *max_reply_chars* (the longest reply
    kept) default to :class:`LLMSettings`'s. *no_cache* sends every request again instead of
    serving answers cached before (the new answers replace them); the cache is keyed by the
    endpoint as well as the request, so another server is always asked anew.

    Raises:
        InputError: no model named; a bad price; a bad setting.
    """
    if isinstance(price, str):
        price = parse_price(price)
    if not (model or os.environ.get(ENV_MODEL)):
        raise InputError(f"no LLM model: give --model NAME or set {ENV_MODEL}")
    settings = LLMSettings.from_env(
        model=model or None,
        base_url=base_url or None,
        api_key_env=api_key_env,
        no_api_key=no_api_key or None,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
        price=price,
        max_calls=max_calls,
        max_reply_chars=max_reply_chars,
    )
    return LLMClient(settings, _home.cache_dir("llm") / "cache.sqlite", read_cache=not no_cache)
