"""The SQLite cache of LLM requests and responses, and the per-stage usage ledger.

Every answered request is stored under a key made of the endpoint that answered (its base URL
normalised, credentials removed: :func:`~.secrets.endpoint_id`), the model, the prompt version, the
messages and the sampling parameters, and committed as soon as it arrives (WAL journal), so a build
killed at any point resumes without losing or repeating an answered call, and a second server
serving a model of the same name is never answered from the first one's replies. The request stored
is the JSON body sent to the endpoint, and the ``endpoint`` column the credential-free address: no
API key, password or credential query parameter is written.

The file is compacted after deletions: a new database is created with ``auto_vacuum =
INCREMENTAL``, and :meth:`LLMCache.discard` returns the freed pages to the file system (``PRAGMA
incremental_vacuum``; a database made before, without auto-vacuum, is converted by one ``VACUUM``)
and truncates the write-ahead log, so unusable answers that were deleted do not keep their space.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nuggetbench.errors import CacheError

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
#: The write-ahead log is truncated to this size after a transaction that grew it (bytes).
WAL_LIMIT = 16 << 20


def request_key(
    model: str,
    prompt_version: str,
    messages: list[dict],
    params: dict[str, Any],
    *,
    endpoint: str | None = None,
) -> str:
    """SHA-256 (hex) of the canonical JSON of ``(endpoint, model, prompt_version, messages,
    params)``; *endpoint* is the answering server (:func:`~.secrets.endpoint_id`, which holds no
    credential). Without one, the key of the rows written before the endpoint was part of it."""
    payload = {
        "model": model,
        "prompt_version": prompt_version,
        "messages": messages,
        "params": params,
        "v": SCHEMA_VERSION,
    }
    if endpoint is not None:
        payload["endpoint"] = endpoint
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """A stored answer: its text and token usage."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    extra: dict | None = None


class LLMCache:
    """A thread-safe SQLite table ``key -> response`` in WAL mode, one commit per response.

    Args:
        path: the database file (created with its folder).

    Raises:
        CacheError: the file exists but is not a cache database nuggetbench can read.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # takes effect on a new file only
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "stage TEXT NOT NULL, prompt_version TEXT NOT NULL, request TEXT NOT NULL, "
                "response TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, "
                "completion_tokens INTEGER NOT NULL, created REAL NOT NULL)"
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
            if "extra" not in columns:  # caches written before answers carried log-probabilities
                self._db.execute("ALTER TABLE responses ADD COLUMN extra TEXT")
            if "endpoint" not in columns:  # caches written before the endpoint was recorded
                self._db.execute("ALTER TABLE responses ADD COLUMN endpoint TEXT")
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise CacheError(
                f"{self.path}: not a readable LLM cache database ({exc}); move it away "
                "or point the plan's [llm] cache at another file"
            ) from exc

    def get(self, key: str) -> CachedResponse | None:
        """The stored answer under *key*, or ``None``."""
        with self._lock:
            row = self._db.execute(
                "SELECT response, prompt_tokens, completion_tokens, extra FROM responses "
                "WHERE key = ?",
                (key,),
            ).fetchone()
        if not row:
            return None
        extra = json.loads(row[3]) if row[3] else None
        return CachedResponse(row[0], int(row[1]), int(row[2]), extra)

    def put(
        self,
        key: str,
        *,
        model: str,
        stage: str,
        prompt_version: str,
        request: dict,
        response: str,
        prompt_tokens: int,
        completion_tokens: int,
        extra: dict | None = None,
        endpoint: str | None = None,
        replace: bool = False,
    ) -> None:
        """Store one answer and commit at once. A later identical key keeps the first answer,
        unless *replace* (a request sent again on purpose: ``--no-cache``). *extra* holds what
        the answer carries besides its text (``{"top_logprobs": ...}``, ``{"reply_chars": N}``);
        *endpoint* is the answering server without credentials (:func:`~.secrets.endpoint_id`)."""
        blob = json.dumps(request, sort_keys=True, ensure_ascii=False)
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._lock:
            self._db.execute(
                f"{verb} INTO responses (key, model, stage, prompt_version, request, "
                "response, prompt_tokens, completion_tokens, created, extra, endpoint) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    stage,
                    prompt_version,
                    blob,
                    response,
                    int(prompt_tokens),
                    int(completion_tokens),
                    time.time(),
                    json.dumps(extra) if extra else None,
                    endpoint,
                ),
            )
            self._db.commit()

    def discard(self, keys: Iterable[str]) -> int:
        """Delete the answers stored under *keys* (unusable answers must not be served again)
        and compact the file (:meth:`compact`); returns how many were stored. Commits at once."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return 0
        with self._lock:
            cur = self._db.executemany("DELETE FROM responses WHERE key = ?", [(k,) for k in keys])
            self._db.commit()
            removed = int(cur.rowcount)
        if removed:
            self.compact()
        return removed

    def compact(self) -> bool:
        """Give the free pages of the file back to the file system and truncate the write-ahead
        log; returns whether it could (another process holding the file busy past the timeout
        leaves it for the next deletion, logged at DEBUG). A database made without auto-vacuum
        is converted to ``auto_vacuum = INCREMENTAL`` by one ``VACUUM``."""
        with self._lock:
            try:
                mode = int(self._db.execute("PRAGMA auto_vacuum").fetchone()[0])
                if mode == 0:  # made before: VACUUM applies the mode set when it was opened
                    self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
                    self._db.execute("VACUUM")
                else:  # a script steps the pragma to its end (one execute frees one page)
                    self._db.executescript("PRAGMA incremental_vacuum;")
                self._db.commit()
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                return True
            except sqlite3.OperationalError as exc:  # busy: another process reads or writes
                log.debug("%s: not compacted now (%s)", self.path, exc)
                return False

    def file_bytes(self) -> int:
        """Bytes on disk: the database file and its write-ahead log."""
        wal = self.path.with_name(self.path.name + "-wal")
        return sum(p.stat().st_size for p in (self.path, wal) if p.exists())

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __repr__(self) -> str:
        return f"<LLMCache {self.path}>"


