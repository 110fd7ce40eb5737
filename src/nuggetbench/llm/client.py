"""One chat-completions client for every OpenAI-compatible endpoint, with a persistent cache.

Works with OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp or any server speaking the
chat-completions protocol, through the ``openai`` package (imported on first use).

* **Settings** come from the plan and the environment: ``NUGGETBENCH_LLM_BASE_URL`` (or
  ``OPENAI_BASE_URL``), ``NUGGETBENCH_LLM_MODEL``, and the key from the variable named by
  ``api_key_env`` (default ``OPENAI_API_KEY``; ``NUGGETBENCH_LLM_API_KEY`` is tried first). The key
  is read when the client is built, passed to ``openai`` only, and never stored: the cache holds
  request bodies, which carry no credentials.
* **Time bounds**: ``timeout`` is a deadline for the whole request (connect, first byte and the
  whole body: a server trickling its answer byte by byte is cut off at the deadline, not at each
  read), enforced by :func:`~nuggetbench.llm.deadline.call_within`.
* **Retries** with exponential backoff (``backoff * 2**attempt`` seconds, capped at
  ``backoff_max``; a ``Retry-After`` header is honoured within the cap) on rate limits (429),
  timeouts, connection errors, 5xx answers and bodies that are not a chat completion. After
  ``max_retries`` retries the call fails with :class:`~nuggetbench.errors.LLMError` naming the
  endpoint and the options that raise the bounds. A request that failed that way stops the
  client: requests in flight stop at their next retry and no new one is sent (each fails at
  once with the same cause). Authentication, unknown model and bad-request answers are not
  retried.
* **Cache**: every answer is committed to SQLite (:mod:`.cache`) as it arrives, keyed by
  (endpoint, model, prompt version, messages, parameters): a repeated request to the same server
  costs nothing, and a second server serving a model of the same name is asked anew. The
  endpoint is :meth:`~.settings.LLMSettings.endpoint_id` (the base URL normalised, credentials
  removed). With ``read_cache=False`` no answer stored before is served (each request is sent
  again and its new answer replaces the stored one); answers this client received are served.
* **Bounded replies**: a reply longer than ``max_reply_chars`` (default 1 MiB of text) is cut
  there and its full length noted (``ChatResult.reply_chars``); it is stored cut, and the
  callers treat it as unusable (:mod:`.asking`).
* **Concurrency**: :meth:`LLMClient.complete_many` runs up to ``concurrency`` requests at once in
  threads.
* **Budgets**: ``max_calls`` / ``max_cost_usd`` bound what one process may pay for; reaching one
  raises :class:`~nuggetbench.errors.BudgetError` (everything answered so far is cached).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nuggetbench.errors import BudgetError, LLMError
from nuggetbench.llm.cache import LLMCache, UsageLedger, request_key
from nuggetbench.llm.deadline import DeadlineExceeded, call_within
from nuggetbench.llm.secrets import mask_secrets
from nuggetbench.llm.settings import (
    BOUNDS_HINT,
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MODEL,
    MAX_REPLY_CHARS,
    LLMSettings,
)

log = logging.getLogger(__name__)
#: Characters of a cut reply repeated in a repair turn (:meth:`ChatResult.echo`).
ECHO_CHARS = 2000


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completions request.

    Attributes:
        messages: ``[{"role": ..., "content": ...}, ...]``.
        stage: the build stage it belongs to (usage is recorded per stage).
        prompt_version: the prompt file's version (part of the cache key).
        params: sampling parameters sent as they are (``temperature``, ``max_tokens``, ``seed``,
            ``response_format``...).
    """

    messages: tuple[dict, ...]
    stage: str
    prompt_version: str
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ChatResult:
    """An answer: text, token usage, whether it came from the cache, and its cache key.

    ``extra`` holds what the answer carries besides its text: ``{"top_logprobs": [[token,
    logprob], ...]}`` (the first answer token's alternatives) when the request asked for
    ``logprobs`` and the endpoint returned them; ``{"reply_chars": N}`` when the reply was longer
    than ``max_reply_chars`` (*text* then holds its first ``max_reply_chars`` characters);
    ``None`` otherwise.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    key: str
    extra: dict | None = None

    @property
    def reply_chars(self) -> int | None:
        """The length of the reply as received when it was cut at ``max_reply_chars`` (the
        text holds its start), else ``None``."""
        value = (self.extra or {}).get("reply_chars")
        return int(value) if value is not None else None

    def echo(self) -> str:
        """The text a repair turn repeats as the assistant's message: the reply, or, when it
        was cut, its first :data:`ECHO_CHARS` characters and a note of its length (a cut reply
        repeated whole would cost as much again and exceed most context windows)."""
        n = self.reply_chars
        if n is None:
            return self.text
        return f"{self.text[:ECHO_CHARS]}\n[... the reply was {n:,} characters; the rest is cut]"


def cap_reply(text: str, extra: dict | None, cap: int) -> tuple[str, dict | None]:
    """``(text, extra)`` of a reply kept within *cap* characters: unchanged when it fits, else
    its first *cap* characters with ``extra["reply_chars"]`` = its full length."""
    if len(text) <= cap:
        return text, extra
    return text[:cap], {**(extra or {}), "reply_chars": len(text)}


class _Retryable(Exception):
    def __init__(self, what: str, retry_after: float | None = None):
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


class LLMClient:
    """A cached, retrying, concurrent chat-completions client.

    Args:
        settings: :class:`LLMSettings`.
        cache: an :class:`~.llmcache.LLMCache` or the path of its database.
        ledger: where usage is recorded (a new one by default).
        transport: for tests, a callable ``(body: dict) -> (text, prompt_tokens,
            completion_tokens[, extra])`` used instead of the ``openai`` package.
        read_cache: serve answers stored before this client was made (default); ``False``
            (``--no-cache``, ``cache=false``): send every request again, the new answer
            replacing the stored one (answers this client received are still served, so a
            request repeated in one run is sent once).

    Raises:
        LLMError: the ``openai`` package is missing.
    """

    def __init__(
        self,
        settings: LLMSettings,
        cache: LLMCache | str | Path,
        *,
        ledger: UsageLedger | None = None,
        transport: Callable[[dict], tuple] | None = None,
        read_cache: bool = True,
    ):
        self.settings = settings
        self.cache = cache if isinstance(cache, LLMCache) else LLMCache(cache)
        self.read_cache = read_cache
        self._fresh: set[str] = set()  # keys answered through this client
        self.ledger = ledger or UsageLedger(settings.price)
        self._transport = transport
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._budget_lock = threading.Lock()
        self._reserved = 0
        self._halted: LLMError | None = None  # set by a request that failed persistently
        self._halt = threading.Event()

    # --- the openai client ------------------------------------------------------------
    def _openai(self) -> Any:
        with self._client_lock:
            if self._client is None:
                try:
                    import openai
                except ImportError as exc:  # pragma: no cover - depends on the installation
                    raise LLMError(
                        "the LLM stages need the 'openai' package: pip install 'nuggetbench[llm]'"
                    ) from exc
                s = self.settings
                key = s.api_key()
                if key is None and not s.no_api_key:
                    if s.base_url is None or s.provider == "azure":
                        raise LLMError(s.key_problem() or "no API key")
                    log.warning("%s; sending no key to %s", s.key_problem(), s.endpoint())
                # openai refuses an empty key; a server that needs none ignores this one
                key = key or "no-key"
                if s.provider == "azure":
                    self._client = openai.AzureOpenAI(
                        azure_endpoint=s.base_url,
                        api_version=s.api_version,
                        api_key=key,
                        timeout=s.timeout,
                        max_retries=0,
                    )
                else:
                    self._client = openai.OpenAI(
                        base_url=s.base_url, api_key=key, timeout=s.timeout, max_retries=0
                    )
            return self._client

    def _where(self) -> str:
        return self.settings.endpoint()

    def _masked(self, text: str) -> str:
        """*text* (from the endpoint) with every key this process knows masked (a
        server echoing the Authorization header would print the key)."""
        return mask_secrets(text, [self.settings.api_key()])

    def _send(self, body: dict) -> tuple[str, int, int, dict | None]:
        """One attempt, bounded as a whole by ``timeout`` (connect, first byte, whole body)."""
        if self._transport is None:
            self._openai()  # importing openai and building its client is not the request's time
        try:
            return call_within(lambda: self._send_once(body), self.settings.timeout)
        except DeadlineExceeded as exc:
            raise _Retryable(
                f"no complete answer within {self.settings.timeout:g} s (timeout)"
            ) from exc

    def _send_once(self, body: dict) -> tuple[str, int, int, dict | None]:
        if self._transport is not None:
            out = tuple(self._transport(body))
            return (*out[:3], out[3] if len(out) > 3 else None)
        import openai

        try:
            response = self._openai().chat.completions.create(**body)
        except openai.RateLimitError as exc:
            raise _Retryable("rate limited (429)", _retry_after(exc)) from exc
        except openai.APITimeoutError as exc:
            raise _Retryable(f"no answer within {self.settings.timeout:g} s (timeout)") from exc
        except openai.APIConnectionError as exc:
            raise _Retryable(self._masked(f"connection failed ({exc})")) from exc
        except openai.InternalServerError as exc:
            raise _Retryable(f"server error {exc.status_code}") from exc
        except openai.AuthenticationError as exc:
            raise LLMError(
                f"{self._where()} refused the API key (401): set {ENV_API_KEY} or "
                f"{self.settings.api_key_env} to a valid key"
            ) from exc
        except openai.NotFoundError as exc:
            raise LLMError(
                f"{self._where()} answered 404 for model {self.settings.model!r}: check "
                "[llm] model and base_url (it usually ends in /v1)"
            ) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise _Retryable(f"server error {exc.status_code}") from exc
            raise LLMError(  # the server's message may echo the request's headers
                self._masked(
                    f"{self._where()} rejected the request ({exc.status_code}: {exc.message})"
                )
            ) from None
        except (openai.APIResponseValidationError, ValueError) as exc:
            raise _Retryable(f"the answer is not a chat completion ({type(exc).__name__})") from exc
        if isinstance(response, str) or not getattr(response, "choices", None):
            raise _Retryable("the answer is not a chat completion (no choices)")
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        p = int(getattr(usage, "prompt_tokens", 0) or 0)
        c = int(getattr(usage, "completion_tokens", 0) or 0)
        return text, p, c, _first_token_logprobs(response) if body.get("logprobs") else None

    # --- one request ------------------------------------------------------------------
    def body(self, request: ChatRequest) -> dict:
        """The JSON body sent for *request* (model, messages, parameters; no credentials)."""
        return {
            "model": self.settings.model,
            "messages": [dict(m) for m in request.messages],
            **request.params,
        }

    def key(self, request: ChatRequest) -> str:
        """The cache key of *request* (:func:`~.cache.request_key`), the endpoint included."""
        return request_key(
            self.settings.model,
            request.prompt_version,
            [dict(m) for m in request.messages],
            dict(request.params),
            endpoint=self.settings.endpoint_id(),
        )

    def _lookup(self, key: str):
        """The stored answer under *key* that this client may serve (see ``read_cache``)."""
        if not self.read_cache and key not in self._fresh:
            return None
        return self.cache.get(key)

    def _reserve(self, stage: str) -> None:
        s = self.settings
        with self._budget_lock:
            calls, cost = self.ledger.paid()
            if s.max_calls is not None and calls + self._reserved >= s.max_calls:
                raise BudgetError(
                    f"stage {stage!r}: the budget of {s.max_calls} paid LLM calls is spent; "
                    "raise [budget] max_calls in the plan and run again (answers so far "
                    "are cached and will not be paid twice)"
                )
            if s.max_cost_usd is not None and cost >= s.max_cost_usd:
                raise BudgetError(
                    f"stage {stage!r}: the budget of ${s.max_cost_usd:g} is spent "
                    f"(${cost:.4f}); raise [budget] max_cost_usd and run again (answers "
                    "so far are cached)"
                )
            self._reserved += 1

    def complete(self, request: ChatRequest) -> ChatResult:
        """Answer one request from the cache, or from the endpoint (then cache it).

        Raises:
            LLMError: the endpoint keeps failing after the retries, or refuses the request.
            BudgetError: a budget is spent.
        """
        key = self.key(request)
        hit = self._lookup(key)
        if hit is not None:
            self.ledger.record(
                request.stage, key, hit.prompt_tokens, hit.completion_tokens, cached=True
            )
            return ChatResult(
                hit.text, hit.prompt_tokens, hit.completion_tokens, True, key, hit.extra
            )
        self._check_halted(request.stage)
        self._reserve(request.stage)
        body = self.body(request)
        try:
            text, p, c, extra = self._attempts(request.stage, body)
        finally:
            with self._budget_lock:
                self._reserved -= 1
        text, extra = cap_reply(text, extra, self.settings.max_reply_chars)
        if extra and "reply_chars" in extra:
            log.info(  # the command's summary says how many answers were unusable, and why
                "stage %r: a reply of %d characters was cut at max_reply_chars = %d (not used)",
                request.stage,
                extra["reply_chars"],
                self.settings.max_reply_chars,
            )
        self.cache.put(
            key,
            model=self.settings.model,
            stage=request.stage,
            prompt_version=request.prompt_version,
            request=body,
            response=text,
            prompt_tokens=p,
            completion_tokens=c,
            extra=extra,
            endpoint=self.settings.endpoint_id(),
            replace=not self.read_cache,
        )
        self._fresh.add(key)
        self.ledger.record(request.stage, key, p, c, cached=False)
        return ChatResult(text, p, c, False, key, extra)

    def _check_halted(self, stage: str) -> None:
        if self._halted is not None:
            raise LLMError(
                f"stage {stage!r}: not sent, since an earlier request failed persistently: "
                f"{self._halted}"
            )

    def _attempts(self, stage: str, body: dict) -> tuple[str, int, int, dict | None]:
        """Send *body* until it is answered, retrying with capped exponential backoff.

        Raises:
            LLMError: ``max_retries`` retries failed (the client then halts), or another request
                halted the client meanwhile.
        """
        s = self.settings
        usage = self.ledger.stage(stage)
        attempt = 0
        while True:
            try:
                return self._send(body)
            except _Retryable as exc:
                if attempt >= s.max_retries:
                    usage.failed_calls += 1
                    error = LLMError(
                        f"stage {stage!r}: {self._where()} failed {attempt + 1} times, last: "
                        f"{exc.what}. Check that the server is up and the model {s.model!r} is "
                        f"served; {BOUNDS_HINT} for a slow or busy endpoint, or lower "
                        "concurrency when rate limited. Answers so far are cached."
                    )
                    self._halted = self._halted or error
                    self._halt.set()  # the others stop at their next retry; nothing new is sent
                    raise error from exc
                delay = min(s.backoff_max, s.backoff * (2**attempt))
                if exc.retry_after is not None:
                    delay = min(s.backoff_max, max(delay, exc.retry_after))
                log.info(
                    "%s: %s; retry %d/%d in %.2f s",
                    stage,
                    exc.what,
                    attempt + 1,
                    s.max_retries,
                    delay,
                )
                usage.retries += 1
                attempt += 1
                if self._halt.wait(delay):
                    self._check_halted(stage)

    def complete_many(
        self,
        requests: Sequence[ChatRequest],
        *,
        on_result: Callable[[int, ChatResult], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[ChatResult]:
        """Answer many requests with up to ``concurrency`` in flight; results in request order.

        Cached answers are served first without threads; a request repeated in *requests* is
        sent once (its copies are served from the cache). *on_result(i, result)* is called as
        each answer arrives (already committed to the cache); *progress(n)* advances a bar, on
        the caller's thread, as each answer arrives (cached ones first).

        Raises:
            LLMError / BudgetError: the first failure; requests not yet sent are cancelled (those
                already answered stay cached).
        """
        results: list[ChatResult | None] = [None] * len(requests)
        todo = []
        for i, req in enumerate(requests):
            key = self.key(req)
            hit = self._lookup(key)
            if hit is None:
                todo.append(i)
                continue
            self.ledger.record(
                req.stage, key, hit.prompt_tokens, hit.completion_tokens, cached=True
            )
            results[i] = ChatResult(
                hit.text, hit.prompt_tokens, hit.completion_tokens, True, key, hit.extra
            )
            if on_result:
                on_result(i, results[i])
            if progress:
                progress(1)
        if todo and self.settings.concurrency == 1:
            for i in todo:
                results[i] = self.complete(requests[i])
                if on_result:
                    on_result(i, results[i])
                if progress:
                    progress(1)
        elif todo:
            # identical requests are sent once; the copies are answered from the cache after
            first: dict[str, int] = {}
            for i in todo:
                first.setdefault(self.key(requests[i]), i)
            sent = set(first.values())
            copies = [i for i in todo if i not in sent]
            with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
                futures = {pool.submit(self.complete, requests[i]): i for i in first.values()}
                pending = set(futures)
                while pending:  # each answer is handed on as it arrives, not at the batch's end
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        exc = fut.exception()
                        if exc is not None:
                            for other in pending:
                                other.cancel()
                            raise exc
                        i = futures[fut]
                        results[i] = fut.result()
                        if on_result:
                            on_result(i, results[i])
                        if progress:
                            progress(1)
            for i in copies:
                results[i] = self.complete(requests[i])
                if on_result:
                    on_result(i, results[i])
                if progress:
                    progress(1)
        return [r for r in results if r is not None]

    def forget(self, keys: Sequence[str]) -> int:
        """Remove unusable answers from the cache (by their :attr:`ChatResult.key`), so that the
        next run sends those requests again instead of replaying a failure; returns how many
        were removed."""
        return self.cache.discard(keys)

    def close(self) -> None:
        self.cache.close()


def _first_token_logprobs(response: Any) -> dict | None:
    """``{"top_logprobs": [[token, logprob], ...], "token": chosen}`` of the first answer token
    of a chat completion requested with ``logprobs``, or ``None`` when the endpoint returned
    none."""
    try:
        first = response.choices[0].logprobs.content[0]
    except (AttributeError, IndexError, TypeError):
        return None
    alternatives = getattr(first, "top_logprobs", None) or [first]
    pairs = [[str(a.token), float(a.logprob)] for a in alternatives if a is not None]
    chosen = getattr(first, "token", None)
    if not pairs:
        return None
    return {"top_logprobs": pairs, **({"token": str(chosen)} if chosen is not None else {})}


def _retry_after(exc: Any) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


__all__ = [
    "LLMSettings",
    "LLMClient",
    "ChatRequest",
    "ChatResult",
    "cap_reply",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ENV_API_KEY",
    "BOUNDS_HINT",
    "MAX_REPLY_CHARS",
]
