"""The build plan: a TOML file naming the sources, repositories, retrievers, model and budgets.

Example (every section but ``[questions]``, ``[[repos]]`` and ``[llm] model`` is optional)::

    name = "langchain-2024"
    output = "benchmarks/langchain"          # relative paths are relative to the plan file

    [questions]
    source = "stackoverflow/Posts.xml"      # or a JSONL of {id, title, body, answer, tags, date}
    tags = ["langchain"]                    # any of (tags_mode = "all": every one)
    since = "2023-01-01"                    # until = "2024-07-01"; min_score = 0; limit = 200
    on_error = "skip"                       # malformed rows: "skip" (reported) or "raise"

    [[repos]]
    name = "langchain"
    url = "https://github.com/langchain-ai/langchain"   # cloned shallowly; or path = "../langchain"
    ref = "master"

    [corpus]
    max_tokens = 2048                       # tokenizer = "regex"; max_file_bytes; exclude = ["docs/*"]

    [llm]
    model = "gpt-4o"                        # base_url, provider ("openai" | "azure"), api_version,
    concurrency = 8                         # api_key_env (the NAME of the variable), timeout, max_retries
    # no_api_key = true                     # a local server that needs no key: say so (else the
                                            # key must be set before any stage runs)

    [nuggets]                               # max_nuggets, temperature = 0.1, prompt = "v1"
    [pooling]
    retrievers = ["bm25", "dense:BAAI/bge-base-en-v1.5"]
    techniques = ["subq", "hyde", "answer", "nuggets"]     # depth = 100, pool_depth = 20
    [judge]                                 # batch_size = 20, max_rounds = 3
    [filter]
    drop_any_unsupported = true
    [budget]
    max_calls = 20000
    max_cost_usd = 100.0
    [prices]                                # USD per million tokens
    "gpt-4o" = { input = 2.5, output = 10.0 }
    [calibration]
    labels = "labels.jsonl"                 # human labels for the calibrate stage
    formula = "freshstack"                  # nugget quality: the paper's eq. 2-4, or "strict"

An API key in a plan is refused: keys live in the environment only. Values are checked, not just
key names (:func:`check_values`): an ``api_key_env`` shaped like a key, a URL with
``user:password@`` or a credential in its query (``?api-key=``), or any value shaped like a
provider's key is an error that never quotes the value.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from nuggetbench.builder.calibration import FORMULAS
from nuggetbench.builder.collect import CorpusOptions
from nuggetbench.builder.export import FilterOptions
from nuggetbench.builder.pooling import PoolOptions
from nuggetbench.builder.questions import QuestionFilter
from nuggetbench.builder.repos import RepoSource
from nuggetbench.errors import FormatError, InputError, suggest
from nuggetbench.judging.answer_nuggets import NuggetOptions
from nuggetbench.judging.support import JudgeOptions
from nuggetbench.llm.client import LLMSettings
from nuggetbench.llm.secrets import key_name_problem, redact_url, url_problems
from nuggetbench.retrieval.rerankers.querygen import RewriteOptions

SECTIONS = {
    "name",
    "output",
    "questions",
    "repos",
    "corpus",
    "llm",
    "nuggets",
    "rewrite",
    "pooling",
    "judge",
    "filter",
    "budget",
    "prices",
    "calibration",
}
_SECRET_KEYS = {"api_key", "key", "token", "secret", "password", "azure_ad_token"}
_KEY_SHAPE = re.compile(
    r"^(?:(?:sk|rk|pk)-(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_\w{20,}|AIza[0-9A-Za-z_-]{30,}|xox[abpr]-[A-Za-z0-9-]{10,}|Bearer\s+\S{8,})$"
)


def _toml_loads(text: str, where: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise FormatError(where, line, f"not valid TOML ({exc})") from None


@dataclass(frozen=True)
class QuestionsSpec:
    """Where the questions come from and which to keep."""

    source: Path
    format: str = "auto"
    filter: QuestionFilter = QuestionFilter()
    on_error: str = "skip"
    top_k: int = 25


@dataclass(frozen=True)
class Plan:
    """A parsed plan (see the module docstring). ``raw`` is the TOML as read (it holds no secret)."""

    name: str
    output: Path
    questions: QuestionsSpec
    repos: tuple[RepoSource, ...]
    corpus: CorpusOptions
    llm: LLMSettings
    nuggets: NuggetOptions
    rewrite: RewriteOptions
    pooling: PoolOptions
    judge: JudgeOptions
    filter: FilterOptions
    calibration_labels: Path | None = None
    path: Path | None = None
    raw: dict = field(default_factory=dict)
    calibration_formula: str = "freshstack"

    @property
    def workdir(self) -> Path:
        """Stage outputs and the LLM cache: ``<output>/_build``."""
        return self.output / "_build"


def _check_keys(section: str, table: dict[str, Any], allowed: set[str], where: str) -> None:
    for key in table:
        if key.lower() in _SECRET_KEYS:
            raise InputError(
                f"{where}: [{section}] {key} looks like a credential; never put keys in a plan: set "
                "the environment variable named by [llm] api_key_env (default OPENAI_API_KEY)"
            )
        if key not in allowed:
            raise InputError(
                f"{where}: unknown key {key!r} in [{section}].{suggest(key, sorted(allowed))} "
                f"Valid: {', '.join(sorted(allowed))}"
            )


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


def check_values(raw: dict[str, Any], where: str) -> None:
    """Refuse credentials among the plan's values (see the module docstring).

    Raises:
        InputError: every offending value, named by its place in the plan (``llm.base_url``),
            never quoted.
    """
    problems = []
    llm = raw.get("llm") if isinstance(raw.get("llm"), dict) else {}
    if "api_key_env" in llm:
        problem = key_name_problem(llm["api_key_env"])
        if problem:
            problems.append(problem)
    for path, value in _strings(raw, ""):
        if path == "llm.api_key_env":
            continue
        if "://" in value:
            problems += [
                f"{path}: {p} (shown masked: {redact_url(value)})" for p in url_problems(value)
            ]
        elif _KEY_SHAPE.match(value.strip()):
            problems.append(f"{path} holds what looks like an API key (the value is not shown)")
    if problems:
        raise InputError(
            f"{where}: credentials do not belong in a plan (it is copied into the published "
            "manifest.json): " + "; ".join(problems) + ". Keep keys in the environment variable "
            "named by [llm] api_key_env; if a key was shared, revoke it"
        )


def _table(raw: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        raise InputError(f"{where}: [{name}] must be a table")
    return value


def _options(
    cls: type,
    section: str,
    table: dict[str, Any],
    where: str,
    rename: dict[str, str] | None = None,
    exclude: set[str] = frozenset(),
) -> Any:
    rename = rename or {}
    names = {f.name for f in fields(cls)} - set(exclude)
    allowed = {rename.get(n, n) for n in names}
    _check_keys(section, table, allowed, where)
    inverse = {v: k for k, v in rename.items()}
    values = {inverse.get(k, k): v for k, v in table.items()}
    for k, v in list(values.items()):
        if isinstance(v, list):
            values[k] = tuple(v)
    try:
        return cls(**values)
    except TypeError as exc:
        raise InputError(f"{where}: [{section}] {exc}") from None


def _resolve(base: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else (base / p)


def parse_plan(
    raw: dict[str, Any],
    *,
    base: Path,
    where: str = "<plan>",
    llm: dict[str, Any] | None = None,
) -> Plan:
    """Build a :class:`Plan` from parsed TOML; relative paths are resolved against *base*.

    *llm* overrides ``[llm]`` keys (``model``, ``base_url``, ``no_api_key``: the command line's
    ``--model``/``--base-url``/``--no-api-key``); a ``None`` or ``False`` value leaves the plan's.
    Precedence: *llm*, then the plan's ``[llm]``, then ``NUGGETBENCH_LLM_MODEL`` /
    ``NUGGETBENCH_LLM_BASE_URL`` (else ``OPENAI_BASE_URL``). ``[prices]`` is looked up for the
    model that wins. ``raw`` stays the file's TOML.

    Raises:
        InputError: unknown sections or keys (the nearest is suggested), a credential in the plan,
            missing ``[questions] source`` / ``[[repos]]`` / ``[llm] model``, or bad values.
    """
    _check_keys("plan", raw, SECTIONS, where)
    check_values(raw, where)
    questions = _questions_section(raw, base, where)
    repos = _repos_section(raw, base, where)
    corpus = _corpus_section(raw, where)
    llm = _llm_section(raw, where, llm or {})
    nug = _options(
        NuggetOptions, "nuggets", _table(raw, "nuggets", where), where, {"prompt_version": "prompt"}
    )
    rewrite = _options(RewriteOptions, "rewrite", _table(raw, "rewrite", where), where)
    pooling = _options(PoolOptions, "pooling", _table(raw, "pooling", where), where)
    judge = _options(
        JudgeOptions, "judge", _table(raw, "judge", where), where, {"prompt_version": "prompt"}
    )
    filt_out = _options(FilterOptions, "filter", _table(raw, "filter", where), where)
    labels, formula = _calibration_section(raw, base, where)
    output = _resolve(base, raw.get("output", "benchmark"))
    name = str(raw.get("name") or output.name)
    return Plan(
        name,
        output,
        questions,
        repos,
        corpus,
        llm,
        nug,
        rewrite,
        pooling,
        judge,
        filt_out,
        labels,
        None,
        raw,
        formula,
    )


_QUESTION_KEYS = {
    "source",
    "format",
    "tags",
    "tags_mode",
    "since",
    "until",
    "min_score",
    "limit",
    "on_error",
    "top_k",
}
_CORPUS_KEYS = {
    "max_tokens",
    "tokenizer",
    "max_file_bytes",
    "skip_extensions",
    "extra_skip_extensions",
    "keep_extensions",
    "exclude",
    "include_hidden",
}


def _questions_section(raw: dict[str, Any], base: Path, where: str) -> QuestionsSpec:
    """``[questions]``: the source file and the filter of the questions kept."""
    q = _table(raw, "questions", where)
    _check_keys("questions", q, _QUESTION_KEYS, where)
    if "source" not in q:
        raise InputError(f"{where}: [questions] source is required (a Posts.xml or a JSONL file)")
    filt = QuestionFilter(
        tuple(q.get("tags", ())),
        q.get("tags_mode", "any"),
        q.get("since"),
        q.get("until"),
        q.get("min_score"),
        q.get("limit"),
    )
    return QuestionsSpec(
        _resolve(base, q["source"]),
        q.get("format", "auto"),
        filt,
        q.get("on_error", "skip"),
        int(q.get("top_k", 25)),
    )


def _repos_section(raw: dict[str, Any], base: Path, where: str) -> tuple[RepoSource, ...]:
    """``[[repos]]``: at least one, names distinct."""
    repo_rows = raw.get("repos", [])
    if not isinstance(repo_rows, list) or not repo_rows:
        raise InputError(
            f"{where}: name at least one repository as [[repos]] with name and path (or url)"
        )
    repos = []
    for row in repo_rows:
        _check_keys("repos", row, {"name", "path", "url", "ref"}, where)
        path = str(_resolve(base, row["path"])) if row.get("path") else None
        repos.append(RepoSource(row.get("name", ""), path, row.get("url"), row.get("ref")))
    names = [r.name for r in repos]
    if len(set(names)) != len(names):
        raise InputError(f"{where}: repository names must be distinct, got {names}")
    return tuple(repos)


def _corpus_section(raw: dict[str, Any], where: str) -> CorpusOptions:
    """``[corpus]``: chunking options; the skipped extensions adjusted by ``extra_`` / ``keep_``."""
    c = dict(_table(raw, "corpus", where))
    _check_keys("corpus", c, _CORPUS_KEYS, where)
    skip = set(c.pop("skip_extensions", CorpusOptions.skip_extensions))
    skip |= {e.lower() for e in c.pop("extra_skip_extensions", ())}
    skip -= {e.lower() for e in c.pop("keep_extensions", ())}
    return _options(CorpusOptions, "corpus", {**c, "skip_extensions": frozenset(skip)}, where)


def _llm_section(raw: dict[str, Any], where: str, overrides: dict[str, Any]) -> LLMSettings:
    """``[llm]`` (under the command line's *overrides*) with ``[budget]`` and the model's
    ``[prices]``, over the environment's settings."""
    llm_t = dict(_table(raw, "llm", where))
    llm_t.update({k: v for k, v in overrides.items() if v is not None and v is not False})
    budget = _table(raw, "budget", where)
    _check_keys("budget", budget, {"max_calls", "max_cost_usd"}, where)
    prices = _table(raw, "prices", where)
    llm_allowed = {f.name for f in fields(LLMSettings)} - {"max_calls", "max_cost_usd", "price"}
    _check_keys("llm", llm_t, llm_allowed, where)
    model = llm_t.get("model")
    price = prices.get(model) if model else None
    if isinstance(price, dict):
        price = (float(price.get("input", 0)), float(price.get("output", 0)))
    elif isinstance(price, list | tuple):
        price = (float(price[0]), float(price[1]))
    try:
        return LLMSettings.from_env(
            **llm_t,
            max_calls=budget.get("max_calls"),
            max_cost_usd=budget.get("max_cost_usd"),
            price=price,
        )
    except TypeError as exc:
        raise InputError(f"{where}: [llm] {exc}") from None


def _calibration_section(raw: dict[str, Any], base: Path, where: str) -> tuple[Path | None, str]:
    """``[calibration]``: the human labels file and the formula."""
    cal = _table(raw, "calibration", where)
    _check_keys("calibration", cal, {"labels", "formula"}, where)
    labels = _resolve(base, cal["labels"]) if cal.get("labels") else None
    formula = str(cal.get("formula", "freshstack"))
    if formula not in FORMULAS:
        raise InputError(
            f"{where}: [calibration] formula {formula!r} is not one of {', '.join(FORMULAS)} "
            "(freshstack: the paper's equations 2-4; strict: hallucinated nuggets also left out "
            "of precision and recall)"
        )
    return labels, formula


def load_plan(path: str | Path, *, llm: dict[str, Any] | None = None) -> Plan:
    """Read and parse a plan file; *llm* overrides its ``[llm]`` keys (see :func:`parse_plan`).

    Raises:
        InputError: the file does not exist; see :func:`parse_plan`.
        FormatError: not valid TOML (line named).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"plan file {path} does not exist")
    raw = _toml_loads(path.read_text(encoding="utf-8"), str(path))
    plan = parse_plan(raw, base=path.resolve().parent, where=str(path), llm=llm)
    return Plan(**{**{f.name: getattr(plan, f.name) for f in fields(Plan)}, "path": path.resolve()})


__all__ = ["Plan", "QuestionsSpec", "load_plan", "parse_plan", "check_values", "SECTIONS"]
