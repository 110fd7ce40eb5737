"""Keeping credentials out of plans, manifests, logs and messages.

* :func:`redact_url` replaces the credentials of a URL (``user:password@``, a credential-named
  query parameter such as ``?api-key=``, a query value shaped like a key) with ``***``; every
  description of an endpoint goes through it.
* :func:`url_problems` says what credentials a URL carries, without quoting them (a plan must
  carry none: keys live in the environment only).
* :func:`key_name_problem` checks that a value meant to be the NAME of an environment variable
  (``[llm] api_key_env``) is one, and not the key itself.
* :func:`mask_secrets` masks, in any text (an endpoint's error message, a log line), every key
  the process knows (:func:`known_secrets`: the values of credential-named environment
  variables), every token shaped like a provider's key, every ``Bearer``/``Basic`` credential and
  the value of every ``Authorization``/``api-key`` header, the user info of every URL
  (``http://user:password@host`` -> ``http://***@host``) and every credential-named query
  parameter (``?api-key=``, ``key=``, ``token=``, ``access_token=``...).
* :class:`SecretFilter` is a logging filter applying :func:`mask_secrets` to every record
  (message, arguments, traceback). The library never installs it (it changes no
  process-wide state); the command line puts it on its log handlers, so that every logger's
  lines (ours, ``httpx``'s request lines, ``httpcore``'s, ``openai``'s) are masked.
* :func:`endpoint_id` is an endpoint's address normalised, its credentials stripped: the part
  of the LLM cache key saying which server answered.
* :func:`base_url_problem` says, in one line that does not quote credentials, why a base URL
  cannot be an endpoint (no ``http://`` or ``https://``, no host, a port that is not a number
  from 1 to 65535, a query string the request's path would be appended to).
* :func:`spec_key_problem` says, without quoting it, that a spec holds a key (a value shaped like
  one, or the value of a known key): specs name systems, files and cache folders, so a key in a
  spec is refused as a key in a plan is.

The key shapes recognised are those of the common providers (OpenAI ``sk-``, Hugging Face
``hf_``, GitHub ``ghp_``, Google ``AIza``, Slack ``xox``, bearer tokens, long hex strings such as
Azure keys) and, generally, long tokens mixing digits and lower-case letters, which environment
variable names by convention are not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "redact_url",
    "url_problems",
    "key_name_problem",
    "looks_like_key",
    "mask_secrets",
    "known_secrets",
    "spec_key_problem",
    "SecretFilter",
    "endpoint_id",
    "base_url_problem",
    "MASK",
]

MASK = "***"
# patterns as text: re compiles (and caches) each on first use, so importing this module (as the
# command line does for every command) compiles nothing
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
_KEY_PREFIXES = ("sk-", "sk_", "rk-", "pk-", "hf_", "ghp_", "gho_", "github_pat_", "aiza", "xox")
_HEX = r"^[0-9a-fA-F]{32,}$"
_CREDENTIAL_PARAMS = {
    "api_key",
    "apikey",
    "key",
    "token",
    "access_token",
    "auth",
    "authorization",
    "password",
    "secret",
    "sig",
    "signature",
    "code",
    "x_api_key",
    "subscription_key",
}


def looks_like_key(value: str) -> bool:
    """True when *value* is shaped like an API key or token (see the module docstring)."""
    v = value.strip()
    low = v.lower()
    if low.startswith(_KEY_PREFIXES) or low.startswith("bearer "):
        return True
    if re.match(_HEX, v):
        return True
    has_digit = any(c.isdigit() for c in v)
    has_lower = any(c.islower() for c in v)
    return len(v) >= 24 and has_digit and has_lower


def _is_credential_param(name: str) -> bool:
    n = name.strip().lower().replace("-", "_")
    return n in _CREDENTIAL_PARAMS or n.endswith(("_key", "_token", "_secret", "password"))


def redact_url(url: str | None) -> str | None:
    """*url* with its credentials replaced by ``***`` (``None`` stays ``None``).

    ``http://u:p@host/v1?api-key=K&x=1`` becomes ``http://***@host/v1?api-key=***&x=1``.
    A value that cannot be parsed as a URL is masked whole when it looks like a key.
    """
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode(
                [
                    (k, MASK if _is_credential_param(k) or looks_like_key(v) else v)
                    for k, v in pairs
                ],
                safe="*",
            )
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return MASK if looks_like_key(url) else mask_secrets(url)


def url_problems(url: str) -> list[str]:
    """What credentials *url* carries, in words that do not quote them (``[]``: none)."""
    out = []
    try:
        parts = urlsplit(url)
    except ValueError:
        return ["it is not a valid URL"]
    if parts.username is not None or parts.password is not None:
        out.append("it holds a user name or password (user:password@)")
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if _is_credential_param(name):
            out.append(f"its query parameter {name!r} carries a credential")
        elif looks_like_key(value):
            out.append(f"its query parameter {name!r} holds a value shaped like a key")
    if parts.fragment:
        out.append("it has a #fragment (an endpoint has none)")
    return out


def key_name_problem(value: object, *, field: str = "[llm] api_key_env") -> str | None:
    """Why *value* is not a usable environment variable name, or ``None``. The message never
    quotes a value that looks like a key."""
    if not isinstance(value, str) or not value:
        return f"{field} must be the name of an environment variable, like OPENAI_API_KEY"
    if looks_like_key(value):
        return (
            f"{field} holds what looks like an API key, not the NAME of an environment variable "
            "(the value is not shown). Never put a key in a plan: put the variable's name there "
            '(e.g. api_key_env = "OPENAI_API_KEY") and the key in that variable; if the key was '
            "shared, revoke it"
        )
    if not re.match(_ENV_NAME, value):
        return (
            f"{field} = {value!r} is not an environment variable name (letters, digits and _, "
            "not starting with a digit), like OPENAI_API_KEY"
        )
    return None


# a provider's key or a bearer token inside running text (an error message)
_KEY_IN_TEXT = (
    r"(?i)\b(?:sk-|sk_|rk-|pk-|hf_|ghp_|gho_|github_pat_|aiza|xox[a-z]-)[A-Za-z0-9_\-]{8,}"
)
_BEARER_IN_TEXT = r"(?i)\b(bearer)\s+(?!\*\*\*)[^\s\"',;)]+"
_BASIC_IN_TEXT = r"(?i)\b(basic)\s+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])"
# a header or field carrying a credential, whatever its scheme: Authorization: Token abc,
# "api-key": "abc", x-api-key=abc (the scheme word, when there is one, is kept)
_HEADER_IN_TEXT = (
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api[-_]key|x-goog-api-key|"
    r"ocp-apim-subscription-key|access[-_]token|password)"
    r"([\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token|digest|apikey|key)\s+)?"
    r"(\*\*\*|[^\s\"',;)}\]&]+)"
)
# the user info of a URL (scheme://user:password@host)
_USERINFO_IN_TEXT = r"(?i)\b([a-z][a-z0-9+.\-]*://)(?!\*\*\*@)[^\s/@\"'<>]+@"
# a query parameter (after ? or &) and its value
_QUERY_IN_TEXT = r"([?&])([A-Za-z0-9_.\-]+)=([^&\s\"'#<>]*)"
_SPEC_TOKEN = r"[^\s=,;:()<>\[\]{}\"'|]+"
_SPEC_ITEM = r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([^,;()]*)"
_LONG_TOKEN = r"^[A-Za-z0-9_\-]{32,}$"


def known_secrets(extra: Iterable[str | None] = ()) -> list[str]:
    """The keys this process knows: *extra* plus the values (8 characters or more) of the
    environment variables whose names are credential names (``OPENAI_API_KEY``, ``*_TOKEN``,
    ``*_SECRET``, ``*PASSWORD``...); longest first, so a key is masked before its parts. The
    environment is read, never changed."""
    found = {v for v in extra if v and len(v) >= 8}
    for name, value in os.environ.items():
        n = name.lower()
        if value and len(value) >= 8 and (_is_credential_param(n) or "api_key" in n):
            found.add(value)
    return sorted(found, key=len, reverse=True)


def mask_secrets(text: str, extra: Iterable[str | None] = ()) -> str:
    """*text* with every credential replaced by ``***``: the keys the process knows
    (:func:`known_secrets` with *extra*), ``Bearer <token>`` and ``Basic <user:password in
    base64>``, the value of an ``Authorization`` / ``api-key`` / ``x-api-key`` header or field,
    the user info of a URL (``scheme://user:password@``), the value of a credential-named query
    parameter (``?api-key=``, ``&token=``...) or of one shaped like a key, and every token
    shaped like a provider's key. Text holding none is returned unchanged."""
    out = str(text)
    for secret in known_secrets(extra):
        out = out.replace(secret, MASK)
    out = re.sub(_HEADER_IN_TEXT, _mask_header, out)
    out = re.sub(_BEARER_IN_TEXT, lambda m: f"{m.group(1)} {MASK}", out)
    out = re.sub(_BASIC_IN_TEXT, _mask_basic, out)
    out = re.sub(_USERINFO_IN_TEXT, lambda m: f"{m.group(1)}{MASK}@", out)
    out = re.sub(_QUERY_IN_TEXT, _mask_query_item, out)
    return re.sub(_KEY_IN_TEXT, MASK, out)


def _mask_header(m: re.Match) -> str:
    if m.group(4) == MASK:
        return m.group(0)
    scheme = f"{m.group(3)} " if m.group(3) else ""
    return f"{m.group(1)}{m.group(2)}{scheme}{MASK}"


def _mask_basic(m: re.Match) -> str:
    """``Basic <token>`` masked when the token is base64 of ``user:password`` (so that the word
    "basic" in prose keeps the word after it)."""
    import base64  # lazy: only when a text holds "basic" and a base64-looking word
    import binascii

    token = m.group(2)
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    return f"{m.group(1)} {MASK}" if b":" in decoded else m.group(0)


def _mask_query_item(m: re.Match) -> str:
    name, value = m.group(2), m.group(3)
    if value and value != MASK and (_is_credential_param(name) or looks_like_key(value)):
        return f"{m.group(1)}{name}={MASK}"
    return m.group(0)


class SecretFilter:
    """A logging filter masking credentials (:func:`mask_secrets`) in every record it sees: the
    message with its arguments, the traceback and the stack. It never drops a record. (Any
    object with a ``filter(record)`` method is a logging filter; this one needs no import of
    :mod:`logging` until a record arrives.)

    Put it on a *handler* (``handler.addFilter(SecretFilter())``) to mask the lines of every
    logger whose records reach that handler, third-party ones included (a filter on a logger
    sees only the records logged on that very logger). Library code never installs it: the
    command line does, on the handlers it configures.

    Args:
        extra: further secrets to mask (besides those :func:`known_secrets` finds).
    """

    def __init__(self, extra: Iterable[str | None] = ()):
        self.extra = [e for e in extra if e]

    def filter(self, record) -> bool:
        """Mask *record* (a :class:`logging.LogRecord`) in place; always ``True``."""
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it itself
            message = str(record.msg)
        masked = mask_secrets(message, self.extra)
        if masked != message or record.args:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            import logging  # lazy: a record with a traceback has imported it already

            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask_secrets(record.exc_text, self.extra)
        if record.stack_info:
            record.stack_info = mask_secrets(record.stack_info, self.extra)
        return True


_DEFAULT_PORTS = {"http": 80, "https": 443}
#: The endpoint the ``openai`` package calls when no base URL is given.
OPENAI_ENDPOINT = "https://api.openai.com/v1"


def base_url_problem(url: str) -> str | None:
    """Why *url* cannot be an endpoint's base URL, in one line that quotes it masked
    (:func:`redact_url`), or ``None``: it needs ``http://`` or ``https://``, a host, a port
    (when given) from 1 to 65535, and no query string or fragment (the ``openai`` client
    appends the request's path after the whole URL: ``/v1?api-key=K`` posts to
    ``/v1/?api-key=K/chat/completions``)."""
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        return f"base URL {shown!r} is not a valid URL ({mask_secrets(str(exc))}); {_URL_FORM}"
    if parts.scheme.lower() not in _DEFAULT_PORTS:
        return f"base URL {shown!r} must start with http:// or https://; {_URL_FORM}"
    if not parts.hostname:
        return f"base URL {shown!r} names no host; {_URL_FORM}"
    if port == 0:
        return f"base URL {shown!r}: port 0 is not a port (1-65535); {_URL_FORM}"
    if parts.query or parts.fragment:  # the openai client appends the request's path after it
        return (
            f"base URL {shown!r} has a query string or #fragment, which the request's path "
            "would be appended to (every request fails); give the endpoint without it, and the "
            "key in OPENAI_API_KEY (or the variable named by api_key_env)"
        )
    return None


_URL_FORM = "give the endpoint as http://HOST:PORT/v1 (port 1-65535), e.g. http://127.0.0.1:8000/v1"


def endpoint_id(url: str | None) -> str:
    """*url* as a cache-key part naming the server that answers: scheme and host lower case, the
    default port dropped, no trailing ``/``, the user info and every credential query parameter
    (:func:`redact_url`'s) *removed*, the other query parameters sorted. ``None`` (the
    ``openai`` default) is ``https://api.openai.com/v1``. Two URLs of one server with different
    credentials give the same text; the text holds no credential."""
    if not url:
        return OPENAI_ENDPOINT
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return MASK if looks_like_key(url) else url.strip()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    query = sorted(
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not (_is_credential_param(k) or looks_like_key(v))
    )
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, netloc, path, urlencode(query), ""))


