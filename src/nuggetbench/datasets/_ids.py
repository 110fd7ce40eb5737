"""The name tables of the dataset families, in one place.

The registry (which must list ids without importing any loader) and the loaders both read these
tables; this module imports nothing.
"""

from __future__ import annotations

#: The 15 public BEIR datasets (Thakur et al., 2021), in the order of BEIR's README table.
BEIR_NAMES = (
    "msmarco",
    "trec-covid",
    "nfcorpus",
    "nq",
    "hotpotqa",
    "fiqa",
    "arguana",
    "webis-touche2020",
    "cqadupstack",
    "quora",
    "dbpedia-entity",
    "scidocs",
    "fever",
    "climate-fever",
    "scifact",
)
#: The 12 CQADupStack sub-forums (``beir/cqadupstack/<forum>``).
CQADUPSTACK_FORUMS = (
    "android",
    "english",
    "gaming",
    "gis",
    "mathematica",
    "physics",
    "programmers",
    "stats",
    "tex",
    "unix",
    "webmasters",
    "wordpress",
)
#: FreshStack Oct 2024 topics.
FRESHSTACK_TOPICS = ("langchain", "yolo", "laravel", "angular", "godot")
#: BIRCO tasks.
BIRCO_NAMES = ("doris-mae", "arguana", "clinical-trial", "wtb", "relic")
#: MIRACL's 18 languages (ISO 639-1 codes).
MIRACL_LANGUAGES = (
    "ar",
    "bn",
    "de",
    "en",
    "es",
    "fa",
    "fi",
    "fr",
    "hi",
    "id",
    "ja",
    "ko",
    "ru",
    "sw",
    "te",
    "th",
    "yo",
    "zh",
)
#: mMARCO's 14 languages (the hub's names).
MMARCO_LANGUAGES = (
    "arabic",
    "chinese",
    "dutch",
    "english",
    "french",
    "german",
    "hindi",
    "indonesian",
    "italian",
    "japanese",
    "portuguese",
    "russian",
    "spanish",
    "vietnamese",
)


def family_ids(family: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """``("<family>/<name>", ...)`` for each of *names*, in order."""
    return tuple(f"{family}/{n}" for n in names)
