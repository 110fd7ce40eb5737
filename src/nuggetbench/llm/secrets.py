"""Keeping credentials out of plans, manifests, logs and messages.

* :func:`redact_url` replaces the credentials of a URL (``user:password@``, a credential-named
  query parameter such as ``?api-key=``, a query value shaped like a key) with ``***``; every
  description of an endpoint goes through it.
* :func:`url_problems` says what credentials a URL carries, without quoting them (a plan must
  carry none: keys live in the environment only).
* :func:`key_name_problem` checks that a value meant to be the NAME of an environment variable
  (``[llm] api_key_env``) is one, and not the key itself.
* :func:`mask_secrets` masks, in any text (an endpoint's error message), every key the process
  knows (:func:`known_secrets`: the values of credential-named environment variables) and every
  token shaped like a provider's key or a bearer token.
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
    "MASK",
]

MASK = "***"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_KEY_PREFIXES = ("sk-", "sk_", "rk-", "pk-", "hf_", "ghp_", "gho_", "github_pat_", "aiza", "xox")
_HEX = re.compile(r"^[0-9a-fA-F]{32,}$")
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
    if _HEX.match(v):
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
        return MASK if looks_like_key(url) else url


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
    if not _ENV_NAME.match(value):
        return (
            f"{field} = {value!r} is not an environment variable name (letters, digits and _, "
            "not starting with a digit), like OPENAI_API_KEY"
        )
    return None


# a provider's key or a bearer token inside running text (an error message)
_KEY_IN_TEXT = re.compile(
    r"(?i)\b(?:sk-|sk_|rk-|pk-|hf_|ghp_|gho_|github_pat_|aiza|xox[a-z]-)[A-Za-z0-9_\-]{8,}"
)
_BEARER_IN_TEXT = re.compile(r"(?i)\b(bearer)\s+[^\s\"',;)]+")
_SPEC_TOKEN = re.compile(r"[^\s=,;:()<>\[\]{}\"'|]+")
_SPEC_ITEM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([^,;()]*)")
_LONG_TOKEN = re.compile(r"^[A-Za-z0-9_\-]{32,}$")


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
    """*text* with every key the process knows (:func:`known_secrets` with *extra*), every
    ``Bearer <token>`` and every token shaped like a provider's key replaced by ``***``."""
    out = str(text)
    for secret in known_secrets(extra):
        out = out.replace(secret, MASK)
    out = _BEARER_IN_TEXT.sub(lambda m: f"{m.group(1)} {MASK}", out)
    return _KEY_IN_TEXT.sub(MASK, out)


def _key_shaped(token: str) -> bool:
    """Stricter than :func:`looks_like_key` (model and file names in specs mix digits and
    letters): a provider's prefix with 8 characters after it, a long hex string, or a token of
    32 or more letters, digits, ``-`` and ``_`` mixing upper case, lower case and digits."""
    low = token.lower()
    if low.startswith(_KEY_PREFIXES) and len(token) >= 12:
        return True
    if _HEX.match(token):
        return True
    return bool(
        _LONG_TOKEN.match(token)
        and any(c.isdigit() for c in token)
        and any(c.islower() for c in token)
        and any(c.isupper() for c in token)
    )


def spec_key_problem(spec: str, *, what: str = "retriever spec") -> str | None:
    """Why *spec* must be refused because it holds a key, in words that do not quote it (the
    option holding it is named when there is one), or ``None``."""
    secrets = set(known_secrets())
    if not any(t in secrets or _key_shaped(t) for t in _SPEC_TOKEN.findall(spec)):
        return None
    names = [
        name
        for name, value in _SPEC_ITEM.findall(spec)
        if any(t in secrets or _key_shaped(t) for t in _SPEC_TOKEN.findall(value))
    ]
    where = f" (option {', '.join(repr(n) for n in names)})" if names else ""
    return (
        f"the {what} holds what looks like an API key{where} (the value is not shown). Specs "
        "and model names name systems, run files and cache folders, so keys never go in them: "
        "put the key in "
        "OPENAI_API_KEY (or the variable named by api_key_env=NAME) and drop it from there; "
        "if the key was shared, revoke it"
    )
