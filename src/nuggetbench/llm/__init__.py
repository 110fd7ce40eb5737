"""The LLM layer, below retrieval and the builder: one client for any OpenAI-compatible endpoint.

* :mod:`.client`: :class:`LLMClient` (bounded concurrency, retries on 429 / 5xx / timeouts,
  budgets, usage and cost) over the ``openai`` package, and :class:`LLMSettings` from a plan or the
  environment (``NUGGETBENCH_LLM_BASE_URL``, ``NUGGETBENCH_LLM_MODEL``, the key's variable);
* :mod:`.cache`: every request and answer in SQLite (WAL, one commit per answer), so a re-run
  sends nothing already answered and a killed job resumes;
* :mod:`.prompts`: versioned prompt templates (``templates/<name>.v<N>.txt``);
* :mod:`.jsonout` and :mod:`.asking`: JSON answers parsed and validated, re-asked when invalid.

Used by the LLM query rewriters (:mod:`nuggetbench.retrieval.rerankers.querygen`) and the builder
(:mod:`nuggetbench.builder`). Nothing heavy (``openai``) is imported until a request is sent.
"""

from nuggetbench.llm.cache import LLMCache, UsageLedger, request_key
from nuggetbench.llm.client import ENV_MODEL, ChatRequest, ChatResult, LLMClient, LLMSettings

__all__ = [
    "ENV_MODEL",
    "ChatRequest",
    "ChatResult",
    "LLMCache",
    "LLMClient",
    "LLMSettings",
    "UsageLedger",
    "request_key",
]
