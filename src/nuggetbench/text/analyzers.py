"""Language-aware analyzers for BM25: text -> list of tokens.

An analyzer is chosen by name: a language code (``de``, ``ja``...), an mMARCO language name
(``german``, ``japanese``...), or one of ``standard``, ``cjk`` and ``whitespace``. Every analyzer
except ``whitespace`` runs the same pipeline:

1. Unicode NFKC normalisation (folds full-width Latin and half-width katakana, as Lucene's
   ``CJKWidthFilter``) and lower-casing.
2. Segmentation into runs of one script class:

   * **Han, Hiragana, Katakana and Hangul** (Chinese, Japanese, Korean) become overlapping
     character **bigrams**, as Lucene's ``CJKAnalyzer`` (``CJKBigramFilter``) does: ``東京都`` ->
     ``東京 京都``; a CJK character standing alone stays a unigram. A sentence written without
     spaces therefore never collapses into one token, and a query sharing a two-character word
     with a document shares a token with it.
   * **Thai** (no spaces between words either) becomes bigrams of grapheme clusters (a base
     character with its combining vowel and tone marks). No Thai word segmenter is used: the
     maintained ones (PyThaiNLP) pull a large dependency; bigrams need none and are the
     dictionary-free choice Lucene's CJK approach makes for Chinese.
   * **Everything else** becomes words: maximal runs of letters, digits **and combining marks**.
     Python's ``\\w`` (and so bm25s' default ``\\b\\w\\w+\\b`` pattern) excludes combining marks
     (Unicode category M), which splits Devanagari, Bengali and Telugu words at every vowel sign
     (``हिन्दी`` -> ``ह न द``); the analyzers here keep such words whole.

3. Stop-word removal (bm25s' lists, where one exists for the language) then stemming with a
   PyStemmer (Snowball) algorithm, where one exists for the language. Bigrams are never stemmed.

Languages (MIRACL's 18 and mMARCO's 14; see :data:`LANGUAGES`): stemmer / stop words

* ar arabic / -, bn - / -, de german / de, en english / en, es spanish / es, fa persian / -,
  fi finnish / -, fr french / fr, hi hindi / -, id indonesian / -, it italian / it,
  nl dutch / nl, pt portuguese / pt, ru russian / ru, sw - / -, te - / -, vi - / -, yo - / -
* ja, ko, zh, th: bigrams, no stemmer, no stop words (``cjk``).

``whitespace`` lower-cases and splits on white space only: the naive baseline that turns a
Chinese or Japanese sentence into a single token.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence, Sized
from dataclasses import dataclass, field
from typing import Any

from nuggetbench.errors import SpecError, suggest
from nuggetbench.progress import Meter
from nuggetbench.text.bm25s_private import private_api

log = logging.getLogger(__name__)

__all__ = [
    "Analyzer",
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "analyzer_for_language",
    "get_analyzer",
    "list_analyzers",
    "normalize_language",
    "adapt_to_language",
]


@dataclass(frozen=True)
class LanguageSpec:
    """How one language is analysed: a PyStemmer algorithm and a bm25s stop-word list (or None)."""

    stemmer: str | None
    stopwords: str | None


#: ISO 639-1 code -> stemmer / stop words. MIRACL: ar bn de en es fa fi fr hi id ja ko ru sw te
#: th yo zh; mMARCO adds it nl pt vi. CJK and Thai get bigrams from the segmentation step.
LANGUAGES: dict[str, LanguageSpec] = {
    "ar": LanguageSpec("arabic", None),
    "bn": LanguageSpec(None, None),
    "de": LanguageSpec("german", "de"),
    "en": LanguageSpec("english", "en"),
    "es": LanguageSpec("spanish", "es"),
    "fa": LanguageSpec("persian", None),
    "fi": LanguageSpec("finnish", None),
    "fr": LanguageSpec("french", "fr"),
    "hi": LanguageSpec("hindi", None),
    "id": LanguageSpec("indonesian", None),
    "it": LanguageSpec("italian", "it"),
    "ja": LanguageSpec(None, None),
    "ko": LanguageSpec(None, None),
    "nl": LanguageSpec("dutch", "nl"),
    "pt": LanguageSpec("portuguese", "pt"),
    "ru": LanguageSpec("russian", "ru"),
    "sw": LanguageSpec(None, None),
    "te": LanguageSpec(None, None),
    "th": LanguageSpec(None, None),
    "vi": LanguageSpec(None, None),
    "yo": LanguageSpec(None, None),
    "zh": LanguageSpec(None, None),
}

#: Language names (mMARCO's configuration names and a few more) -> ISO code.
LANGUAGE_NAMES: dict[str, str] = {
    "arabic": "ar",
    "bengali": "bn",
    "chinese": "zh",
    "dutch": "nl",
    "english": "en",
    "finnish": "fi",
    "french": "fr",
    "german": "de",
    "hindi": "hi",
    "indonesian": "id",
    "italian": "it",
    "japanese": "ja",
    "korean": "ko",
    "persian": "fa",
    "farsi": "fa",
    "portuguese": "pt",
    "russian": "ru",
    "spanish": "es",
    "swahili": "sw",
    "telugu": "te",
    "thai": "th",
    "vietnamese": "vi",
    "yoruba": "yo",
}

_SPECIAL = ("standard", "cjk", "whitespace")
_BIGRAM_LANGUAGES = frozenset({"ja", "ko", "zh", "th"})

# Han (with 々 〆 〇 and compatibility ideographs), Hiragana, Katakana (with ー), Hangul.
_CJK_RANGES = (
    "\u1100-\u11ff\u3005-\u3007\u3021-\u3029\u3040-\u309f\u30a0-\u30ff\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0003134f"
)
_THAI_RANGES = "\u0e00-\u0e7f"


@functools.lru_cache(maxsize=1)
def _mark_class() -> str:
    """A regex class body of every combining mark (Unicode category M) up to plane 1 + VS."""
    ranges: list[tuple[int, int]] = []
    start = None
    limit = 0x20000
    for cp in [*range(limit), *range(0xE0100, 0xE01F0)]:
        is_mark = unicodedata.category(chr(cp))[0] == "M"
        if is_mark and start is None:
            start = prev = cp
        elif is_mark and cp == prev + 1:
            prev = cp
        elif start is not None:
            ranges.append((start, prev))
            start = cp if is_mark else None
            prev = cp
    if start is not None:
        ranges.append((start, prev))
    return "".join(
        re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in ranges
    )


@functools.lru_cache(maxsize=1)
def _token_pattern() -> re.Pattern[str]:
    marks = _mark_class()
    word = rf"(?:[^\W_{_CJK_RANGES}{_THAI_RANGES}]|[{marks}])+"
    return re.compile(rf"(?P<cjk>[{_CJK_RANGES}]+)|(?P<thai>[{_THAI_RANGES}]+)|(?P<word>{word})")


def _bigrams(units: Sequence[str]) -> list[str]:
    if len(units) == 1:
        return [units[0]]
    return [units[i] + units[i + 1] for i in range(len(units) - 1)]


def _thai_clusters(run: str) -> list[str]:
    """Base characters with their following combining marks (a Thai grapheme approximation)."""
    out: list[str] = []
    for ch in run:
        if out and unicodedata.category(ch) == "Mn":
            out[-1] += ch
        else:
            out.append(ch)
    return out


@dataclass
class Analyzer:
    """Turns texts into token lists for BM25 (see the module docstring for the pipeline).

    Attributes:
        name: the canonical analyzer name (``de``, ``cjk``, ``whitespace``...).
        stemmer: the PyStemmer algorithm, or ``None``.
        stopwords: a frozenset of lower-cased stop words (possibly empty).
        whitespace: only lower-case and split on white space (no normalisation, no bigrams).
    """

    name: str
    stemmer: str | None = None
    stopwords: frozenset[str] = frozenset()
    whitespace: bool = False
    _stemmer: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.stemmer is not None:
            import Stemmer

            self._stemmer = Stemmer.Stemmer(self.stemmer)

    @property
    def params(self) -> dict[str, Any]:
        """What changes the tokens (for cache keys): name, stemmer, stop-word count, version."""
        return {
            "analyzer": self.name,
            "stemmer": self.stemmer,
            "n_stopwords": len(self.stopwords),
            "unicode": unicodedata.unidata_version,
            "analyzer_version": 1,
        }

    def analyze(self, text: str) -> list[str]:
        """The tokens of one text, in order.

        Args:
            text: any string.

        Returns:
            Tokens (lower-cased words, stemmed when the language has a stemmer; CJK/Thai
            bigrams), stop words removed.
        """
        if self.whitespace:
            return text.lower().split()
        text = unicodedata.normalize("NFKC", text).lower()
        words: list[str] = []
        grams: list[str] = []
        for m in _token_pattern().finditer(text):
            kind = m.lastgroup
            run = m.group()
            if kind == "word":
                if run not in self.stopwords:
                    words.append(run)
            elif kind == "cjk":
                grams.extend(_bigrams(run))
            else:
                grams.extend(_bigrams(_thai_clusters(run)))
        if self._stemmer is not None and words:
            words = self._stemmer.stemWords(words)
        # token order does not matter to BM25 (a bag of words); words first, then bigrams
        return words + grams if grams else words

    def __call__(self, text: str) -> list[str]:
        return self.analyze(text)

    def tokenize(
        self, texts: Iterable[str], *, return_ids: bool = False, show_progress: bool = False
    ):
        """Tokenize many texts, in the shapes ``bm25s.tokenize`` returns.

        Args:
            texts: the texts (an iterable; consumed once).
            return_ids: return a ``bm25s.tokenization.Tokenized(ids, vocab)`` (token ids per
                text, and the ``token -> id`` vocabulary) instead of lists of strings.
            show_progress: a progress meter (:class:`~nuggetbench.progress.Meter`).

        Returns:
            ``list[list[str]]``, or ``Tokenized`` when *return_ids*.
        """
        total = len(texts) if isinstance(texts, Sized) else None
        with Meter(f"analyzing ({self.name})", total, "text", show=show_progress) as meter:
            return self._tokenize(meter.iterate(texts), return_ids)

    def _tokenize(self, iterator: Iterable[str], return_ids: bool):
        if not return_ids:
            return [self.analyze(t) for t in iterator]
        from bm25s.tokenization import Tokenized

        vocab: dict[str, int] = {}
        ids: list[list[int]] = []
        for text in iterator:
            row = []
            for tok in self.analyze(text):
                tid = vocab.get(tok)
                if tid is None:
                    tid = vocab[tok] = len(vocab)
                row.append(tid)
            ids.append(row)
        return Tokenized(ids=ids, vocab=vocab)


def normalize_language(language: str | None) -> str | None:
    """``"German"``/``"de"``/``"de-DE"`` -> ``"de"``; ``None``/``""`` -> ``None``.

    Raises:
        SpecError: an unknown language (the known ones are listed).
    """
    if not language:
        return None
    key = language.strip().lower().replace("_", "-")
    if key in LANGUAGES:
        return key
    if key in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[key]
    base = key.split("-")[0]
    if base in LANGUAGES:
        return base
    known = sorted(LANGUAGES) + sorted(LANGUAGE_NAMES)
    raise SpecError(
        f"unknown language {language!r}.{suggest(key, known)} Known: {', '.join(sorted(LANGUAGES))}"
    )


def analyzer_for_language(language: str | None) -> str | None:
    """The analyzer name a dataset in *language* should use, or ``None`` for bm25s' default.

    English (and no language) keeps bm25s' default English tokenizer, so BEIR results do not
    move; every other language gets its analyzer (``ja`` -> ``ja``: bigrams).
    """
    code = normalize_language(language)
    if code is None or code == "en":
        return None
    return code


def list_analyzers() -> list[str]:
    """Valid analyzer names: language codes, language names, ``standard``, ``cjk``, ``whitespace``."""
    return sorted(LANGUAGES) + sorted(LANGUAGE_NAMES) + list(_SPECIAL)


@functools.lru_cache(maxsize=64)
def get_analyzer(name: str) -> Analyzer:
    """The analyzer called *name* (see :func:`list_analyzers`).

    A language whose stemmer is missing from the installed PyStemmer falls back to no stemming,
    with a warning.

    Raises:
        SpecError: an unknown name (the nearest valid one is suggested).
    """
    key = name.strip().lower()
    if key == "whitespace":
        return Analyzer("whitespace", whitespace=True)
    if key in ("standard", "cjk"):
        return Analyzer(key)
    try:
        code = normalize_language(key)
    except SpecError:
        raise SpecError(
            f"unknown analyzer {name!r}.{suggest(key, list_analyzers())} "
            f"Valid: {', '.join(list_analyzers())}"
        ) from None
    assert code is not None
    spec = LANGUAGES[code]
    stemmer = spec.stemmer
    if stemmer is not None:
        import Stemmer

        if stemmer not in Stemmer.algorithms():
            log.warning(
                "PyStemmer has no %r stemmer; analyzer %s does not stem (the run is that of "
                "unstemmed text)",
                stemmer,
                code,
            )
            stemmer = None
    return Analyzer(code, stemmer=stemmer, stopwords=_stopwords(spec.stopwords))


def _stopwords(name: str | None) -> frozenset[str]:
    if name is None:
        return frozenset()
    return frozenset(w.lower() for w in private_api().infer_stopwords(name))


def adapt_to_language(retriever: Any, language: str | None) -> Any:
    """Let *retriever* follow a dataset's language when it can (``for_language``), else unchanged.

    An analyzer the user gave explicitly is kept (the retriever's ``for_language`` decides).
    """
    adapt = getattr(retriever, "for_language", None)
    if adapt is None or not language:
        return retriever
    return adapt(language)
