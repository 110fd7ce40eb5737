"""The LLM layer, below retrieval and the builder: one client for any OpenAI-compatible endpoint.

* :mod:`.client`: :class:`LLMClient` (bounded concurrency, retries on 429 / 5xx / timeouts,
  budgets, usage and cost, bounded replies) over the ``openai`` package;
* :mod:`.settings`: :class:`LLMSettings` from a plan or the environment
  (``NUGGETBENCH_LLM_BASE_URL``, ``NUGGETBENCH_LLM_MODEL``, the key's variable);
* :mod:`.cache`: every request and answer in SQLite (WAL, one commit per answer), keyed by the
  endpoint that answered and the request, so a re-run sends nothing already answered and a
  killed job resumes;
* :mod:`.secrets`: credentials kept out of every text written or printed (masking, a logging
  filter for the command line's handlers, credential-free endpoint names);
* :mod:`.prompts`: versioned prompt templates (``templates/<name>.v<N>.txt``);
* :mod:`.jsonout` and :mod:`.asking`: JSON answers parsed and validated, re-asked when invalid.

Used by the LLM query rewriters (:mod:`nuggetbench.retrieval.rerankers.querygen`) and the builder
(:mod:`nuggetbench.builder`). Nothing heavy is imported with the package: its names below are
loaded on first use, so that ``nuggetbench.llm.secrets`` (which the command line's logging set-up
uses) costs no SQLite or thread-pool import; ``openai`` is imported when a request is sent.
"""

_LAZY = {
    "ENV_MODEL": "nuggetbench.llm.settings",
    "ChatRequest": "nuggetbench.llm.client",
    "ChatResult": "nuggetbench.llm.client",
    "LLMCache": "nuggetbench.llm.cache",
    "LLMClient": "nuggetbench.llm.client",
    "LLMSettings": "nuggetbench.llm.settings",
    "UsageLedger": "nuggetbench.llm.cache",
    "request_key": "nuggetbench.llm.cache",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nuggetbench.llm' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
