"""The LLM client of the judging commands: settings from options and the environment."""

from __future__ import annotations

import os

from .. import home as _home
from ..errors import InputError
from ..llm.client import ENV_MODEL, LLMClient, LLMSettings

__all__ = ["judging_client"]


def judging_client(
    model: str | None,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    concurrency: int = 4,
    max_retries: int | None = None,
    price: tuple[float, float] | None = None,
    max_calls: int | None = None,
) -> LLMClient:
    """A client for *model* (else ``NUGGETBENCH_LLM_MODEL``) at *base_url* (else
    ``NUGGETBENCH_LLM_BASE_URL`` / ``OPENAI_BASE_URL``), caching every answer in
    ``<home>/cache/llm/cache.sqlite`` (shared with the rerankers and the builder). The key is read
    from the environment variable *api_key_env* by the client and never written anywhere.

    Raises:
        InputError: no model named; a bad setting.
    """
    if not (model or os.environ.get(ENV_MODEL)):
        raise InputError(f"no LLM model: give --model NAME or set {ENV_MODEL}")
    settings = LLMSettings.from_env(
        model=model or None,
        base_url=base_url or None,
        api_key_env=api_key_env,
        concurrency=concurrency,
        max_retries=max_retries,
        price=price,
        max_calls=max_calls,
    )
    return LLMClient(settings, _home.cache_dir("llm") / "cache.sqlite")
