"""Probing an endpoint without spending: ``GET <base_url>/models`` (``build --check``).

An OpenAI-compatible server lists the models it serves at ``/models`` (OpenAI, vLLM, Ollama,
llama.cpp, LM Studio), and that request costs nothing. :func:`probe_endpoint` sends it once, with
the key the requests would carry, no retry and a short timeout, and says what a build would meet:

* the endpoint does not answer (connection refused, no answer within the timeout);
* it refuses the key (401, 403);
* it answers but does not serve the model (the model is not in its list);
* it has no model list (404): the model cannot be checked (a note, not a problem).

An Azure endpoint lists the resource's models, not its deployments: the model (a deployment name)
is not looked up there. Every message has its credentials masked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nuggetbench.errors import LLMError
from nuggetbench.llm.secrets import mask_secrets
from nuggetbench.llm.settings import ENV_API_KEY, LLMSettings

__all__ = ["EndpointProbe", "probe_endpoint", "PROBE_TIMEOUT"]

#: Seconds the probe waits at most (or the settings' ``timeout`` when shorter).
PROBE_TIMEOUT = 10.0


@dataclass
class EndpointProbe:
    """What the probe found.

    Attributes:
        endpoint: the endpoint, credentials masked.
        answered: whether the endpoint answered (any HTTP status).
        problem: why a build would fail there (``None``: none seen).
        models: the model ids it lists (``None``: no list).
        model_listed: whether the model is among them (``None``: not checked).
        note: what could not be checked, and why.
    """

    endpoint: str
    answered: bool = False
    problem: str | None = None
    models: list[str] | None = None
    model_listed: bool | None = None
    note: str | None = None
    status: int | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form ``build --check --format json`` prints (at most 20 model ids)."""
        return {
            "endpoint": self.endpoint,
            "answered": self.answered,
            "problem": self.problem,
            "models": None if self.models is None else len(self.models),
            "some_models": None if self.models is None else self.models[:20],
            "model_listed": self.model_listed,
            "note": self.note,
        }


def _served(model: str, ids: list[str]) -> bool:
    """Whether *model* is among *ids* (Ollama lists ``llama3:latest`` and serves ``llama3``)."""
    return model in ids or f"{model}:latest" in ids


def _failed(out: EndpointProbe, exc: Exception, s: LLMSettings, wait: float) -> None:
    """Fill *out* with what the failed ``GET /models`` means (*exc* from the ``openai`` client).

    Raises:
        Exception: *exc* itself, when it is not an answer or a transport failure (a bug).
    """
    import openai  # lazy: loaded by probe_endpoint already

    masked = [s.api_key()]
    if isinstance(exc, openai.APITimeoutError):
        out.problem = (
            f"{out.endpoint} did not answer GET /models within {wait:g} s: check that the "
            "server is up and not overloaded, or fix --base-url / [llm] base_url"
        )
    elif isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        out.problem = mask_secrets(
            f"{out.endpoint} does not answer ({type(cause).__name__}: {cause}): start the "
            "server, or fix --base-url / [llm] base_url (an OpenAI-compatible endpoint usually "
            "ends in /v1)",
            masked,
        )
    elif isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        out.answered, out.status = True, exc.status_code
        how = "it needs one: remove no_api_key / --no-api-key and set " if s.no_api_key else "set "
        out.problem = (
            f"{out.endpoint} refused the API key ({exc.status_code}): {how}{ENV_API_KEY} or "
            f"{s.api_key_env} to a valid key"
        )
    elif isinstance(exc, openai.NotFoundError):
        out.answered, out.status = True, 404
        out.note = (
            f"{out.endpoint} has no model list (404 on GET /models): the model {s.model!r} "
            "was not checked"
        )
    elif isinstance(exc, openai.APIStatusError):
        out.answered, out.status = True, exc.status_code
        out.problem = mask_secrets(
            f"{out.endpoint} answered {exc.status_code} to GET /models ({exc.message}): check "
            "the endpoint",
            masked,
        )
    elif isinstance(
        exc, (openai.APIResponseValidationError, ValueError, TypeError, AttributeError)
    ):
        out.answered = True
        out.note = (
            f"{out.endpoint} answered GET /models with no model list: {s.model!r} was not checked"
        )
    else:
        raise exc


def probe_endpoint(settings: LLMSettings, *, timeout: float = PROBE_TIMEOUT) -> EndpointProbe:
    """``GET /models`` at the endpoint of *settings*, once, with the key its requests would
    send; see the module docstring. Never raises for what the endpoint does: the result says
    it.

    Raises:
        LLMError: the ``openai`` package is missing.
    """
    try:
        import openai  # lazy: heavy, and only the LLM steps need it
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise LLMError(
            "probing the endpoint needs the 'openai' package: pip install 'nuggetbench[llm]'"
        ) from exc
    s = settings
    out = EndpointProbe(s.endpoint())
    key = s.api_key() or "no-key"
    wait = min(timeout, s.timeout)
    if s.provider == "azure":
        client: Any = openai.AzureOpenAI(
            azure_endpoint=s.base_url, api_version=s.api_version, api_key=key, timeout=wait,
            max_retries=0,
        )  # fmt: skip
    else:
        client = openai.OpenAI(base_url=s.base_url, api_key=key, timeout=wait, max_retries=0)
    try:
        ids = sorted(str(m.id) for m in client.models.list().data)
    except Exception as exc:  # noqa: BLE001 - every failure is said in words, never raised
        _failed(out, exc, s, wait)
        return out
    out.answered, out.status, out.models = True, 200, ids
    if s.provider == "azure":
        out.note = "an Azure endpoint does not list its deployments: the model was not checked"
        return out
    out.model_listed = _served(s.model, ids)
    if not out.model_listed:
        shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
        out.problem = (
            f"{out.endpoint} does not serve the model {s.model!r} (it lists "
            f"{len(ids)} model{'s' if len(ids) != 1 else ''}: {shown or 'none'}): fix "
            "--model / [llm] model"
        )
    return out
