"""A local OpenAI-compatible chat-completions server for tests (stdlib only, loopback, port 0).

It answers deterministically from the prompt's content, so a build against it is reproducible:

* nugget prompts (``<answer>...</answer>``): the answer's first sentences as ``{"nuggets": [...]}``;
* judge prompts (``<nugget id=..>`` and ``<chunk id=..>`` blocks): a chunk supports a nugget when
  at least 60% of the nugget's content words (4+ letters) occur in the chunk; when the prompt lists
  ``<pairs>n1:c2 ...</pairs>`` only those pairs are judged;
* sub-question prompts (``<question>`` and the word "sub-questions"): two sub-questions;
* HyDE prompts (``<question>`` otherwise): a short passage made of the question's words;
* listwise ranking prompts (``<query>`` and passages ``[1] ...``): the permutation of the
  passages by a hidden relevance, ``[3] > [1] > [2]``;
* pointwise grading prompts (``<query>``, ``<passage>``, "on a scale from LOW to HIGH"): the
  hidden relevance as a grade, with the first token's log-probabilities when the request asks
  for them (70% on the grade, the rest on its neighbours);
* UMBRELA-style judge prompts (``<query>``, ``<passage>``, ``##final score``): a line of reasoning
  and ``##final score: G``, G the hidden relevance rounded and clipped to 0-3;
* nugget assignment prompts (``<answer>``, ``<nuggets count=..>``): a JSON list of labels read
  from markers in the answer (``+W`` support, ``~W`` partial support of the nugget whose first
  word is ``W``, else not_support);
* nugget creation prompts (``<current_nuggets>``, ``<documents>``): the nuggets so far plus each
  document's first sentence, as ``{"nuggets": [...]}``; importance prompts (``<nuggets_to_rate``):
  ``vital`` for a nugget holding the word "important", else ``okay``;
* anything else: ``"OK"``.

The hidden relevance is :attr:`LLMServer.relevance` ``(query, passage) -> grade`` (default: the
number of the query's content words in the passage). :attr:`LLMServer.noise` adds Gaussian noise
(standard deviation, seeded by the request) to it; :attr:`LLMServer.malformed` is the share of
first-turn ranking answers that are malformed, chosen by the request's hash among
:attr:`LLMServer.malformed_kinds`: a permutation with an id dropped, repeated, or unknown, or prose
without ids; a grade answer in prose without a number
(a repair turn is always answered well, unless :attr:`LLMServer.malformed_repairs`).

``GET /v1/models`` lists :attr:`LLMServer.models` (OpenAI's ``{"object": "list", "data": [...]}``);
with :attr:`LLMServer.require_key` set, it answers 401 unless the request carries ``Authorization:
Bearer <that key>``. Each such request is recorded in :attr:`LLMServer.probes` (not in the log).

Every request is logged (:attr:`LLMServer.log`: path, task, body, status, whether it was answered).
Faults are queued with :meth:`LLMServer.inject` and consumed by the next matching requests:
``"429"`` (rate limited, ``Retry-After: 0``), ``"500"``, ``"garbage"`` (HTTP 200 with a body that
is not JSON), ``"not_json"`` (a well-formed completion whose *content* is not JSON), ``"partial"``
(a judge answer covering only half the pairs), ``"huge"`` (a well-formed completion whose content is
:attr:`LLMServer.huge_chars` characters of prose holding no grade or JSON) and ``"hang"`` (no answer
until the server stops or ``hang_seconds`` pass: the client times out). :attr:`LLMServer.on_request` is called with each log
entry before it is answered; when it returns true the request is dropped unanswered (tests use it
to kill a build in flight).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"[A-Za-z0-9_]+")
_SENT = re.compile(r"(?<=[.!?])\s+")


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) >= 4}


def _blocks(tag: str, text: str) -> list[tuple[str, str]]:
    pattern = re.compile(rf'<{tag} id="([^"]+)">\n?(.*?)\n?</{tag}>', re.S)
    return [(m.group(1), m.group(2)) for m in pattern.finditer(text)]


def _one(tag: str, text: str) -> str | None:
    m = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.S)
    return m.group(1) if m else None


def task_of(prompt: str) -> str:
    if "<current_nuggets>" in prompt and "<documents>" in prompt:
        return "create"
    if "<nuggets_to_rate" in prompt:
        return "importance"
    if "##final score" in prompt and "<query>" in prompt and "<passage>" in prompt:
        return "umbrela"
    if "<nuggets count=" in prompt and "<answer>" in prompt:
        return "assign"
    if "<query>" in prompt and "passages, each indicated by" in prompt:
        return "listwise"
    if "<query>" in prompt and "<passage>" in prompt:
        return "pointwise"
    if "<chunk id=" in prompt and "<nugget id=" in prompt:
        return "judge"
    if "<answer>" in prompt:
        return "nuggets"
    if "<question>" in prompt and "sub-question" in prompt.lower():
        return "subq"
    if "<question>" in prompt:
        return "hyde"
    return "other"


def answer_nuggets(prompt: str) -> str:
    answer = _one("answer", prompt) or ""
    answer = re.sub(r"```.*?```", " ", answer, flags=re.S)
    sentences = [s.strip() for s in _SENT.split(answer) if len(s.split()) >= 3]
    return json.dumps({"nuggets": sentences[:4] or [answer.strip()[:200] or "No fact."]})


def supports(nugget: str, chunk: str) -> bool:
    words = content_words(nugget)
    if not words:
        return False
    return len(words & content_words(chunk)) / len(words) >= 0.6


def answer_judge(prompt: str, *, partial: bool = False) -> str:
    nuggets = _blocks("nugget", prompt)
    chunks = _blocks("chunk", prompt)
    m = re.search(r"<pairs>\n(.*?)\n</pairs>", prompt, re.S)
    pairs_text = m.group(1) if m else None
    if pairs_text:
        wanted = [tuple(p.split(":", 1)) for p in pairs_text.split()]
    else:
        wanted = [(n, c) for n, _ in nuggets for c, _ in chunks]
    ntext, ctext = dict(nuggets), dict(chunks)
    verdicts = []
    for n, c in wanted:
        ok = supports(ntext.get(n, ""), ctext.get(c, ""))
        verdicts.append(
            {
                "nugget": n,
                "chunk": c,
                "reasoning": f"{'shares' if ok else 'lacks'} the nugget's key terms",
                "supported": ok,
            }
        )
    if partial:
        verdicts = verdicts[: max(1, len(verdicts) // 2)]
    return "Let me check each pair.\n```json\n" + json.dumps({"judgments": verdicts}) + "\n```"


def answer_subq(prompt: str) -> str:
    q = (_one("question", prompt) or "").split("\n")[0].strip()
    words = [w for w in _WORD.findall(q) if len(w) >= 4][:6]
    return json.dumps(
        {
            "subquestions": [
                f"What is {' '.join(words[:3])}?",
                f"How does {' '.join(words[3:6] or words[:2])} work?",
            ]
        }
    )


def answer_hyde(prompt: str) -> str:
    q = _one("question", prompt) or ""
    words = [w for w in _WORD.findall(q) if len(w) >= 4][:30]
    return "A likely answer mentions " + " ".join(words) + "."


def _unit(key: str, salt: str) -> float:
    """A number in [0, 1) fixed by a request key and a salt."""
    return int(hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:12], 16) / float(16**12)


def _gauss(key: str, salt: str) -> float:
    """A standard normal number fixed by a request key and a salt (Box-Muller)."""
    import math

    u1, u2 = max(_unit(key, salt + "1"), 1e-12), _unit(key, salt + "2")
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


def overlap_relevance(query: str, passage: str) -> float:
    """The default hidden relevance: the query's content words found in the passage."""
    return float(len(content_words(query) & content_words(passage)))


