"""What the known datasets hold, declared: for ``nuggetbench datasets list`` (imports nothing).

One :class:`Facts` per registered id: its splits (the default first), what each id is, and the
counts of its default split and the size of what is downloaded on first use, numbers only, from
each dataset's official source (see :data:`SOURCES`): nothing here is read from the data, so
the listing is the same on a machine that has none of it. ``None``: not published (or not per
split) by the source.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Facts", "FACTS", "SOURCES", "facts"]


@dataclass(frozen=True)
class Facts:
    """Declared facts of one dataset id.

    Attributes:
        about: what the id is, in a few words (its domain and task).
        splits: the splits with judgments, the default first.
        documents: documents (passages) in the corpus.
        queries: queries of the default split.
        judgments: judgment lines (any grade, 0 included) of the default split.
        download: bytes downloaded on first use (the archive or files nuggetbench fetches).
    """

    about: str
    splits: tuple[str, ...]
    documents: int | None = None
    queries: int | None = None
    judgments: int | None = None
    download: int | None = None


#: Where the numbers of each family come from.
SOURCES = {
    "beir": "splits: BEIR's README table (github.com/beir-cellar/beir); counts of the default "
    "split and archive sizes: ir_datasets' catalogue of the same archives (metadata.json, "
    "downloads.json)",
    "cqadupstack": "the 12 forums share one archive (cqadupstack.zip)",
    "birco": "queries and pools: the BIRCO README and the MTEB task cards of its test sets",
    "fastbook": "the fastbook-benchmark repository (benchmark JSON and the 7 chapter notebooks)",
    "miracl": "dev split counts and the corpus and topic files' sizes: ir_datasets' catalogue "
    "of MIRACL v1.0 (the same files on the Hugging Face hub)",
    "mmarco": "dev/small counts (MS MARCO's) and collection sizes: ir_datasets' catalogue of "
    "mMARCO v2 (the same files on the Hugging Face hub)",
}

_B = ("test",)
_BEIR = {
    "msmarco": Facts("web passages, Bing questions", ("dev", "train", "test"), 8841823, 6980, 7437, 1082258632),
    "trec-covid": Facts("bio-medical: COVID-19 questions over CORD-19 papers", _B, 171332, 50, 66336, 73876720),
    "nfcorpus": Facts("bio-medical: nutrition questions over PubMed articles", ("test", "train", "dev"), 3633, 323, 12334, 2448432),
    "nq": Facts("question answering over Wikipedia (Natural Questions)", ("test", "train"), 2681468, 3452, 4201, 498307926),
    "hotpotqa": Facts("multi-hop question answering over Wikipedia", ("test", "train", "dev"), 5233329, 7405, 14810, 654025350),
    "fiqa": Facts("financial opinion question answering", ("test", "train", "dev"), 57638, 648, 1706, 17948027),
    "arguana": Facts("argument retrieval: find the counter-argument", _B, 8674, 1406, 1406, 3773617),
    "webis-touche2020": Facts("argument retrieval on controversial questions (Touché 2020)", _B, 382545, 49, 2214, 227132363),
    "cqadupstack": Facts("duplicate questions of 12 StackExchange forums", _B, 457199, 13145, 23703, 5343728040),
    "quora": Facts("duplicate question retrieval (Quora)", ("test", "dev"), 522931, 10000, 15675, 15853968),
    "dbpedia-entity": Facts("entity retrieval over DBpedia", ("test", "dev"), 4635922, 400, 43515, 639285131),
    "scidocs": Facts("scientific documents: citation prediction", _B, 25657, 1000, 29928, 142471588),
    "fever": Facts("fact checking: claims over Wikipedia", ("test", "train", "dev"), 5416568, 6666, 7937, 1236988269),
    "climate-fever": Facts("fact checking: climate claims over Wikipedia", _B, 5416593, 1535, 4681, 1228666652),
    "scifact": Facts("fact checking: scientific claims over paper abstracts", ("test", "train"), 5183, 300, 339, 2816079),
}  # fmt: skip
_CQA = {  # forum: (documents, queries, judgments) of its test split
    "android": (22998, 699, 1696), "english": (40221, 1570, 3765), "gaming": (45301, 1595, 2263),
    "gis": (37637, 885, 1114), "mathematica": (16705, 804, 1358), "physics": (38316, 1039, 1933),
    "programmers": (32176, 876, 1675), "stats": (42269, 652, 913), "tex": (68184, 2906, 5154),
    "unix": (47382, 1072, 1693), "webmasters": (17405, 506, 1395), "wordpress": (48605, 541, 744),
}  # fmt: skip
_BIRCO_SPLITS = ("test", "dev")  # dev: a local dev_set.pickle only
_BIRCO = {  # test queries, each with its own candidate pool
    "doris-mae": Facts("computer-science research questions; pools of about 110 abstracts", _BIRCO_SPLITS, queries=60),
    "arguana": Facts("counter-arguments to arguments; pools of about 50", _BIRCO_SPLITS, queries=100),
    "clinical-trial": Facts("patient case reports to clinical trials; pools of 30-110", _BIRCO_SPLITS, queries=50),
    "wtb": Facts("ambiguous book descriptions to books; pools of 50", _BIRCO_SPLITS, queries=100),
    "relic": Facts("literary analyses to their missing quotations; pools of 50", _BIRCO_SPLITS, queries=100),
}  # fmt: skip
_MIRACL = {  # language: (documents, dev queries, dev judgments, bytes of corpus and topics)
    "ar": (2061414, 2896, 29197, 320619962), "bn": (297265, 411, 4206, 60064166),
    "de": (15866222, 305, 3144, 2629442855), "en": (32893221, 799, 8350, 5060483121),
    "es": (10373953, 648, 6443, 1595834347), "fa": (2207172, 632, 6571, 269966364),
    "fi": (1883509, 1271, 12008, 270205165), "fr": (14636953, 343, 3429, 1911278264),
    "hi": (506264, 350, 3494, 97671668), "id": (1446315, 960, 9668, 169828137),
    "ja": (6953614, 860, 8354, 1065544083), "ko": (1486752, 213, 3057, 226649178),
    "ru": (9543918, 1252, 13100, 1575494186), "sw": (131924, 482, 5092, 10749006),
    "te": (518079, 828, 1606, 72352178), "th": (542166, 733, 7573, 110394614),
    "yo": (49043, 119, 1188, 228037), "zh": (4934368, 393, 3928, 733528420),
}  # fmt: skip
_MIRACL_SURPRISE = ("de", "yo")  # no train split
_MMARCO = {  # language: bytes of its translated collection (None: the original English)
    "arabic": 4664307196, "chinese": 2720255044, "dutch": 3362632528, "english": None,
    "french": 3656218984, "german": 3488187566, "hindi": 7649320531, "indonesian": 3297783371,
    "italian": 3444092853, "japanese": 3924982422, "portuguese": 3431011785,
    "russian": 5769514997, "spanish": 3571559558, "vietnamese": 4140054533,
}  # fmt: skip


def _all() -> dict[str, Facts]:
    out = {f"beir/{name}": f for name, f in _BEIR.items()}
    for forum, (docs, queries, qrels) in _CQA.items():
        about = f"duplicate questions of the {forum} StackExchange forum"
        out[f"beir/cqadupstack/{forum}"] = Facts(about, _B, docs, queries, qrels, 5343728040)
    out.update({f"birco/{name}": f for name, f in _BIRCO.items()})
    for lang, (docs, queries, qrels, size) in _MIRACL.items():
        splits = ("dev",) if lang in _MIRACL_SURPRISE else ("dev", "train")
        about = f"Wikipedia passages, native {lang} questions"
        out[f"miracl/{lang}"] = Facts(about, splits, docs, queries, qrels, size)
    for lang, size in _MMARCO.items():
        about = f"MS MARCO passages and questions in {lang}"
        out[f"mmarco/{lang}"] = Facts(about, ("dev", "dev-full"), 8841823, 6980, 7437, size)
    for topic in ("angular", "godot", "langchain", "laravel", "yolo"):  # no per-topic counts
        about = f"Stack Overflow questions on {topic}; nuggets judged over GitHub code chunks"
        out[f"freshstack/{topic}"] = Facts(about, ("test",))
    about = "fastai-book questions; 357 answer components judged by evidence spans in 7 notebooks"
    out["fastbook"] = Facts(about, (), None, 191, None, 5168121)  # documents: the chunker's
    return out


#: ``{dataset id: Facts}`` of every id whose facts are declared.
FACTS: dict[str, Facts] = _all()


def facts(dataset_id: str) -> Facts | None:
    """The declared :class:`Facts` of *dataset_id*, ``None`` when none are declared (a plug-in's
    id, ``irds:`` ids). FreshStack's topics declare no counts: its cards give none per topic."""
    return FACTS.get(dataset_id)
