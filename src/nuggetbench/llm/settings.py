"""Where and how to call a model: :class:`LLMSettings`, from a plan, options and the environment.

The key is never a setting: :meth:`LLMSettings.api_key` reads it from the environment when a
request is sent. Every description of the endpoint (:meth:`LLMSettings.endpoint`,
:meth:`LLMSettings.describe`) has its credentials masked (:func:`~.secrets.redact_url`), and
:meth:`LLMSettings.endpoint_id` (the part of the cache key naming the server) has them removed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from nuggetbench.errors import InputError
from nuggetbench.llm.secrets import (
    base_url_problem,
    endpoint_id,
    key_name_problem,
    redact_url,
    spec_key_problem,
)

__all__ = [
    "LLMSettings",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ENV_API_KEY",
    "BOUNDS_HINT",
    "MAX_REPLY_CHARS",
    "env_base_url",
]

ENV_BASE_URL = "NUGGETBENCH_LLM_BASE_URL"
ENV_MODEL = "NUGGETBENCH_LLM_MODEL"
ENV_API_KEY = "NUGGETBENCH_LLM_API_KEY"
#: The default cap on one reply, in characters (1 MiB of text): a grade, a ranking or a JSON
#: answer is a few hundred; a reply beyond the cap is cut there (its length noted) and not used.
MAX_REPLY_CHARS = 1 << 20
#: Where the time bounds are set, named in the error of a request that kept failing.
BOUNDS_HINT = (
    "raise the timeout or max_retries (--timeout/--max-retries for judge, answers, nuggets and "
    "build; timeout=/max_retries= in an llm_* retriever spec; [llm] timeout/max_retries in a plan)"
)


def env_base_url() -> str | None:
    """The base URL the environment names: ``NUGGETBENCH_LLM_BASE_URL``, else
    ``OPENAI_BASE_URL``, else ``None`` (the OpenAI API)."""
    return os.environ.get(ENV_BASE_URL) or os.environ.get("OPENAI_BASE_URL") or None


@dataclass(frozen=True)
class LLMSettings:
    """Where and how to call the model.

    Attributes:
        model: model (or Azure deployment) name.
        base_url: endpoint ending in ``/v1`` for OpenAI-compatible servers; ``None``: the
            ``openai`` default (api.openai.com). For Azure, the resource endpoint.
        provider: ``"openai"`` (any compatible server) or ``"azure"``.
        api_version: Azure API version.
        api_key_env: environment variable holding the key (never the key itself; a value
            shaped like a key is refused without being quoted).
        no_api_key: the endpoint needs no key (a local vLLM, Ollama, llama.cpp server): none is
            read or sent. Without it a missing key is an error for every endpoint built from a
            plan (:func:`key_problem`), never a silent placeholder.
        timeout: seconds one request may take, from connecting to the last byte of its body.
        max_retries: retries after the first attempt on retryable failures.
        backoff, backoff_max: first retry delay and cap, seconds.
        concurrency: requests in flight at once.
        max_calls, max_cost_usd: budgets for the calls one process pays for (``None``: none).
        price: USD per million ``(input, output)`` tokens, ``None`` when unknown.
        max_reply_chars: the longest reply kept, in characters (default :data:`MAX_REPLY_CHARS`,
            1 MiB): a longer one is cut there, stored cut with its length noted, and not used
            (it counts as an unusable answer).

    Raises:
        InputError: no model; a bad provider, bound or cap; an ``api_key_env`` or model name
            shaped like a key; a base URL that cannot be an endpoint (one line, credentials
            masked).
    """

    model: str
    base_url: str | None = None
    provider: str = "openai"
    api_version: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    no_api_key: bool = False
    timeout: float = 120.0
    max_retries: int = 6
    backoff: float = 1.0
    backoff_max: float = 60.0
    concurrency: int = 4
    max_calls: int | None = None
    max_cost_usd: float | None = None
    price: tuple[float, float] | None = None
    max_reply_chars: int = MAX_REPLY_CHARS

    def __post_init__(self) -> None:
        if not self.model:
            raise InputError(
                f"no LLM model given: set [llm] model in the plan, give --model, or set {ENV_MODEL}"
            )
        if self.provider not in ("openai", "azure"):
            raise InputError(f"[llm] provider must be 'openai' or 'azure', got {self.provider!r}")
        if self.concurrency < 1 or self.max_retries < 0 or self.timeout <= 0:
            raise InputError("[llm] concurrency must be >= 1, max_retries >= 0 and timeout > 0")
        cap = self.max_reply_chars
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise InputError(
                f"max_reply_chars must be a whole number of characters >= 1, got {cap!r} "
                f"(default {MAX_REPLY_CHARS:,}: 1 MiB of text)"
            )
        problem = base_url_problem(self.base_url) if self.base_url else None
        if problem:  # one line, before any request (the openai package raises a traceback)
            raise InputError(problem)
        problem = key_name_problem(self.api_key_env)
        if problem:
            raise InputError(problem)
        problem = spec_key_problem(self.model, what="model name")
        if problem:  # the model names cache rows, run files and results
            raise InputError(problem)
        if self.no_api_key and (self.base_url is None or self.provider == "azure"):
            raise InputError(
                "[llm] no_api_key = true is for a local OpenAI-compatible server: give its "
                "base_url (provider 'openai'); OpenAI and Azure endpoints need a key"
            )

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMSettings:
        """Settings from ``NUGGETBENCH_LLM_BASE_URL`` / ``OPENAI_BASE_URL`` and
        ``NUGGETBENCH_LLM_MODEL``; explicit *overrides* (not ``None``) win."""
        values: dict[str, Any] = {
            "base_url": env_base_url(),
            "model": os.environ.get(ENV_MODEL, ""),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def api_key(self) -> str | None:
        """The key from the environment (``NUGGETBENCH_LLM_API_KEY`` first, then ``api_key_env``);
        ``None`` with ``no_api_key``."""
        if self.no_api_key:
            return None
        return os.environ.get(ENV_API_KEY) or os.environ.get(self.api_key_env) or None

    def key_problem(self) -> str | None:
        """Why no usable key is available (``None``: a key is set, or ``no_api_key`` is stated)."""
        if self.no_api_key or self.api_key() is not None:
            return None
        local = (
            f"; for a server that needs no key ({redact_url(self.base_url)}), state it: "
            "[llm] no_api_key = true in a build plan, no_api_key=true in a retriever spec "
            "(llm_listwise(..., no_api_key=true)), --no-api-key for judge/answers/nuggets"
            if self.base_url is not None and self.provider != "azure"
            else ""
        )
        return (
            f"no API key: set {self.api_key_env} (the variable named by api_key_env) or "
            f"{ENV_API_KEY} in the environment; keys are never read from plans or specs{local}"
        )

    def endpoint(self) -> str:
        """The endpoint for messages, credentials masked."""
        return redact_url(self.base_url) or "the OpenAI API"

    def endpoint_id(self) -> str:
        """The server that answers, as the cache key names it (:func:`~.secrets.endpoint_id`:
        the base URL normalised, its credentials removed; an Azure endpoint is prefixed
        ``azure:``)."""
        where = endpoint_id(self.base_url)
        return f"azure:{where}" if self.provider == "azure" else where

    def describe(self) -> dict[str, Any]:
        """What may be written to a manifest: everything but credentials (the ``base_url`` is
        passed through :func:`~.secrets.redact_url`)."""
        return {
            "model": self.model,
            "base_url": redact_url(self.base_url),
            "provider": self.provider,
            "api_version": self.api_version,
            "api_key_env": self.api_key_env,
            "no_api_key": self.no_api_key,
        }