#: The malformed listwise answers, drawn by the request's hash among :attr:`LLMServer.malformed_kinds`.
LISTWISE_FAULTS = ("drop", "repeat", "unknown", "prose")


def answer_listwise(
    prompt: str,
    relevance,
    *,
    noise: float,
    key: str,
    malformed: bool,
    kinds: tuple[str, ...] = LISTWISE_FAULTS,
) -> str:
    query = _one("query", prompt) or ""
    passages = [
        (int(m.group(1)), m.group(2)) for m in re.finditer(r"^\[(\d+)\] (.*)$", prompt, re.M)
    ]
    scored = [(relevance(query, text) + noise * _gauss(key, f"p{i}"), i) for i, text in passages]
    ids = [i for _, i in sorted(scored, key=lambda t: (-t[0], t[1]))]
    if malformed and ids:
        kind = kinds[int(_unit(key, "kind") * len(kinds))]
        if kind == "drop":
            ids = ids[:-1]  # a passage left out
        elif kind == "repeat":
            ids = [*ids[:2], ids[0], *ids[2:]]  # an id repeated
        elif kind == "unknown":
            ids = [*ids[:1], len(ids) + 3, *ids[1:]]  # an id naming no passage
        else:  # "prose": no ranking at all
            return "I am sorry, but these passages are all equally relevant."
    return " > ".join(f"[{i}]" for i in ids)


