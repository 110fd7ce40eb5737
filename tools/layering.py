"""Import-graph facts about the package: cycles, function-local imports, longest functions.

Usage: ``python tools/layering.py [--list]``. Prints the number of import cycles (strongly
connected components of more than one module, counting every import of our own modules except
those under ``if TYPE_CHECKING:``), the function-local imports of our own modules, and the
longest functions and CLI commands. ``tests/test_layering.py`` holds the same facts as tests.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "nuggetbench"


#: The layers, bottom first: a module may import its own package and any lower layer only.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "_version", "_atomic", "_runtime", "home", "progress"),
    ("jsonl",),
    ("plugins",),
    ("spec",),
    ("store",),
    ("data", "text", "llm"),
    ("measures", "corpus"),
    ("compare", "_outfolder"),
    ("retrieval", "datasets"),
    ("judging",),
    ("builder", "evaluation", "experiment", "api"),
    ("reproduce",),
    ("report",),
    ("cli", "__init__"),
    ("_entry",),
    ("__main__",),
]


def part_of(module: str) -> str:
    """The top-level part of the package a module belongs to (``nuggetbench.data.run`` -> ``data``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(imports: list[Import]) -> list[Import]:
    """Imports from a part to a part of the same or a higher layer (other than itself)."""
    rank = {part: i for i, layer in enumerate(LAYERS) for part in layer}
    out = []
    for imp in imports:
        a, b = part_of(imp.source), part_of(imp.target)
        if a != b and rank.get(b, 99) >= rank.get(a, -1):
            out.append(imp)
    return out


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module of ours
    line: int
    local: bool  # inside a function
    lazy_reason: str  # the comment on the line, if any


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def _resolve(mod: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = mod.split(".")
    if not is_pkg:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def imports_of(
    mod: str, path: Path, known: set[str], *, type_checking: bool = False
) -> list[Import]:
    """The imports of our own modules in *mod*; those under ``if TYPE_CHECKING:`` only with
    *type_checking* (they do not run, but they still say which module knows which)."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    is_pkg = path.name == "__init__.py"
    out: list[Import] = []

    def target_modules(node) -> list[str]:
        found = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    found.append(alias.name)
        else:
            base = _resolve(mod, is_pkg, node.level, node.module)
            if base.split(".")[0] != PACKAGE:
                return []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append(sub if sub in known else base)
        return [f for f in found if f in known]

    def visit(node, local: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child) and not type_checking:
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                comment = lines[child.lineno - 1].partition("#")[2].strip()
                for target in target_modules(child):
                    if target != mod:
                        out.append(Import(mod, target, child.lineno, local, comment))
            inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, False)
    return out


def all_imports(*, type_checking: bool = False) -> list[Import]:
    mods = modules()
    known = set(mods)
    found = []
    for mod, path in mods.items():
        found += imports_of(mod, path, known, type_checking=type_checking)
    return found


#: The BM25 package (``retrieval/bm25``) reads one way, bottom first: tokenization and scoring,
#: then the index layouts (every module not named here: single, sharded, the memory planner,
#: Lucene, PISA...), then the retriever, which chooses among them. Imports under
#: ``if TYPE_CHECKING:`` count too.
BM25_PACKAGE = f"{PACKAGE}.retrieval.bm25"
BM25_ROWS: list[tuple[str, ...]] = [
    ("tokens", "scoring", "kernel", "topk", "engine"),
    (),  # the layouts
    ("retriever",),
]


def bm25_row(module: str) -> int:
    """The row of a module of the BM25 package (:data:`BM25_ROWS`; a layout is row 1)."""
    name = module.removeprefix(BM25_PACKAGE + ".")
    for i, row in enumerate(BM25_ROWS):
        if name in row:
            return i
    return 1


def bm25_imports() -> list[Import]:
    """The imports among the BM25 package's modules, ``TYPE_CHECKING`` ones included."""
    inside = BM25_PACKAGE + "."
    return [
        i
        for i in all_imports(type_checking=True)
        if i.source.startswith(inside) and i.target.startswith(inside)
    ]


def bm25_upward(imports: list[Import]) -> list[Import]:
    """Imports inside the BM25 package that point to a higher row, or to the retriever."""
    return [
        i
        for i in imports
        if bm25_row(i.target) > bm25_row(i.source)
        or (bm25_row(i.target) == len(BM25_ROWS) - 1 and i.source != i.target)
    ]


def cycles(imports: list[Import]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.target)
        # importing a.b.c runs a/__init__ and a/b/__init__ first
        parts = imp.target.split(".")
        for i in range(2, len(parts)):
            parent = ".".join(parts[:i])
            if parent != imp.source and not imp.source.startswith(parent + "."):
                graph[imp.source].add(parent)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def local_imports(imports: list[Import]) -> list[Import]:
    """Function-local imports of our own modules, one per statement."""
    seen: dict[tuple[str, int], Import] = {}
    for imp in imports:
        if imp.local:
            seen.setdefault((imp.source, imp.line), imp)
    return list(seen.values())


def function_lengths() -> list[tuple[int, str]]:
    out = []
    for mod, path in modules().items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((node.end_lineno - node.lineno + 1, f"{mod}:{node.name}"))
    return sorted(out, reverse=True)


#: The house's limits on size (``tests/test_layering.py`` holds them).
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600
MAX_MODULES_PER_FOLDER = 20


def module_lengths() -> list[tuple[int, str]]:
    """``(lines, module)`` of every module, longest first."""
    return sorted(
        ((len(path.read_text().splitlines()), mod) for mod, path in modules().items()),
        reverse=True,
    )


def folder_sizes() -> list[tuple[int, str]]:
    """``(modules side by side, folder)`` of every package folder, largest first."""
    folders: dict[str, int] = {}
    for path in modules().values():
        key = str(path.parent.relative_to(ROOT))
        folders[key] = folders.get(key, 0) + 1
    return sorted(((n, f) for f, n in folders.items()), reverse=True)


def private_imports(imports: list[Import]) -> list[Import]:
    """Imports of a private module (a name starting with ``_``) from outside the package that
    holds it: ``nuggetbench.data._x`` may be imported from ``nuggetbench.data`` only."""
    out = []
    for imp in imports:
        parts = imp.target.split(".")
        private = [i for i, part in enumerate(parts) if part.startswith("_") and i > 0]
        if not private:
            continue
        owner = ".".join(parts[: private[0]])
        if not (imp.source == owner or imp.source.startswith(owner + ".")):
            out.append(imp)
    return out


def main(argv: list[str]) -> int:
    imps = all_imports()
    cyc = cycles(imps)
    local = local_imports(imps)
    print(f"modules: {len(modules())}")
    print(f"import cycles: {len(cyc)}")
    up = upward_imports(imps)
    print(f"imports pointing up or sideways across layers: {len(up)}")
    for i in up:
        print(f"  {i.source}:{i.line} -> {i.target}")
    for c in cyc:
        print("  cycle:", " <-> ".join(c))
    print(f"function-local imports of our own modules: {len(local)} statements")
    for i in local:
        print(f"  {i.source}:{i.line} -> {i.target}  # {i.lazy_reason or 'NOT JUSTIFIED'}")
    print(f"imports of another package's private module: {len(private_imports(imps))}")
    inside = bm25_imports()
    print(
        f"BM25 package: {len(cycles(inside))} import cycles (TYPE_CHECKING ones counted), "
        f"{len(bm25_upward(inside))} imports up its rows"
    )
    for i in bm25_upward(inside):
        print(f"  {i.source}:{i.line} -> {i.target}")
    print(f"longest module: {module_lengths()[0]}; largest folder: {folder_sizes()[0]}")
    lengths = function_lengths()
    print("longest functions:")
    for n, name in lengths[:5]:
        print(f"  {n:4d} {name}")
    cli = [(n, name) for n, name in lengths if name.startswith(f"{PACKAGE}.cli.")]
    print("longest CLI functions:")
    for n, name in cli[:5]:
        print(f"  {n:4d} {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
