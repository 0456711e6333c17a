"""The package's import graph has no cycle, function-level imports included.

Edges, read from the source of every module under ``schedopt/``:

* every ``import`` / ``from ... import`` at any depth (module level, inside functions and methods), resolved to the
  module it names (``from . import x`` to the submodule ``x`` when there is one, else to the package);
* importing ``schedopt.a.b`` from outside ``schedopt.a`` also runs ``schedopt/a/__init__.py``: an edge to the
  package too;
* ``importlib.import_module("schedopt....")`` with a literal name (an import hidden in a string is still one).

Nothing is left out: imports under ``if TYPE_CHECKING:`` and inside deprecation shims are edges too (an annotation
that needs a module above this one is a layer pointing the wrong way; a module built on another registers itself
with it instead, as ``schedopt.export`` does in ``schedopt.model.MODEL_IO``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "schedopt"


def _modules() -> dict[str, tuple[Path, bool]]:
    out: dict[str, tuple[Path, bool]] = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


def _imports(tree: ast.Module) -> list[tuple[ast.AST, list[str], int]]:
    """(node, absolute-or-relative targets, level) of every import in the module, at any depth."""
    found: list[tuple[ast.AST, list[str], int]] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            found.append((node, [a.name for a in node.names], 0))
        elif isinstance(node, ast.ImportFrom):
            found.append((node, [f"{node.module or ''}|{a.name}" for a in node.names], node.level))
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node, [node.args[0].value], 0))
        todo.extend(ast.iter_child_nodes(node))
    return found


def import_graph() -> nx.DiGraph:
    mods = _modules()
    g = nx.DiGraph()
    for name, (path, is_pkg) in mods.items():
        g.add_node(name)
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        for node, targets, level in _imports(ast.parse(path.read_text())):
            resolved: list[str] = []
            for t in targets:
                if "|" not in t:
                    resolved.append(t)
                    continue
                mod, _, attr = t.partition("|")
                if level:
                    mod = ".".join(base[: len(base) - (level - 1)] + ([mod] if mod else []))
                resolved.append(f"{mod}.{attr}" if f"{mod}.{attr}" in mods else mod)
            here = name.split(".")
            for t in resolved:
                if t not in mods or t == name:
                    continue
                g.add_edge(name, t, line=getattr(node, "lineno", 0))
                parts = t.split(".")
                for k in range(2, len(parts)):  # the packages on the way run their __init__ too
                    pkg = ".".join(parts[:k])
                    if pkg != ".".join(here[:k]) and pkg in mods and pkg != name:
                        g.add_edge(name, pkg, line=getattr(node, "lineno", 0))
    return g


def _describe(g: nx.DiGraph, cycle: list[str]) -> str:
    hops = zip(cycle, [*cycle[1:], cycle[0]])
    return " -> ".join(f"{a} (line {g.edges[a, b]['line']})" for a, b in hops) + f" -> {cycle[0]}"


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    return import_graph()


def test_the_import_graph_is_acyclic(graph: nx.DiGraph) -> None:
    g = graph
    assert g.number_of_nodes() > 100 and g.number_of_edges() > 300  # the walk found the package
    cycles = [_describe(g, c) for c in nx.simple_cycles(g)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles[:20])


def test_function_level_and_string_imports_are_edges(graph: nx.DiGraph) -> None:
    """The two ways a cycle used to hide: inside a function (sim.runs -> sim.families) and in an importlib string.
    The model and its exporters point one way: export builds on the model and registers its conversions in
    ``schedopt.model.MODEL_IO``; the model imports no exporter."""
    g = graph
    assert g.has_edge("schedopt.sim.runs", "schedopt.sim.families")  # runs._call imports it inside the function
    assert g.has_edge("schedopt.export", "schedopt.model") and not g.has_edge("schedopt.model", "schedopt.export")
    assert g.has_edge("schedopt.sia.io", "schedopt.sia.bench")  # found through PROBLEM_IO.bench_specs
    assert not any(b.startswith("schedopt.sia") for b in g.successors("schedopt.bench.registry"))
    src = "import importlib\ndef f():\n    importlib.import_module('schedopt.sia.bench')\n"
    assert sorted(t for _, t, _ in _imports(ast.parse(src))) == [["importlib"], ["schedopt.sia.bench"]]


def test_the_benchmark_and_the_simulator_share_a_neutral_progress_module(graph: nx.DiGraph) -> None:
    from schedopt.bench.progress import Progress as FromBench
    from schedopt.progress import Progress

    assert FromBench is Progress
    assert not any(b.startswith("schedopt.bench") for b in graph.successors("schedopt.progress"))
    # the simulator reaches no part of the benchmark harness (it used to import its progress bar)
    sim_to_bench = sorted((a, b) for a, b in graph.edges if a.startswith("schedopt.sim") and b.startswith("schedopt.bench"))
    assert not sim_to_bench, sim_to_bench


def test_the_deprecated_readers_still_work_with_a_warning(tmp_path: Path) -> None:
    import numpy as np

    import schedopt
    from schedopt import export

    m = schedopt.LinearModel("k", sense="maximize")
    m.add_variables("x", 2, kind="binary", labels=["a", "b"])
    m.add_constraints("cap", {"x": [[1.0, 1.0]]}, upper=1.0)
    m.set_objective({"x": [2.0, 3.0]})
    path = str(tmp_path / "k.mps")
    m.write_mps(path)
    with pytest.warns(DeprecationWarning, match="read_mps"):
        back = export.read_model(path)
    parts = export.read_model_parts(path)
    assert [b.name for b in parts.blocks] == ["x"] and [f.name for f in parts.families] == ["cap"]
    again = schedopt.LinearModel.from_parts(parts)
    for got in (back, again):
        assert got.sense == "maximize" and np.array_equal(got.to_arrays().c, [2.0, 3.0])
        assert schedopt.solve(got).objective == 3.0


def test_the_sia_bench_spec_is_found_through_its_problem_io() -> None:
    from schedopt.bench.registry import package_specs
    from schedopt.sia import PROBLEM_IO
    from schedopt.sia.bench import SIA_SPEC

    assert PROBLEM_IO.bench_specs is not None and list(PROBLEM_IO.bench_specs()) == [SIA_SPEC]
    assert SIA_SPEC in package_specs()
    import schedopt.bench.registry as registry

    with pytest.warns(DeprecationWarning, match="moved to schedopt.sia.bench"):
        assert registry.sia_build is SIA_SPEC.pipeline.build  # type: ignore[attr-defined]