def answer_pointwise(prompt: str, relevance, *, noise: float, key: str) -> tuple[int, int, int]:
    """``(grade, low, high)`` for a grading prompt."""
    m = re.search(r"on a scale from (\d+) to (\d+)", prompt)
    low, high = (int(m.group(1)), int(m.group(2))) if m else (0, 3)
    value = relevance(_one("query", prompt) or "", _one("passage", prompt) or "")
    value += noise * _gauss(key, "grade")
    return min(high, max(low, int(round(value)))), low, high


def grade_logprobs(grade: int, low: int, high: int) -> dict:
    """The ``logprobs`` of a one-token grade answer: 70% on *grade*, 30% on its neighbours."""
    import math

    near = [g for g in (grade - 1, grade + 1) if low <= g <= high]
    probs = {grade: 0.7, **{g: 0.3 / len(near) for g in near}} if near else {grade: 1.0}
    top = [
        {"token": str(g), "logprob": math.log(p), "bytes": None}
        for g, p in sorted(probs.items(), key=lambda t: -t[1])
    ]
    first = {**top[0], "top_logprobs": top}
    return {"content": [first]}


def answer_umbrela(prompt: str, relevance, *, bad: bool) -> str:
    """A 0-3 judgment ending in ``##final score: G`` (G: the hidden relevance, rounded and
    clipped), or prose holding no grade when *bad*."""
    if bad:
        return "I cannot decide how relevant this passage is."
    value = relevance(_one("query", prompt) or "", _one("passage", prompt) or "")
    grade = min(3, max(0, int(round(value))))
    return f"The passage matches the intent (M) to degree {grade}; it is trustworthy.\n##final score: {grade}"


_MARK = re.compile(r"(?<![\w+~])([+~])([A-Za-z0-9_]+)")


def answer_assign(prompt: str, *, bad: bool) -> str:
    """Labels from markers in the answer: a nugget whose first word ``W`` is written ``+W`` in the
    answer is supported, ``~W`` partly supported, else not supported; as a JSON list in the
    nuggets' order. When *bad*: one label too few."""
    answer = _one("answer", prompt) or ""
    marks = {word: sign for sign, word in _MARK.findall(answer)}
    block = re.search(r"<nuggets count=\"\d+\">\n(.*?)\n</nuggets>", prompt, re.S)
    lines = [ln for ln in (block.group(1).split("\n") if block else []) if ln.strip()]
    labels = []
    for line in lines:
        text = re.sub(r"^\d+\.\s*", "", line.strip())
        word = text.split()[0] if text.split() else ""
        sign = marks.get(word)
        labels.append(
            "support" if sign == "+" else "partial_support" if sign == "~" else "not_support"
        )
    if bad:
        labels = labels[:-1]
    return "```json\n" + json.dumps(labels) + "\n```"


