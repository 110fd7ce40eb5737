"""The endpoint of every LLM step (``llm_listwise``, ``llm_pointwise``, ``hyde``, ``subq``), from
its :class:`~nuggetbench.retrieval.options.LLMEndpointOptions`: one validation, one client, one
identity, one name rule, so that an option means the same in every step.

The model is the ``model`` option, else ``NUGGETBENCH_LLM_MODEL``; the endpoint the ``base_url``
option, else ``NUGGETBENCH_LLM_BASE_URL`` / ``OPENAI_BASE_URL``; the key is read from the variable
named by ``api_key_env`` when a request is sent (``no_api_key=true``: none is read or sent), and
appears in no name, identity or cache key.
"""

from __future__ import annotations

import os
from typing import Any

from nuggetbench import home as _home
from nuggetbench.errors import SpecError
from nuggetbench.llm.client import ENV_MODEL, LLMClient, LLMSettings
from nuggetbench.llm.secrets import endpoint_id, key_name_problem
from nuggetbench.llm.settings import env_base_url
from nuggetbench.retrieval.options import LLM_TRANSPORT, LLM_UNNAMED
from nuggetbench.spec import format_literal

__all__ = ["check_endpoint", "endpoint_client", "endpoint_model", "asked_params", "shown_options"]


def check_endpoint(options: Any, what: str) -> None:
    """Refuse endpoint options that no request could use, before anything runs.

    Raises:
        SpecError: a price that is not a number >= 0; an ``api_key_env`` that is not a variable
            name (a value shaped like a key is refused without being quoted).
    """
    for name in ("price_in", "price_out"):
        value = options[name]
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
        ):
            raise SpecError(f"{what}: {name} must be a number >= 0 (USD), got {value!r}")
    problem = key_name_problem(options.api_key_env, field=f"{what} api_key_env")
    if problem:
        raise SpecError(problem)


def endpoint_model(options: Any) -> str:
    """The model in effect: the ``model`` option, else ``NUGGETBENCH_LLM_MODEL`` (``""``: none)."""
    return options.model or os.environ.get(ENV_MODEL, "")


def endpoint_identity(options: Any) -> dict[str, str]:
    """Who answers: the endpoint (normalised, credentials removed:
    :func:`~nuggetbench.llm.secrets.endpoint_id`) and the model in effect."""
    return {
        "endpoint": endpoint_id(options.base_url or env_base_url()),
        "model": endpoint_model(options),
    }


def asked_params(options: Any, *leave_out: str) -> dict[str, Any]:
    """The options that change what is asked (every option but :data:`LLM_TRANSPORT` and
    *leave_out*), for identities."""
    skip = set(LLM_TRANSPORT) | set(leave_out)
    return {k: v for k, v in options.as_dict().items() if k not in skip}


def shown_options(options: Any, *leave_out: str) -> list[str]:
    """``["model=M", "k=20", ...]``: the options changed from their defaults, as a step's name
    shows them (:data:`~nuggetbench.retrieval.options.LLM_UNNAMED` and *leave_out* left out)."""
    skip = set(LLM_UNNAMED) | set(leave_out)
    return [
        f"{k}={v if isinstance(v, str) else format_literal(v)}"
        for k, v in options.changed().items()
        if k not in skip
    ]


def endpoint_client(options: Any, model: str) -> LLMClient:
    """The client of an LLM step: *model* at the options' endpoint, with their key variable (or
    none), time bounds, concurrency, price and reply cap, caching in
    ``<home>/cache/llm/cache.sqlite`` (shared with ``judge`` and the builder); ``cache=false``
    sends every request again (:class:`~nuggetbench.llm.client.LLMClient`'s ``read_cache``).

    Raises:
        InputError: a setting :class:`~nuggetbench.llm.settings.LLMSettings` refuses.
    """
    o = options
    price = None
    if o.price_in is not None or o.price_out is not None:
        price = (float(o.price_in or 0.0), float(o.price_out or 0.0))
    settings = LLMSettings.from_env(
        model=model,
        base_url=o.base_url or None,
        api_key_env=o.api_key_env,
        no_api_key=o.no_api_key,
        concurrency=o.concurrency,
        timeout=o.timeout,
        max_retries=o.max_retries,
        price=price,
        max_reply_chars=o.max_reply_chars,
    )
    return LLMClient(settings, _home.cache_dir("llm") / "cache.sqlite", read_cache=bool(o.cache))
