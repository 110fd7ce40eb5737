"""Versioned prompt files: ``templates/<name>.v<N>.txt`` inside :mod:`nuggetbench.llm`.

A file has a ``[system]`` section and a ``[user]`` section. Placeholders are written
``{{name}}`` and replaced literally (no format-string parsing, so code with braces or dollar signs in
a question cannot break a prompt). The version (``nuggets.v1``) and a hash of the file are part of
every cache key and of the benchmark's manifest: editing a prompt means adding a new version.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from nuggetbench.errors import InputError, UnknownNameError, suggest
from nuggetbench.llm.client import ChatRequest

DEFAULT_VERSIONS = {"nuggets": "v1", "judge": "v1", "subq": "v1", "hyde": "v1"}
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")


@dataclass(frozen=True)
class Prompt:
    """A loaded prompt: ``name`` (``nuggets``), ``version`` (``nuggets.v1``), texts and hash."""

    name: str
    version: str
    system: str
    user: str
    sha256: str

    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.system + self.user))

    def render(self, **values: str) -> list[dict]:
        """The chat messages with every ``{{name}}`` replaced by ``values[name]``.

        Raises:
            InputError: a placeholder has no value, or a value names no placeholder.
        """
        wanted = self.placeholders()
        missing = wanted - set(values)
        extra = set(values) - wanted
        if missing or extra:
            raise InputError(
                f"prompt {self.version}: missing values {sorted(missing)}, "
                f"unknown values {sorted(extra)}"
            )

        def fill(text: str) -> str:
            return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)

        return [
            {"role": "system", "content": fill(self.system)},
            {"role": "user", "content": fill(self.user)},
        ]


def available() -> list[str]:
    """Every ``name.vN`` shipped in the package, sorted."""
    folder = resources.files("nuggetbench.llm") / "templates"
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))


def load_prompt(name: str, version: str | None = None) -> Prompt:
    """Load prompt *name* at *version* (default :data:`DEFAULT_VERSIONS`).

    Raises:
        UnknownNameError: no such prompt file (the shipped ones are listed).
        InputError: the file lacks its ``[system]`` / ``[user]`` sections.
    """
    version = version or DEFAULT_VERSIONS.get(name, "v1")
    full = f"{name}.{version}"
    path = resources.files("nuggetbench.llm") / "templates" / f"{full}.txt"
    if not path.is_file():
        names = available()
        raise UnknownNameError(
            f"unknown prompt {full!r}.{suggest(full, names)} Shipped: {', '.join(names)}"
        )
    text = path.read_text(encoding="utf-8")
    match = re.fullmatch(r"\s*\[system\]\n(.*?)\n\[user\]\n(.*)", text, re.S)
    if match is None:
        raise InputError(f"prompt file {full}.txt must have a [system] and then a [user] section")
    system, user = match.group(1).strip("\n"), match.group(2).rstrip("\n")
    return Prompt(name, full, system, user, hashlib.sha256(text.encode()).hexdigest()[:16])


def chat_request(
    prompt: Prompt, values: Mapping[str, str], *, stage: str | None = None, **params: Any
) -> ChatRequest:
    """The one way nuggetbench builds a chat request (every LLM step calls it).

    Args:
        prompt: a versioned prompt (:func:`load_prompt`).
        values: ``{placeholder: text}`` it is rendered with (:meth:`Prompt.render`).
        stage: the stage its usage is recorded under; default ``prompt.name``.
        params: sampling parameters sent as they are (``temperature``, ``max_tokens``,
            ``logprobs``...); :func:`sampling` gives the usual two from an options value.

    Returns:
        The :class:`~nuggetbench.llm.client.ChatRequest` (its cache key covers the messages,
        the prompt's version and *params*).

    Raises:
        InputError: a placeholder has no value, or a value names no placeholder.
    """
    return ChatRequest(
        tuple(prompt.render(**values)),
        prompt.name if stage is None else stage,
        prompt.version,
        dict(params),
    )


def sampling(options: Any) -> dict[str, Any]:
    """``{"temperature": ..., "max_tokens": ...}`` of an options value that has both."""
    return {"temperature": options.temperature, "max_tokens": options.max_tokens}


__all__ = ["Prompt", "load_prompt", "chat_request", "sampling", "available", "DEFAULT_VERSIONS"]
