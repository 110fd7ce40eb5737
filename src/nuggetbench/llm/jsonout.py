"""Reading JSON out of model answers, and the answer schemas of the LLM stages.

Models wrap JSON in prose or code fences, or think aloud before it (the judge is asked to). The
last JSON object in the answer that has the expected top-level key is taken.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)

#: JSON Schema of a nugget answer (documentation; :func:`validate_nuggets` checks it).
NUGGETS_SCHEMA = {
    "type": "object",
    "required": ["nuggets"],
    "properties": {
        "nuggets": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}
    },
}
#: JSON Schema of a judge answer.
JUDGE_SCHEMA = {
    "type": "object",
    "required": ["judgments"],
    "properties": {
        "judgments": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["nugget", "chunk", "supported"],
                "properties": {
                    "nugget": {"type": "string"},
                    "chunk": {"type": "string"},
                    "reasoning": {"type": "string"},
                    "supported": {"type": "boolean"},
                },
            },
        }
    },
}
#: JSON Schema of a sub-question answer.
SUBQ_SCHEMA = {
    "type": "object",
    "required": ["subquestions"],
    "properties": {"subquestions": {"type": "array", "minItems": 1, "items": {"type": "string"}}},
}


class InvalidAnswer(ValueError):
    """A model answer that does not follow the schema; the message says what is wrong."""


def extract_json(text: str, key: str) -> dict:
    """The last JSON object in *text* that has top-level *key*.

    Raises:
        InvalidAnswer: no such object.
    """
    candidates: list[str] = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    found: dict | None = None
    decoder = json.JSONDecoder()
    for blob in candidates:
        try:
            obj = json.loads(blob)
            if isinstance(obj, dict) and key in obj:
                return obj
        except json.JSONDecodeError:
            pass
        for m in re.finditer(r"\{", blob):
            try:
                obj, _ = decoder.raw_decode(blob, m.start())
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and key in obj:
                found = obj
        if found is not None:
            return found
    raise InvalidAnswer(f"the answer holds no JSON object with a {key!r} field")


def validate_nuggets(text: str, *, max_nuggets: int) -> list[str]:
    """The nugget texts of an answer following :data:`NUGGETS_SCHEMA` (``{"text": ...}`` items are
    accepted too); duplicates and blanks are dropped and at most *max_nuggets* kept.

    Raises:
        InvalidAnswer: not JSON, no ``nuggets`` list, an item that is not text, or no nugget.
    """
    obj = extract_json(text, "nuggets")
    items = obj["nuggets"]
    if not isinstance(items, list):
        raise InvalidAnswer("'nuggets' must be a list of strings")
    out: list[str] = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("text", item.get("nugget"))
        if not isinstance(item, str):
            raise InvalidAnswer(f"nugget {item!r} is not a string")
        item = " ".join(item.split())
        if item and item not in out:
            out.append(item)
    if not out:
        raise InvalidAnswer("'nuggets' is empty")
    return out[:max_nuggets]


def validate_subquestions(text: str, *, max_items: int) -> list[str]:
    """The sub-questions of an answer following :data:`SUBQ_SCHEMA`.

    Raises:
        InvalidAnswer: not JSON or no non-empty ``subquestions`` list of strings.
    """
    obj = extract_json(text, "subquestions")
    items = obj["subquestions"]
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise InvalidAnswer("'subquestions' must be a list of strings")
    out = [" ".join(i.split()) for i in items if i.strip()]
    if not out:
        raise InvalidAnswer("'subquestions' is empty")
    return out[:max_items]


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("yes", "true", "supported", "support", "1"):
            return True
        if low in ("no", "false", "not supported", "unsupported", "not_supported", "0"):
            return False
    if isinstance(value, int):
        return bool(value)
    return None


def parse_judgments(text: str) -> list[tuple[str, str, bool, str]]:
    """``(nugget, chunk, supported, reasoning)`` entries of a judge answer; entries without a
    readable nugget, chunk or verdict are left out (their pairs count as missing).

    Raises:
        InvalidAnswer: not JSON or no ``judgments`` list.
    """
    obj = extract_json(text, "judgments")
    items = obj["judgments"]
    if not isinstance(items, list):
        raise InvalidAnswer("'judgments' must be a list")
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        verdict = _as_bool(item.get("supported", item.get("support", item.get("verdict"))))
        n, c = item.get("nugget"), item.get("chunk")
        if verdict is None or not isinstance(n, (str, int)) or not isinstance(c, (str, int)):
            continue
        out.append((str(n).strip(), str(c).strip(), verdict, str(item.get("reasoning") or "")))
    return out


__all__ = [
    "extract_json",
    "validate_nuggets",
    "validate_subquestions",
    "parse_judgments",
    "InvalidAnswer",
    "NUGGETS_SCHEMA",
    "JUDGE_SCHEMA",
    "SUBQ_SCHEMA",
]
