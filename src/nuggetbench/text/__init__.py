"""Text processing shared by the corpus and retrieval layers: the one home of tokenization.

* :mod:`.tokenizers`: tokenizers that count tokens for chunk budgets (``whitespace``, ``regex``,
  ``hf:<folder>``, ``tiktoken:<encoding>``) and :class:`~.tokenizers.TokenCounter` over byte spans;
* :mod:`.analyzers`: BM25 analyzers (PyStemmer stemmers and stop words per language, CJK/Thai
  bigrams, Indic words kept whole).

Nothing heavy is imported here.
"""