def answer_create(prompt: str, *, bad: bool) -> str:
    """The nuggets so far plus the first sentence of each document (duplicates dropped), cut to
    the prompt's "at most N"; prose when *bad*."""
    if bad:
        return "Here are some facts, in prose."
    current = [
        ln[2:].strip()
        for ln in (_one("current_nuggets", prompt) or "").split("\n")
        if ln.startswith("- ")
    ]
    docs = re.findall(r"^\[\d+\] (.*)$", _one("documents", prompt) or "", re.M)
    out = list(current)
    for doc in docs:
        first = _SENT.split(doc.strip())[0].strip()
        if first and first not in out:
            out.append(first)
    m = re.search(r"keep at most (\d+) nuggets", prompt)
    return json.dumps({"nuggets": out[: int(m.group(1)) if m else 30]})


def answer_importance(prompt: str, *, bad: bool) -> str:
    """``vital`` for a nugget containing the word "important", else ``okay``; one label too few
    when *bad*."""
    block = re.search(r"<nuggets_to_rate count=\"\d+\">\n(.*?)\n</nuggets_to_rate>", prompt, re.S)
    lines = [ln for ln in (block.group(1).split("\n") if block else []) if ln.strip()]
    labels = ["vital" if "important" in ln.lower() else "okay" for ln in lines]
    return json.dumps({"importance": labels[:-1] if bad else labels})


@dataclass
class Entry:
    """One logged request."""

    path: str
    task: str
    body: dict
    key: str
    status: int = 0
    answered: bool = False
    fault: str | None = None
    extra: dict = field(default_factory=dict)


