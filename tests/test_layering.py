"""The layering of the package: no import cycles, and no function-local import of our own
modules unless it keeps an optional heavy dependency lazy (the line says why: ``# lazy: ...``)."""

from __future__ import annotations

import importlib.util
import sys
import tokenize
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools" / "layering.py"


def _layering():
    spec = importlib.util.spec_from_file_location("nb_layering", TOOLS)
    module = importlib.util.module_from_spec(spec)
    sys.modules["nb_layering"] = module
    spec.loader.exec_module(module)
    return module


def test_no_import_cycles():
    lay = _layering()
    assert lay.cycles(lay.all_imports()) == []


def test_imports_point_down_the_layers():
    lay = _layering()
    modules = {lay.part_of(m) for m in lay.modules()}
    declared = {part for layer in lay.LAYERS for part in layer}
    assert modules <= declared  # every part of the package has a layer
    assert [f"{i.source} -> {i.target}" for i in lay.upward_imports(lay.all_imports())] == []


def test_function_local_imports_are_justified():
    lay = _layering()
    local = lay.local_imports(lay.all_imports())
    unjustified = [f"{i.source}:{i.line}" for i in local if not i.lazy_reason.startswith("lazy:")]
    assert unjustified == []
    assert len(local) <= 3  # each one is a heavy optional dependency kept lazy


def test_a_cycle_would_be_found(tmp_path):
    lay = _layering()
    imps = [
        lay.Import("nuggetbench.a", "nuggetbench.b", 1, True, ""),
        lay.Import("nuggetbench.b", "nuggetbench.a", 1, False, ""),
    ]
    assert lay.cycles(imps) == [["nuggetbench.a", "nuggetbench.b"]]


def test_the_bm25_package_reads_one_way():
    """Inside ``retrieval/bm25``: tokenization and scoring at the bottom, the layouts above, the
    retriever on top; no cycle, not even through ``if TYPE_CHECKING:`` imports."""
    lay = _layering()
    inside = lay.bm25_imports()
    modules = {i.source for i in inside}
    assert f"{lay.BM25_PACKAGE}.retriever" in modules and f"{lay.BM25_PACKAGE}.sharded" in modules
    assert lay.cycles(inside) == []
    assert [f"{i.source}:{i.line} -> {i.target}" for i in lay.bm25_upward(inside)] == []


def test_a_bm25_cycle_or_upward_import_would_be_found():
    lay = _layering()
    p = lay.BM25_PACKAGE
    back = [
        lay.Import(f"{p}.index", f"{p}.retriever", 3, False, ""),  # a layout knowing its chooser
        lay.Import(f"{p}.retriever", f"{p}.index", 4, False, ""),
        lay.Import(f"{p}.tokens", f"{p}.sharded", 5, False, ""),  # the bottom knowing a layout
    ]
    assert lay.cycles(back[:2]) == [[f"{p}.index", f"{p}.retriever"]]
    assert [(i.source, i.target) for i in lay.bm25_upward(back)] == [
        (f"{p}.index", f"{p}.retriever"),
        (f"{p}.tokens", f"{p}.sharded"),
    ]


def test_no_cli_command_is_over_40_lines():
    lay = _layering()
    lengths = {name: n for n, name in lay.function_lengths()}
    commands = {
        k: v
        for k, v in lengths.items()
        if k.startswith("nuggetbench.cli.") and k.endswith("_command")
    }
    assert commands and max(commands.values()) <= 40, commands


def test_the_cli_names_no_benchmark_outside_help_text():
    """Only strings (help text) may name a benchmark: no identifier, import or branch."""
    root = Path(__file__).resolve().parents[1] / "src" / "nuggetbench" / "cli"
    names = ("fastbook", "birco", "freshstack")
    found = []
    for path in sorted(root.glob("*.py")):
        with open(path, "rb") as fh:
            for tok in tokenize.tokenize(fh.readline):
                if tok.type in (tokenize.STRING, tokenize.COMMENT):
                    continue
                if any(n in tok.string.lower() for n in names):
                    found.append(f"{path.name}:{tok.start[0]}: {tok.string}")
    assert found == []


def test_no_function_over_80_lines():
    lay = _layering()
    long = [f"{name}: {n}" for n, name in lay.function_lengths() if n > lay.MAX_FUNCTION_LINES]
    assert long == []


def test_no_module_over_600_lines():
    lay = _layering()
    long = [f"{name}: {n}" for n, name in lay.module_lengths() if n > lay.MAX_MODULE_LINES]
    assert long == []


def test_no_folder_over_20_modules():
    lay = _layering()
    big = [f"{f}: {n}" for n, f in lay.folder_sizes() if n > lay.MAX_MODULES_PER_FOLDER]
    assert big == []


def test_no_import_of_another_packages_private_module():
    lay = _layering()
    found = [f"{i.source}:{i.line} -> {i.target}" for i in lay.private_imports(lay.all_imports())]
    assert found == []


def test_no_package_exports_a_function_named_like_its_submodule():
    import importlib
    import pkgutil

    import nuggetbench

    clashes = []
    for info in pkgutil.walk_packages(nuggetbench.__path__, "nuggetbench."):
        if not info.ispkg:
            continue
        package = importlib.import_module(info.name)
        subs = {m.name for m in pkgutil.iter_modules(package.__path__)}
        for name in getattr(package, "__all__", ()):
            value = getattr(package, name, None)
            if name in subs and callable(value) and not hasattr(value, "__path__"):
                clashes.append(f"{info.name}.{name}")
    assert clashes == []
