"""Chunker specifications: ``kind[:key=value,key=value...]``, read with the spec kernel.

Examples: ``paragraphs``, ``paragraphs:group=3,headers=true``,
``tokens:size=256,overlap=32,tokenizer=whitespace``, ``cells``. Values may contain ``:`` and
``/`` (``tokenizer=hf:/models/tok``) but not ``,``. Each chunker declares its options once
(:class:`~nuggetbench.spec.Param`: type, default, bounds, description) in ``options``. Parsing
never loads anything heavy; a tokenizer is loaded when the chunker first runs.
"""

from __future__ import annotations

from nuggetbench.corpus.chunkers import CHUNKERS, Chunker
from nuggetbench.errors import SpecError, suggest
from nuggetbench.spec import parse_literal, split_colon_spec

__all__ = ["parse_chunker"]

_EXAMPLE = "'paragraphs:group=3,headers=true', 'tokens:size=256,overlap=32' or 'cells'"


def parse_chunker(spec: str | Chunker) -> Chunker:
    """Build a chunker from its spec string.

    Args:
        spec: ``paragraphs[:group=N,headers=BOOL,code=BOOL,outputs=BOOL]``,
            ``tokens:size=N[,overlap=M,tokenizer=NAME]`` or ``cells[:headers=BOOL,outputs=BOOL]``
            (a :class:`~nuggetbench.corpus.chunkers.Chunker` is returned as is).

    Returns:
        a :class:`~nuggetbench.corpus.chunkers.Chunker`.

    Raises:
        UnknownNameError: an unknown chunker kind (the nearest is suggested).
        SpecError: the spec cannot be parsed; the message says which part.
    """
    if isinstance(spec, Chunker):
        return spec
    kind, raw = split_colon_spec(spec, what="chunker", example=_EXAMPLE)
    cls = CHUNKERS.lookup(kind)
    where = f"chunker spec {spec!r}"
    values = {}
    for key, text in raw.items():
        opt = cls.options.get(key)
        if opt is None:
            raise SpecError(
                f"{where}: unknown option {key!r} for {kind!r} "
                f"(options: {', '.join(cls.options) or 'none'}).{suggest(key, list(cls.options))}"
            )
        values[key] = opt.coerce(parse_literal(text), where=where, noun="option", text=text)
    for key, opt in cls.options.items():
        if opt.required and key not in values:
            raise SpecError(f"{where}: option {key!r} is required for {kind!r} ({opt.description})")
    return cls(**values)