def _key_shaped(token: str) -> bool:
    """Stricter than :func:`looks_like_key` (model and file names in specs mix digits and
    letters): a provider's prefix with 8 characters after it, a long hex string, or a token of
    32 or more letters, digits, ``-`` and ``_`` mixing upper case, lower case and digits."""
    low = token.lower()
    if low.startswith(_KEY_PREFIXES) and len(token) >= 12:
        return True
    if re.match(_HEX, token):
        return True
    return bool(
        re.match(_LONG_TOKEN, token)
        and any(c.isdigit() for c in token)
        and any(c.islower() for c in token)
        and any(c.isupper() for c in token)
    )


def spec_key_problem(spec: str, *, what: str = "retriever spec") -> str | None:
    """Why *spec* must be refused because it holds a key, in words that do not quote it (the
    option holding it is named when there is one), or ``None``."""
    secrets = set(known_secrets())
    if not any(t in secrets or _key_shaped(t) for t in re.findall(_SPEC_TOKEN, spec)):
        return None
    names = [
        name
        for name, value in re.findall(_SPEC_ITEM, spec)
        if any(t in secrets or _key_shaped(t) for t in re.findall(_SPEC_TOKEN, value))
    ]
    where = f" (option {', '.join(repr(n) for n in names)})" if names else ""
    return (
        f"the {what} holds what looks like an API key{where} (the value is not shown). Specs "
        "and model names name systems, run files and cache folders, so keys never go in them: "
        "put the key in "
        "OPENAI_API_KEY (or the variable named by api_key_env=NAME) and drop it from there; "
        "if the key was shared, revoke it"
    )
