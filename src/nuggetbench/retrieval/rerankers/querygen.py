"""LLM query rewriting: sub-questions and HyDE, as retrievers and as functions the builder uses.

FreshStack's two *inference* retrieval settings (Thakur et al., 2025):

* **sub-questions**: the model breaks the question into sub-questions; their concatenation is
  the query (``prompts/subq.v1.txt``, JSON ``{"subquestions": [...]}``, re-asked when invalid);
* **HyDE** (Gao et al., 2023, "Precise Zero-Shot Dense Retrieval without Relevance Labels"): the
  model's closed-book answer is the query (``prompts/hyde.v1.txt``).

:class:`SubQ` and :class:`HyDE` wrap any retriever so the settings can be evaluated with
``nuggetbench run`` (specs ``subq(dense:MODEL)``, ``hyde(bm25)``, options after ``;``:
``temperature``, ``max_subquestions`` / ``max_words``, and the LLM options every LLM step takes,
:class:`~nuggetbench.retrieval.options.LLMEndpointOptions`: ``model``, ``base_url``,
``api_key_env``, ``no_api_key``, ``timeout``, ``max_retries``, ``concurrency``, ``cache``,
``price_in``/``price_out``, ``max_reply_chars``). Their endpoint comes from the options, else
``NUGGETBENCH_LLM_BASE_URL`` and ``NUGGETBENCH_LLM_MODEL``, the key from the variable named by
``api_key_env`` (``OPENAI_API_KEY``; ``NUGGETBENCH_LLM_API_KEY`` first); answers are cached in
``<home>/cache/llm/cache.sqlite``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.errors import InputError
from nuggetbench.llm.asking import ask_validated
from nuggetbench.llm.client import ENV_MODEL, ChatRequest, LLMClient
from nuggetbench.llm.jsonout import validate_subquestions
from nuggetbench.llm.prompts import chat_request, load_prompt, sampling
from nuggetbench.progress import Meter
from nuggetbench.retrieval.compose.caching import retriever_identity
from nuggetbench.retrieval.compose.pipeline import Composable
from nuggetbench.retrieval.options import HyDEOptions, SubQOptions
from nuggetbench.retrieval.rerankers.endpoint import (
    asked_params,
    check_endpoint,
    endpoint_client,
    endpoint_identity,
    endpoint_model,
    shown_options,
)


@dataclass(frozen=True)
class RewriteOptions:
    """Sampling and size of the rewrites (temperature 0 by default: reproducible queries)."""

    temperature: float = 0.0
    max_tokens: int = 1024
    max_subquestions: int = 5
    max_words: int = 300
    subq_version: str = "v1"
    hyde_version: str = "v1"
    max_repairs: int = 2


def subq_request(text: str, options: RewriteOptions) -> ChatRequest:
    """The request asking for the sub-questions of one query text."""
    prompt = load_prompt("subq", options.subq_version)
    values = {"question": text, "max_subquestions": str(options.max_subquestions)}
    return chat_request(prompt, values, **sampling(options))


def hyde_request(text: str, options: RewriteOptions) -> ChatRequest:
    """The request asking for a closed-book answer to one query text."""
    prompt = load_prompt("hyde", options.hyde_version)
    values = {"question": text, "max_words": str(options.max_words)}
    return chat_request(prompt, values, **sampling(options))


def generate_subquestions(
    client: LLMClient,
    texts: Mapping[str, str],
    options: RewriteOptions = RewriteOptions(),
    *,
    progress: Callable[[int], None] | None = None,
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Sub-questions per query id: ``({qid: [sub-question, ...]}, {qid: error of a failed one})``.

    Raises:
        LLMError / BudgetError: from the client.
    """
    ids = list(texts)
    values, errors = ask_validated(
        client,
        [subq_request(texts[q], options) for q in ids],
        partial(validate_subquestions, max_items=options.max_subquestions),
        max_repairs=options.max_repairs,
        expected='{"subquestions": ["...", ...]}',
        progress=progress,
    )
    good = {q: v for q, v in zip(ids, values) if v is not None}
    bad = {q: e or "no answer" for q, v, e in zip(ids, values, errors) if v is None}
    return good, bad


def generate_hyde(
    client: LLMClient,
    texts: Mapping[str, str],
    options: RewriteOptions = RewriteOptions(),
    *,
    progress: Callable[[int], None] | None = None,
) -> dict[str, str]:
    """The closed-book answer per query id (an empty answer stays empty: the query then matches
    nothing lexically, which the pool tolerates)."""
    ids = list(texts)
    results = client.complete_many(
        [hyde_request(texts[q], options) for q in ids], progress=progress
    )
    return {q: r.text.strip() for q, r in zip(ids, results)}


