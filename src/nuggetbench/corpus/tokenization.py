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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError, SpecError

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
