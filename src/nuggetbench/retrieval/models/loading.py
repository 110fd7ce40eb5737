"""Model plumbing shared by the neural retrievers: resolving a model name, devices, OOM backoff.

A model is named by a Hugging Face hub id (``sentence-transformers/all-MiniLM-L6-v2``) or a local
folder. :func:`resolve_model` checks it *before any work* and gives it a fingerprint for cache keys:

* a local folder: a hash of its files (small files by content, large weight files by size and
  their first and last MiB), so an edited or replaced model never reuses a stale cache;
* a hub id: the commit hash of the revision (from the Hub when online, from the local Hugging Face
  cache when offline). Offline and absent from the cache is a :class:`~nuggetbench.errors.ModelError`
  naming the cache folder.

Nothing here imports torch or sentence-transformers at module import time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nuggetbench import home
from nuggetbench.errors import ModelError
from nuggetbench.progress import Meter

log = logging.getLogger(__name__)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")
_SMALL_FILE = 4 * 1024 * 1024
_EDGE = 1024 * 1024


@dataclass(frozen=True)
class ModelRef:
    """A resolved model.

    Attributes:
        name: the name as the user gave it (hub id or path).
        location: what to hand to the loader: a local folder, or the hub id.
        revision: the commit hash of a hub model (``None`` for a local folder).
        fingerprint: 16 hex chars identifying the weights and configuration (cache keys).
        local: true for a local folder (including a hub model found in the local HF cache).
    """

    name: str
    location: str
    revision: str | None
    fingerprint: str
    local: bool


def looks_like_path(name: str) -> bool:
    """True when *name* can only be a file-system path (not a hub id)."""
    return (
        name.startswith(("/", "./", "../", "~", ".\\"))
        or "\\" in name
        or name.count("/") > 1
        or name.endswith("/")
        or bool(re.match(r"^[A-Za-z]:[\\/]", name))
    )


def folder_fingerprint(path: Path) -> str:
    """SHA-256 (16 hex chars) of a model folder: relative paths, sizes, small files' bytes,
    the first and last MiB of large files. README/markdown files and ``.git`` are ignored."""
    h = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path).as_posix()
        if rel.startswith(".git/") or rel.startswith(".cache/") or file.suffix.lower() == ".md":
            continue
        size = file.stat().st_size
        h.update(f"{rel}\x1f{size}\x1e".encode())
        with open(file, "rb") as fh:
            if size <= _SMALL_FILE:
                h.update(fh.read())
            else:
                h.update(fh.read(_EDGE))
                fh.seek(size - _EDGE)
                h.update(fh.read(_EDGE))
    return h.hexdigest()[:16]


def _hf_cache_dir() -> str:
    try:
        from huggingface_hub import constants

        return str(constants.HF_HUB_CACHE)
    except Exception:  # pragma: no cover - huggingface_hub is a dependency of sentence-transformers
        return os.path.expanduser("~/.cache/huggingface/hub")


def _cached_snapshot(repo_id: str, revision: str | None) -> str | None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover
        return None
    try:
        return snapshot_download(repo_id=repo_id, revision=revision, local_files_only=True)
    except Exception:
        return None


def resolve_model(name: str, *, revision: str | None = None, what: str = "model") -> ModelRef:
    """Check that a model exists and fingerprint it, without loading it.

    Args:
        name: a hub id (``org/name``) or a local folder (absolute, relative or ``~``).
        revision: a hub branch, tag or commit (ignored for local folders).
        what: how to call the model in messages (``"dense model"``...).

    Returns:
        A :class:`ModelRef`.

    Raises:
        ModelError: empty name; a path that does not exist or is not a model folder; a hub id
            that is malformed, unknown to the Hub, or (offline) not in the local HF cache.
    """
    name = (name or "").strip()
    if not name:
        raise ModelError(f"no {what} given; name a Hugging Face model id or a local folder")
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelError(
                f"{what} {name!r} is a file; give the model's folder (with config.json)"
            )
        if not any(
            (path / f).exists()
            for f in ("config.json", "modules.json", "config_sentence_transformers.json")
        ):
            raise ModelError(
                f"{what} folder {str(path)!r} has no config.json or modules.json; "
                "is it a Hugging Face / sentence-transformers model folder?"
            )
        return ModelRef(name, str(path.resolve()), None, folder_fingerprint(path), True)
    if looks_like_path(name) or not _HUB_ID.match(name):
        raise ModelError(
            f"{what} folder {str(path)!r} does not exist (and {name!r} is not a Hugging Face "
            "model id); give an existing local folder or an id such as "
            "'sentence-transformers/all-MiniLM-L6-v2'"
        )
    snapshot = _cached_snapshot(name, revision)
    if home.offline():
        if snapshot is None:
            raise ModelError(
                f"{what} {name!r} is not in the local Hugging Face cache ({_hf_cache_dir()}) and "
                "downloads are off (NUGGETBENCH_OFFLINE / HF_HUB_OFFLINE); download it where there is "
                f"network (`hf download {name}`) or give a local folder"
            )
        return ModelRef(name, snapshot, Path(snapshot).name, Path(snapshot).name[:16], True)
    try:
        from huggingface_hub import HfApi
        from huggingface_hub.utils import RepositoryNotFoundError, RevisionNotFoundError
    except ImportError as exc:  # pragma: no cover
        raise ModelError(
            "huggingface_hub is needed to resolve hub models: pip install 'nuggetbench[dense]'"
        ) from exc
    try:
        info = HfApi().model_info(name, revision=revision)
    except RepositoryNotFoundError:
        raise ModelError(
            f"no {what} {name!r} on the Hugging Face Hub (or it is private/gated: "
            "log in with `hf auth login`); check the id"
        ) from None
    except RevisionNotFoundError:
        raise ModelError(
            f"{what} {name!r} has no revision {revision!r} on the Hugging Face Hub"
        ) from None
    except Exception as exc:  # network trouble: fall back to the local cache
        if snapshot is not None:
            log.warning("could not reach the Hugging Face Hub (%s); using the cached %s", exc, name)
            return ModelRef(name, snapshot, Path(snapshot).name, Path(snapshot).name[:16], True)
        raise ModelError(
            f"could not reach the Hugging Face Hub to fetch {what} {name!r} ({exc}) and it is "
            f"not in the local cache ({_hf_cache_dir()}); retry with network or give a local folder"
        ) from None
    sha = info.sha or revision or "main"
    return ModelRef(name, name, sha, sha[:16], False)


def pick_device(device: str | None) -> str:
    """``None``/``"auto"`` -> ``"cuda"`` when available, else ``"mps"``, else ``"cpu"``."""
    if device and device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def use_fp16(fp16: bool | None, device: str) -> bool:
    """fp16 defaults to on for CUDA devices and off elsewhere."""
    return device.startswith("cuda") if fp16 is None else bool(fp16)


def load_model(
    cls_path: str,
    ref: ModelRef,
    *,
    device: str,
    fp16: bool,
    max_length: int | None = None,
    trust_remote_code: bool = False,
    what: str = "model",
    **kwargs: Any,
):
    """Load ``sentence_transformers.<cls_path>`` (e.g. ``SentenceTransformer``) from *ref*.

    Raises:
        ModelError: sentence-transformers is missing, or the model cannot be loaded (the cause is named).
    """
    try:
        import sentence_transformers
    except ImportError as exc:
        raise ModelError(
            f"{what}s need sentence-transformers: pip install 'nuggetbench[dense]'"
        ) from exc
    cls = getattr(sentence_transformers, cls_path, None)
    if cls is None:
        need = " (colbert needs >= 6.0.1)" if cls_path == "MultiVectorEncoder" else ""
        raise ModelError(
            f"this sentence-transformers ({sentence_transformers.__version__}) has no {cls_path}"
            f"{need}; upgrade it: pip install -U 'nuggetbench[colbert]'"
        )
    options: dict[str, Any] = {
        "device": device,
        "trust_remote_code": trust_remote_code,
        "local_files_only": ref.local or home.offline(),
        **kwargs,
    }
    if not ref.local and ref.revision:
        options["revision"] = ref.revision
    try:
        model = cls(ref.location, **options)
    except Exception as exc:
        raise ModelError(
            f"could not load {what} {ref.name!r} ({type(exc).__name__}: {exc})"
        ) from exc
    if max_length:
        model.max_seq_length = int(max_length)
    if fp16:
        model.half()
    model.eval()
    return model


def is_oom(exc: BaseException) -> bool:
    """True for an accelerator out-of-memory error (CUDA, MPS)."""
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


class BatchBackoff:
    """Calls ``fn(items, batch_size)``, halving the batch size after an out-of-memory error.

    The smaller size is kept for later calls. Attributes: ``batch_size`` (current), ``retries``.

    Raises:
        ModelError: out of memory even with a batch of one.
    """

    def __init__(self, batch_size: int, *, what: str = "encoding"):
        if batch_size < 1:
            raise ModelError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = int(batch_size)
        self.what = what
        self.retries = 0

    def __call__(self, fn: Callable[[Any, int], Any], items: Any) -> Any:
        while True:
            try:
                return fn(items, self.batch_size)
            except Exception as exc:
                if not is_oom(exc):
                    raise
                _free_accelerator_memory()
                if self.batch_size <= 1:
                    raise ModelError(
                        f"out of memory while {self.what} even with batch size 1; use a "
                        "smaller max_length, fp16=true or device=cpu"
                    ) from exc
                self.batch_size = max(1, self.batch_size // 2)
                self.retries += 1
                log.warning(
                    "out of memory while %s; retrying with batch size %d",
                    self.what,
                    self.batch_size,
                )


def _free_accelerator_memory() -> None:
    try:
        import gc

        import torch

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass


def progress_bar(show: bool, total: int, desc: str) -> Meter | None:
    """A :class:`~nuggetbench.progress.Meter` over *total* documents (a bar with documents/s and
    the ETA, or lines in a log, as configured), or ``None`` when *show* is false."""
    if not show:
        return None
    return Meter(desc, total, "doc")


class StageBar:
    """One progress meter for a stage made of a few library calls that cannot report progress
    themselves (bm25s' tokenize / index / retrieve, each with its own bar otherwise): it
    advances one step per call and names the current one (``bm25 index: tokenizing``).
    Use :func:`stage_bar`; every method is a no-op when the meter is hidden."""

    def __init__(self, show: bool, desc: str, steps: int):
        self.desc = desc
        self.steps = steps
        self.started = False
        self.bar = Meter(desc, steps, "step") if show else None

    def step(self, name: str) -> None:
        """Start step *name* (the previous one, if any, is counted done)."""
        if self.bar is not None:
            if self.started:
                self.bar.update(1)
            self.started = True
            self.bar.set_description(f"{self.desc}: {name}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.update(self.steps - self.bar.n)
            self.bar.set_description(self.desc)
            self.bar.close()

    def __enter__(self) -> StageBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stage_bar(show: bool, desc: str, steps: int) -> StageBar:
    """A :class:`StageBar` of *steps* steps titled *desc* (hidden unless *show*)."""
    return StageBar(show, desc, steps)


def text_lengths(corpus, n: int, *, with_title: bool):
    """Characters of each document's encoded text, in corpus order (one streaming pass), shape (n,)."""
    import numpy as np

    return np.fromiter(
        (len(d.full_text if with_title else d.text) for d in corpus.iter_documents()),
        dtype=np.int64,
        count=n,
    )


def split_depth(model: str) -> tuple[str, int | None]:
    """``"org/model@100"`` -> ``("org/model", 100)``; no ``@N`` suffix -> ``(model, None)``."""
    m = re.fullmatch(r"(.+?)@(\d+)", model.strip())
    if m is None:
        return model.strip(), None
    return m.group(1), int(m.group(2))