# --- retrievers -------------------------------------------------------------------------------
class _Rewriter(Composable):
    """Base of the rewriters: an inner retriever and the options of :attr:`OPTIONS`."""

    kind = ""
    OPTIONS: type[HyDEOptions | SubQOptions]

    def __init__(self, retriever: Any, options: Any = None, /, **kwargs: Any):
        self.retriever = retriever
        self.options = options if options is not None else self.OPTIONS(**kwargs)
        check_endpoint(self.options, self.kind)  # never quotes a value shaped like a key
        self.model = self.options.model
        self.base_url = self.options.base_url
        self.temperature = self.options.temperature
        self._extra = asked_params(self.options, "model", "temperature")
        self.params = {"model": self.model, "temperature": self.temperature, **self._extra}
        opts = shown_options(self.options)
        self.name = f"{self.kind}({retriever.name}" + ("; " + ",".join(opts) if opts else "") + ")"

    def identity(self) -> dict[str, Any] | None:
        """What the runs depend on: the inner retriever, the endpoint (normalised, credentials
        removed) and model in effect, options and prompt; ``None`` with ``cache=false`` (the
        runs are then never served from the run cache)."""
        if not self.options.cache:
            return None
        prompt = load_prompt(self.kind, getattr(RewriteOptions(), f"{self.kind}_version"))
        return {
            "rewriter": self.kind,
            **endpoint_identity(self.options),
            "params": self.params,
            "prompt": prompt.sha256,
            "inner": retriever_identity(self.retriever),
        }

    def client(self) -> LLMClient:
        """The client of the options' endpoint (:func:`~.endpoint.endpoint_client`)."""
        return endpoint_client(self.options, endpoint_model(self.options))

    def rewrite_options(self) -> RewriteOptions:
        """The rewrite options of this retriever's temperature and size option."""
        return RewriteOptions(temperature=self.temperature, **self._extra)

    def rewrite(self, client: LLMClient, queries: Queries, show_progress: bool) -> dict[str, str]:
        raise NotImplementedError  # pragma: no cover

    def index(self, corpus: Corpus, *, show_progress: bool = False) -> RewriteIndex:
        """Index *corpus* with the inner retriever (after checking a model is named).

        Raises:
            InputError: no model: neither ``model=`` in the spec nor ``NUGGETBENCH_LLM_MODEL``.
        """
        if not endpoint_model(self.options):
            raise InputError(
                f"{self.name} needs an LLM: set {ENV_MODEL} (and NUGGETBENCH_LLM_BASE_URL for a "
                f"local server) or write {self.kind}({self.retriever.name}; model=NAME)"
            )
        return RewriteIndex(self, self.retriever.index(corpus, show_progress=show_progress))


class RewriteIndex:
    """Index side of :class:`SubQ` / :class:`HyDE`: rewrites the queries, then searches."""

    def __init__(self, rewriter: _Rewriter, inner: Any):
        self.rewriter = rewriter
        self.inner = inner
        self.name = rewriter.name

    def search(
        self,
        queries: Queries,
        k: int,
        *,
        doc_filter=None,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Rewrite *queries* with the LLM (cached), then search the inner index (Index protocol;
        *objective* is ignored: the rewrite prompts take none)."""
        r = self.rewriter
        client = r.client()
        try:
            with Meter(
                r.kind, len(queries), "query", show=show_progress, stats=client.ledger.brief
            ) as meter:
                texts = r.rewrite(client, queries, meter)
        finally:
            client.close()
        rewritten = Queries({q: texts.get(q) or queries[q] for q in queries}, name=queries.name)
        run = self.inner.search(rewritten, k, doc_filter=doc_filter, show_progress=show_progress)
        return run.with_name(self.name, {**run.metadata, "rewriter": self.rewriter.kind})


class SubQ(_Rewriter):
    """Retrieve with the concatenated LLM sub-questions of each query (spec ``subq(RETRIEVER)``)."""

    kind = "subq"
    OPTIONS = SubQOptions

    def rewrite(self, client: LLMClient, queries: Queries, progress) -> dict[str, str]:
        texts = {q: queries[q] for q in queries}
        good, _ = generate_subquestions(client, texts, self.rewrite_options(), progress=progress)
        return {q: "\n".join(v) for q, v in good.items()}


class HyDE(_Rewriter):
    """Retrieve with an LLM's closed-book answer to each query (spec ``hyde(RETRIEVER)``)."""

    kind = "hyde"
    OPTIONS = HyDEOptions

    def rewrite(self, client: LLMClient, queries: Queries, progress) -> dict[str, str]:
        texts = {q: queries[q] for q in queries}
        return generate_hyde(client, texts, self.rewrite_options(), progress=progress)


__all__ = [
    "RewriteOptions",
    "generate_subquestions",
    "generate_hyde",
    "subq_request",
    "hyde_request",
    "SubQ",
    "HyDE",
    "RewriteIndex",
]
