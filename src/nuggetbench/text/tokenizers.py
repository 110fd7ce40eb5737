"""Tokenizers that report character offsets, for token-window chunking.

A tokenizer is named by a short string:

* ``whitespace``: maximal runs of non-space characters (``\\S+``);
* ``tiktoken:<encoding>`` (e.g. ``tiktoken:cl100k_base``): an OpenAI encoding (needs the
  ``tiktoken`` package and its encoding file);
* ``hf:<folder or tokenizer.json>`` or a bare local path: a Hugging Face *fast* tokenizer read
  with the ``tokenizers`` library (a folder holding ``tokenizer.json``), or, for a folder without
  one, through ``transformers.AutoTokenizer`` (local files only).

Every tokenizer returns ``(start, end)`` character offsets of its tokens, so a window of tokens
becomes the exact slice of the source text it covers.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nuggetbench.errors import ModelError, SpecError

_WORD = re.compile(r"\S+")


@dataclass
class Tokenizer:
    """A tokenizer that maps a text to token character offsets.

    Attributes:
        name: the spec it was loaded from (``whitespace``, ``tiktoken:cl100k_base``, ``hf:/path``).
        fingerprint: identifies the vocabulary (hash of the tokenizer files), for cache keys.
    """

    name: str
    fingerprint: str
    _impl: Any = field(default=None, repr=False)
    _kind: str = field(default="whitespace", repr=False)

    def offsets(self, text: str) -> np.ndarray:
        """Token character offsets of *text*: int64 array of shape ``(n_tokens, 2)``, rows
        ``(start, end)`` with ``end`` exclusive, in text order; special tokens are not added."""
        if self._kind == "whitespace":
            spans = [m.span() for m in _WORD.finditer(text)]
        elif self._kind == "hf":
            spans = [tuple(o) for o in self._impl.encode(text, add_special_tokens=False).offsets]
        elif self._kind == "hf-transformers":
            enc = self._impl(
                text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
            )
            spans = [tuple(o) for o in enc["offset_mapping"]]
        else:  # tiktoken
            tokens = self._impl.encode(text, disallowed_special=())
            _, starts = self._impl.decode_with_offsets(tokens)
            ends = list(starts[1:]) + [len(text)]
            spans = list(zip(starts, ends))
        arr = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        if len(arr):  # a few tokenizers give (0, 0) to tokens they cannot place; keep order sane
            arr[:, 1] = np.maximum(arr[:, 1], arr[:, 0])
        return arr


def _hash_files(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.name.encode() + b"\x1f" + p.read_bytes() + b"\x1e")
    return h.hexdigest()[:16]


def check_tokenizer_name(spec: str) -> None:
    """Check a tokenizer name without loading anything (a local path must exist).

    Raises:
        SpecError: not ``whitespace``, ``tiktoken:<encoding>``, ``hf:<path>`` or an existing path.
    """
    spec = spec.strip()
    if spec in ("whitespace", "ws", "words") or (spec.startswith("tiktoken:") and spec[9:].strip()):
        return
    location = spec.split(":", 1)[1] if spec.startswith("hf:") else spec
    if not location or not Path(location).expanduser().exists():
        raise SpecError(
            f"tokenizer {spec!r}: expected 'whitespace', 'tiktoken:<encoding>', or "
            f"'hf:<local folder or tokenizer.json>'; {location!r} does not exist"
        )


def load_tokenizer(spec: str) -> Tokenizer:
    """Load a tokenizer from its name (see the module docstring).

    Raises:
        SpecError: the name is not ``whitespace``, ``tiktoken:...``, ``hf:...`` or an existing path.
        ModelError: the tokenizer files cannot be read, or ``tiktoken`` / ``transformers`` is missing.
    """
    spec = spec.strip()
    if spec in ("whitespace", "ws", "words"):
        return Tokenizer("whitespace", "whitespace")
    if spec.startswith("tiktoken:"):
        encoding = spec.split(":", 1)[1]
        try:
            import tiktoken
        except ImportError as exc:
            raise ModelError(
                f"tokenizer {spec!r} needs the 'tiktoken' package: pip install tiktoken"
            ) from exc
        try:
            enc = tiktoken.get_encoding(encoding)
        except Exception as exc:
            raise ModelError(
                f"tokenizer {spec!r}: tiktoken cannot load encoding {encoding!r} ({exc}); "
                "offline, its encoding file must already be in tiktoken's cache"
            ) from exc
        return Tokenizer(spec, f"tiktoken:{encoding}", enc, "tiktoken")
    location = spec.split(":", 1)[1] if spec.startswith("hf:") else spec
    path = Path(location).expanduser()
    if not path.exists():
        raise SpecError(
            f"tokenizer {spec!r}: expected 'whitespace', 'tiktoken:<encoding>', or "
            f"'hf:<local folder or tokenizer.json>'; {str(path)!r} does not exist"
        )
    tok_json = path if path.is_file() else path / "tokenizer.json"
    if tok_json.is_file():
        from tokenizers import Tokenizer as HFTokenizer

        try:
            impl = HFTokenizer.from_file(str(tok_json))
        except Exception as exc:
            raise ModelError(f"tokenizer {spec!r}: cannot read {tok_json} ({exc})") from exc
        impl.no_truncation()
        impl.no_padding()
        return Tokenizer(spec, "hf:" + _hash_files([tok_json]), impl, "hf")
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise ModelError(
            f"tokenizer {spec!r}: {path} has no tokenizer.json and 'transformers' is "
            "not installed to convert it"
        ) from exc
    try:
        impl = AutoTokenizer.from_pretrained(str(path), use_fast=True, local_files_only=True)
    except Exception as exc:
        raise ModelError(
            f"tokenizer {spec!r}: cannot load a tokenizer from {path} ({exc})"
        ) from exc
    if not getattr(impl, "is_fast", False):
        raise ModelError(
            f"tokenizer {spec!r}: {path} gives a slow tokenizer without character "
            "offsets; save a fast one (tokenizer.json)"
        )
    impl.model_max_length = 1 << 62
    files = [p for p in path.iterdir() if p.is_file()]
    return Tokenizer(spec, "hf:" + _hash_files(files), impl, "hf-transformers")


__all__ = ["Tokenizer", "load_tokenizer"]


# --- counting tokens of byte spans (the repository chunkers' budget) ---------------------------
_REGEX_TOKEN = re.compile(r"\w+|[^\w\s]")


class TokenCounter:
    """Counts tokens of byte spans of one text through precomputed token offsets.

    Args:
        text: the decoded text.
        data: its UTF-8 bytes.
        offsets: ``(n, 2)`` character offsets of the tokens.
    """

    def __init__(self, text: str, data: bytes, offsets: np.ndarray):
        if len(data) != len(text):  # non-ASCII: map character offsets to byte offsets
            widths = np.fromiter(
                (len(ch.encode("utf-8")) for ch in text), dtype=np.int64, count=len(text)
            )
            to_byte = np.concatenate([[0], np.cumsum(widths)])
            offsets = to_byte[offsets] if len(offsets) else offsets
        self.starts = offsets[:, 0].copy() if len(offsets) else np.zeros(0, np.int64)
        self.ends = offsets[:, 1].copy() if len(offsets) else np.zeros(0, np.int64)

    def count(self, start: int, end: int) -> int:
        """Tokens lying inside ``[start, end)`` (bytes)."""
        lo = int(np.searchsorted(self.starts, start, side="left"))
        hi = int(np.searchsorted(self.ends, end, side="right"))
        return max(0, hi - lo)

    def cut(self, start: int, end: int, budget: int) -> list[tuple[int, int]]:
        """Split ``[start, end)`` into spans of at most *budget* tokens at token boundaries."""
        lo = int(np.searchsorted(self.starts, start, side="left"))
        hi = int(np.searchsorted(self.ends, end, side="right"))
        if hi <= lo:
            return [(start, end)]
        spans, s = [], start
        for first in range(lo, hi, budget):
            last = min(first + budget, hi) - 1
            e = int(self.ends[last]) if last < hi - 1 else end
            spans.append((s, e))
            s = e
        return spans


def make_counter(tokenizer: str) -> Callable[[str, bytes], TokenCounter]:
    """A factory ``(text, data) -> TokenCounter`` for a tokenizer name (see the module docstring).

    Raises:
        SpecError / ModelError: an unknown or unloadable tokenizer.
    """
    if tokenizer == "regex":

        def regex_counter(text: str, data: bytes) -> TokenCounter:
            spans = np.asarray(
                [m.span() for m in _REGEX_TOKEN.finditer(text)], dtype=np.int64
            ).reshape(-1, 2)
            return TokenCounter(text, data, spans)

        return regex_counter
    tok = load_tokenizer(tokenizer)

    def counter(text: str, data: bytes) -> TokenCounter:
        return TokenCounter(text, data, tok.offsets(text))

    return counter


def count_tokens(text: str, tokenizer: str = "regex") -> int:
    """Number of tokens of *text* under *tokenizer*."""
    data = text.encode("utf-8")
    return make_counter(tokenizer)(text, data).count(0, len(data))