class LLMServer:
    """Start with ``with LLMServer() as server:``; ``server.base_url`` ends in ``/v1``."""

    def __init__(self, *, hang_seconds: float = 30.0):
        self.relevance: Callable[[str, str], float] = overlap_relevance
        self.noise = 0.0
        self.malformed = 0.0
        self.malformed_repairs = False
        self.malformed_kinds: tuple[str, ...] = LISTWISE_FAULTS
        self.logprobs = True
        self.log: list[Entry] = []
        self.faults: list[tuple[str, str | None]] = []
        self.on_request: Callable[[Entry], bool | None] | None = None
        self.hang_seconds = hang_seconds
        self.huge_chars = 10_000_000
        self.models: list[str] = ["test-model", "flag-model", "m"]
        self.require_key: str | None = None
        self.probes: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- control ----------------------------------------------------------------------
    def inject(self, kind: str, *, times: int = 1, task: str | None = None) -> None:
        """Queue *times* faults of *kind* for the next requests (of *task* when given)."""
        assert kind in {"429", "500", "garbage", "not_json", "partial", "hang", "huge"}, kind
        with self._lock:
            self.faults.extend([(kind, task)] * times)

    def _take_fault(self, task: str) -> str | None:
        with self._lock:
            for i, (kind, want) in enumerate(self.faults):
                if want is None or want == task:
                    del self.faults[i]
                    return kind
        return None

    def answered(self, task: str | None = None) -> list[Entry]:
        return [e for e in self.log if e.answered and (task is None or e.task == task)]

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> LLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                server._handle(self)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                server._models(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- protocol ---------------------------------------------------------------------
    def _send(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: bytes,
        headers: dict[str, str] | None = None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()

    def _models(self, handler: BaseHTTPRequestHandler) -> None:
        """``GET /v1/models``: the model list (401 without the required key)."""
        auth = handler.headers.get("Authorization")
        self.probes.append({"path": handler.path, "auth": auth})
        if handler.path.split("?")[0].rstrip("/") != "/v1/models":
            self._send(handler, 404, b'{"error": {"message": "unknown path"}}')
            return
        if self.require_key is not None and auth != f"Bearer {self.require_key}":
            body = b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'
            self._send(handler, 401, body)
            return
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in self.models]
        self._send(handler, 200, json.dumps({"object": "list", "data": data}).encode())

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(handler, 400, b'{"error": {"message": "body is not JSON"}}')
            return
        if not handler.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
            self._send(handler, 404, b'{"error": {"message": "unknown path"}}')
            return
        messages = body.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        last_user = next(
            (str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), ""
        )
        task = task_of(last_user) if len(messages) <= 2 else task_of(messages[1].get("content", ""))
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        entry = Entry(
            handler.path, task, body, key, extra={"auth": handler.headers.get("Authorization")}
        )
        with self._lock:
            self.log.append(entry)
        if self.on_request is not None and self.on_request(entry):
            entry.status = 0
            handler.close_connection = True
            return
        fault = self._take_fault(task)
        entry.fault = fault
        if fault == "hang":
            self._stop.wait(self.hang_seconds)
            entry.status = 0
            return
        if fault == "429":
            entry.status = 429
            self._send(
                handler,
                429,
                b'{"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}',
                {"Retry-After": "0"},
            )
            return
        if fault == "500":
            entry.status = 500
            self._send(
                handler, 500, b'{"error": {"message": "internal error", "type": "server_error"}}'
            )
            return
        if fault == "garbage":
            entry.status = 200
            self._send(handler, 200, b"<html>upstream proxy error</html>")
            return
        logprobs = None
        first_turn = len(messages) <= 2
        bad = first_turn and _unit(key, "malformed") < self.malformed
        if fault == "not_json":
            content = "Sure! Here are the facts you asked for, in prose rather than JSON."
        elif fault == "huge":
            content = ("blah " * (self.huge_chars // 5 + 1))[: self.huge_chars]
        elif task == "listwise":
            content = answer_listwise(  # a repair turn ranks the first turn's passages
                messages[1].get("content", "") if not first_turn else last_user,
                self.relevance,
                noise=self.noise,
                key=key,
                malformed=bad or (self.malformed_repairs and not first_turn),
                kinds=self.malformed_kinds,
            )
        elif task == "umbrela":
            content = answer_umbrela(
                messages[1].get("content", ""),
                self.relevance,
                bad=bad or (self.malformed_repairs and not first_turn),
            )
        elif task in ("create", "importance"):
            answer = answer_create if task == "create" else answer_importance
            content = answer(
                messages[1].get("content", ""),
                bad=bad or (self.malformed_repairs and not first_turn),
            )
        elif task == "assign":
            content = answer_assign(
                messages[1].get("content", ""),
                bad=bad or (self.malformed_repairs and not first_turn),
            )
        elif task == "pointwise":
            grade, low, high = answer_pointwise(
                messages[1].get("content", ""), self.relevance, noise=self.noise, key=key
            )
            bad = bad or (self.malformed_repairs and not first_turn)
            content = "The passage is hard to judge." if bad else str(grade)
            if body.get("logprobs") and self.logprobs and not bad:
                logprobs = grade_logprobs(grade, low, high)
        elif len(messages) > 2 and task in ("nuggets", "subq"):
            # a repair turn: answer the original task again, correctly this time
            content = answer_nuggets(prompt) if task == "nuggets" else answer_subq(prompt)
        elif task == "judge":
            content = answer_judge(last_user, partial=fault == "partial")
        elif task == "nuggets":
            content = answer_nuggets(last_user)
        elif task == "subq":
            content = answer_subq(last_user)
        elif task == "hyde":
            content = answer_hyde(last_user)
        else:
            content = "OK"
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(content.split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        payload = {
            "id": "chatcmpl-" + key[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": logprobs,
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }
        entry.status = 200
        self._send(handler, 200, json.dumps(payload).encode())
        entry.answered = True


__all__ = [
    "LLMServer",
    "Entry",
    "supports",
    "content_words",
    "task_of",
    "overlap_relevance",
    "grade_logprobs",
]