@dataclass
class StageUsage:
    """Calls and tokens of one stage: paid now (sent to the endpoint) and served from the cache."""

    paid_calls: int = 0
    cached_calls: int = 0
    paid_prompt_tokens: int = 0
    paid_completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    failed_calls: int = 0
    retries: int = 0
    unusable: int = 0
    keys: dict[str, tuple[int, int]] = field(default_factory=dict)

    def as_dict(self, price: tuple[float, float] | None) -> dict[str, Any]:
        def cost(p: int, c: int) -> float | None:
            if price is None:
                return None
            return round((p * price[0] + c * price[1]) / 1e6, 6)

        total_p = sum(v[0] for v in self.keys.values())
        total_c = sum(v[1] for v in self.keys.values())
        return {
            "requests": len(self.keys),
            "paid_calls": self.paid_calls,
            "cached_calls": self.cached_calls,
            "failed_calls": self.failed_calls,
            "retries": self.retries,
            "prompt_tokens": total_p,
            "completion_tokens": total_c,
            "paid_prompt_tokens": self.paid_prompt_tokens,
            "paid_completion_tokens": self.paid_completion_tokens,
            "cost_usd": cost(total_p, total_c),
            "paid_cost_usd": cost(self.paid_prompt_tokens, self.paid_completion_tokens),
        }


class UsageLedger:
    """Token usage and cost per stage.

    ``cost_usd`` is the cost of every distinct request the stage used (paid now or earlier: the
    cost of building the benchmark, the same after an interrupted and resumed build);
    ``paid_cost_usd`` is what this process sent. Prices are USD per million tokens,
    ``(input, output)``; ``None`` when the plan has no price for the model.
    """

    def __init__(self, price: tuple[float, float] | None = None):
        self.price = price
        self._stages: dict[str, StageUsage] = {}
        self._lock = threading.Lock()

    def stage(self, name: str) -> StageUsage:
        with self._lock:
            return self._stages.setdefault(name, StageUsage())

    def record(
        self, stage: str, key: str, prompt_tokens: int, completion_tokens: int, *, cached: bool
    ) -> None:
        with self._lock:
            usage = self._stages.setdefault(stage, StageUsage())
            usage.keys[key] = (prompt_tokens, completion_tokens)
            if cached:
                usage.cached_calls += 1
                usage.cached_prompt_tokens += prompt_tokens
                usage.cached_completion_tokens += completion_tokens
            else:
                usage.paid_calls += 1
                usage.paid_prompt_tokens += prompt_tokens
                usage.paid_completion_tokens += completion_tokens

    def paid(self) -> tuple[int, float]:
        """``(paid calls, paid cost in USD)`` of this process so far (cost 0 without a price)."""
        with self._lock:
            calls = sum(u.paid_calls for u in self._stages.values())
            p = sum(u.paid_prompt_tokens for u in self._stages.values())
            c = sum(u.paid_completion_tokens for u in self._stages.values())
        cost = (p * self.price[0] + c * self.price[1]) / 1e6 if self.price else 0.0
        return calls, cost

    def note_unusable(self, stage: str, n: int = 1) -> None:
        """*n* answers of *stage* stayed unusable after their re-asks (shown by :meth:`brief`)."""
        with self._lock:
            self._stages.setdefault(stage, StageUsage()).unusable += n

    def brief(self) -> str:
        """What a progress bar shows of the LLM work so far, over every stage: requests sent
        (answered by the endpoint), served from the cache, failed (a request out of retries, or
        an answer still unusable after its re-asks), retries when any, and the cost of the sent
        ones (USD), or their tokens when there is no price: ``40 sent, 88 cached, 0 failed,
        $0.0123``."""
        with self._lock:
            stages = list(self._stages.values())
            sent = sum(u.paid_calls for u in stages)
            cached = sum(u.cached_calls for u in stages)
            failed = sum(u.failed_calls + u.unusable for u in stages)
            retries = sum(u.retries for u in stages)
            p = sum(u.paid_prompt_tokens for u in stages)
            c = sum(u.paid_completion_tokens for u in stages)
        text = f"{sent} sent, {cached} cached, {failed} failed"
        if retries:
            text += f", {retries} retries"
        if self.price is not None:
            return text + f", ${(p * self.price[0] + c * self.price[1]) / 1e6:.4f}"
        return text + f", {p + c:,} tokens (no price)"

    def summary(self) -> dict[str, dict[str, Any]]:
        """``{stage: {requests, paid_calls, cached_calls, tokens..., cost_usd, paid_cost_usd}}``."""
        with self._lock:
            return {name: u.as_dict(self.price) for name, u in sorted(self._stages.items())}

    def totals(self) -> dict[str, Any]:
        """The summary summed over stages."""
        out: dict[str, Any] = {}
        for row in self.summary().values():
            for k, v in row.items():
                if v is None:
                    out.setdefault(k, None)
                elif out.get(k, 0) is not None:
                    out[k] = (
                        round(out.get(k, 0) + v, 6) if isinstance(v, float) else out.get(k, 0) + v
                    )
        return out


__all__ = ["LLMCache", "CachedResponse", "UsageLedger", "StageUsage", "request_key"]
