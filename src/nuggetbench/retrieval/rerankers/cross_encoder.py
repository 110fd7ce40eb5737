"""Cross-encoder reranking (``... >> rerank:MODEL@depth``) with sentence-transformers ``CrossEncoder``.

For each query, the top ``depth`` documents of the incoming run are paired with the query
(``(query, title + " " + text)``) and scored in batches (all pairs of a group of queries at once,
batch halved on out-of-memory). The reranked run holds those ``depth`` documents only, scored by the
model's raw logit (no sigmoid, so saturated probabilities cannot create ties); for a model with
several labels the last label's logit is used (the "relevant" class of two-class rerankers).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np

from nuggetbench.data import Corpus, Queries, Run
from nuggetbench.progress import Meter
from nuggetbench.retrieval.compose.pipeline import Composable
from nuggetbench.retrieval.models.loading import split_depth
from nuggetbench.retrieval.models.plumbing import ModelBacked
from nuggetbench.retrieval.options import CrossEncoderOptions
from nuggetbench.retrieval.protocols import check_k

__all__ = ["CrossEncoderReranker", "split_depth"]

log = logging.getLogger(__name__)


class CrossEncoderReranker(ModelBacked, Composable):
    """Rerank with a cross-encoder (spec ``rerank:MODEL[@depth][,option=value...]``).

    Args:
        model: hub id or local folder of a sentence-transformers CrossEncoder (checked at construction);
            ``MODEL@N`` sets the depth.
        options: a :class:`~nuggetbench.retrieval.options.CrossEncoderOptions` (``depth``,
            ``batch_size``, ``max_length``, ``group``...), or its fields as keyword arguments.
    """

    PREFIX = "rerank"
    LOADER = "CrossEncoder"
    WHAT = "cross-encoder"

    OPTIONS = CrossEncoderOptions

    def __init__(self, model: str, options: CrossEncoderOptions | None = None, /, **kwargs: Any):
        self._configure(model, options, kwargs, depth=True)
        self.name = self._spec_name(
            f"{self.model_name}@{self.depth}", replace(self.options, depth=100)
        )
        self._setup_model(action="scoring")
        self.predict_calls = 0

    @property
    def model(self):
        """The loaded ``CrossEncoder`` (loaded on first use)."""
        max_length = self.options["max_length"]
        return self._loaded_model(**({"max_length": max_length} if max_length else {}))

    def identity(self) -> dict:
        return {
            **self._model_identity(),
            "depth": self.depth,
            "max_length": self.options["max_length"],
            "with_title": self.options["with_title"],
        }

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Raw relevance logits of ``(query, document)`` pairs, shape (len(pairs),) float64."""
        if not pairs:
            return np.zeros(0)

        def predict(items: list[tuple[str, str]], batch_size: int) -> np.ndarray:
            import torch

            self.predict_calls += 1
            out = self.model.predict(
                items,
                batch_size=batch_size,
                activation_fn=torch.nn.Identity(),
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            out = np.asarray(out, dtype=np.float64)
            return out[:, -1] if out.ndim == 2 else out

        return self.backoff(predict, pairs)

    def rerank(
        self,
        queries: Queries,
        run: Run,
        corpus: Corpus,
        k: int,
        *,
        show_progress: bool = False,
        objective: str | None = None,
    ) -> Run:
        """Re-score the top *k* candidates of each query of *run*; the result holds those only.

        Args:
            queries: ``query_id -> text`` (queries absent from *run* get no entries).
            run: first-stage run.
            corpus: documents of the run.
            k: candidates per query to re-score.
            objective: ignored (a cross-encoder takes no instruction).

        Returns:
            A :class:`Run` named ``<first stage> >> <reranker>``.

        Raises:
            KeyError: a candidate document is not in *corpus*.
        """
        k = check_k(k)
        with_title = self.options["with_title"]
        qids = [q for q in queries if q in run]
        entries = [(q, d) for q in qids for d in run.doc_ids(q)[:k]]
        scores = np.empty(len(entries), dtype=np.float64)
        bar = Meter("reranking", len(entries), "pair") if show_progress else None
        step = self.options["group"]
        try:
            for start in range(0, len(entries), step):
                part = entries[start : start + step]
                docs = corpus.texts([d for _, d in part], with_title=with_title)
                scores[start : start + len(part)] = self.score_pairs(
                    [(queries[q], t) for (q, _), t in zip(part, docs)]
                )
                if bar is not None:
                    bar.update(len(part))
        finally:
            if bar is not None:
                bar.close()
        return self._reranked_run(
            queries, run, k, [q for q, _ in entries], [d for _, d in entries], scores
        )
