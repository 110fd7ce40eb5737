"""Tiny random-weight models for the neural retrieval tests, built once per process in a temp folder.

``tiny_models()`` returns a :class:`TinyModels` with folders for: a sentence-transformers bi-encoder
(mean pooling + normalisation), a SparseEncoder (MLM head + SPLADE max pooling), a CrossEncoder
(one-label sequence classifier), and ColBERT checkpoints in the PyLate (v3) and Stanford
(``HF_ColBERT`` + ``artifact.metadata``) formats. Everything is small (hidden size 32, 2 layers)
and built from a local WordPiece vocabulary, so nothing touches the network.
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import string
import tempfile
from dataclasses import dataclass
from pathlib import Path

WORDS = [
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "with",
    "cat",
    "dog",
    "fish",
    "bird",
    "tree",
    "car",
    "house",
    "sun",
    "moon",
    "star",
    "red",
    "blue",
    "green",
    "query",
    "passage",
    "document",
    "retrieval",
    "search",
    "model",
    "data",
    "river",
    "mountain",
    "city",
    "music",
    "apple",
    "bread",
    "coffee",
    "water",
    "light",
    "night",
    "train",
    "book",
    "paper",
]
PUNCT = list(".,!?;:'\"()-")
HIDDEN = 32
COLBERT_DIM = 16
QUERY_LEN = 12
DOC_LEN = 24


@dataclass(frozen=True)
class TinyModels:
    root: Path
    bert: Path
    bi_encoder: Path
    sparse: Path
    cross_encoder: Path
    colbert_pylate: Path
    colbert_stanford: Path


def _vocab() -> list[str]:
    letters = list(string.ascii_lowercase + string.digits)
    tokens = (
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]"]
        + PUNCT
        + letters
        + ["##" + c for c in letters]
        + WORDS
    )
    return list(dict.fromkeys(tokens))


def _tokenizer(extra_tokens: list[str] | None = None):
    from transformers import BertTokenizerFast

    vocab = _vocab()
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    if extra_tokens:
        tok.add_tokens(extra_tokens)
    return tok


def _config(vocab_size: int, **kw):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        **kw,
    )


def build(root: Path) -> TinyModels:
    import torch
    from safetensors.torch import save_file
    from sentence_transformers import SentenceTransformer, SparseEncoder
    from sentence_transformers.base.modules import Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling
    from transformers import BertForMaskedLM, BertForSequenceClassification, BertModel

    torch.manual_seed(1234)
    tok = _tokenizer()
    n_vocab = len(tok)

    bert = root / "bert"
    BertModel(_config(n_vocab)).save_pretrained(bert)
    tok.save_pretrained(bert)

    bi = root / "bi_encoder"
    tr = Transformer(str(bert), max_seq_length=64)
    SentenceTransformer(modules=[tr, Pooling(HIDDEN, "mean"), Normalize()], device="cpu").save(
        str(bi)
    )

    mlm = root / "mlm"
    BertForMaskedLM(_config(n_vocab)).save_pretrained(mlm)
    tok.save_pretrained(mlm)
    sparse = root / "sparse"
    SparseEncoder(
        modules=[MLMTransformer(str(mlm), max_seq_length=64), SpladePooling("max")], device="cpu"
    ).save(str(sparse))

    ce = root / "cross_encoder"
    BertForSequenceClassification(_config(n_vocab, num_labels=1)).save_pretrained(ce)
    tok.save_pretrained(ce)

    # ColBERT, PyLate v3 layout: Transformer at the root + 1_Dense projection, [Q]/[D] added tokens
    pyl = root / "colbert_pylate"
    ptok = _tokenizer(["[Q] ", "[D] "])
    model = BertModel(_config(len(ptok)))
    model.save_pretrained(pyl)
    ptok.save_pretrained(pyl)
    (pyl / "modules.json").write_text(
        json.dumps(
            [
                {
                    "idx": 0,
                    "name": "0",
                    "path": "",
                    "type": "sentence_transformers.models.Transformer",
                },
                {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"},
            ]
        )
    )
    (pyl / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": DOC_LEN - 1, "do_lower_case": False})
    )
    (pyl / "config_sentence_transformers.json").write_text(
        json.dumps(
            {
                "model_type": "ColBERT",
                "query_prefix": "[Q] ",
                "document_prefix": "[D] ",
                "query_length": QUERY_LEN,
                "document_length": DOC_LEN,
                "attend_to_expansion_tokens": False,
                "do_query_expansion": True,
                "skiplist_words": list(string.punctuation),
                "similarity_fn_name": "MaxSim",
                "prompts": {},
                "default_prompt_name": None,
            }
        )
    )
    (pyl / "1_Dense").mkdir()
    (pyl / "1_Dense" / "config.json").write_text(
        json.dumps(
            {
                "in_features": HIDDEN,
                "out_features": COLBERT_DIM,
                "bias": False,
                "activation_function": "torch.nn.modules.linear.Identity",
            }
        )
    )
    save_file(
        {"linear.weight": (torch.randn(COLBERT_DIM, HIDDEN) * 0.2).contiguous()},
        str(pyl / "1_Dense" / "model.safetensors"),
    )

    # ColBERT, Stanford layout: HF_ColBERT config, bert.* weights + linear.weight, artifact.metadata
    stf = root / "colbert_stanford"
    stf.mkdir()
    cfg = _config(n_vocab)
    base = BertModel(cfg)
    state = {"bert." + k: v.contiguous() for k, v in base.state_dict().items()}
    state["linear.weight"] = (torch.randn(COLBERT_DIM, HIDDEN) * 0.2).contiguous()
    save_file(state, str(stf / "model.safetensors"))
    conf = cfg.to_dict()
    conf["architectures"] = ["HF_ColBERT"]
    (stf / "config.json").write_text(json.dumps(conf))
    tok.save_pretrained(stf)
    (stf / "artifact.metadata").write_text(
        json.dumps(
            {
                "query_token_id": "[unused0]",
                "doc_token_id": "[unused1]",
                "query_maxlen": QUERY_LEN,
                "doc_maxlen": DOC_LEN,
                "attend_to_mask_tokens": False,
                "mask_punctuation": True,
                "similarity": "cosine",
                "dim": COLBERT_DIM,
            }
        )
    )
    return TinyModels(root, bert, bi, sparse, ce, pyl, stf)


@functools.lru_cache(maxsize=1)
def tiny_models() -> TinyModels:
    """Build the tiny models once per process (deleted at exit)."""
    import logging
    import warnings

    root = Path(tempfile.mkdtemp(prefix="nb_tiny_models_"))
    atexit.register(shutil.rmtree, root, True)
    logging.getLogger("transformers").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(root)


def texts(n: int, seed: int = 0, length: tuple[int, int] = (3, 12)) -> list[str]:
    """*n* random sentences over the tiny vocabulary (deterministic)."""
    import random

    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(*length))) for _ in range(n)]
