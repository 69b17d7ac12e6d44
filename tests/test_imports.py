"""The package's imports flow one way: no cycles between hlotune's top-level packages and
modules, and none of the directions the architecture forbids (docs/architecture.md)."""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hlotune"

# (from, to): a cost model never reads the compiler's tables, graphs never need a model, the
# format layer never runs a collection, models and training never need the evaluation harness
# (which trains per fold), and no stage calls back into the command line.
FORBIDDEN = [("models", "compiler"), ("hlo", "models"), ("data", "collect"),
             ("train", "evaluation"), ("models", "evaluation")] + [
    (stage, "cli") for stage in ("collect", "compiler", "data", "evaluation", "hlo", "models",
                                 "opt", "programs", "report", "train", "tuning")
]


def _unit(module: str) -> str:
    """`hlotune.tuning.tuner` -> `tuning`: the top-level package or module it belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _imports(path: Path) -> set[str]:
    """hlotune modules a file imports, at any depth of its code (lazy imports count)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return {name for name in found if name.startswith("hlotune.")}


@functools.cache
def import_graph() -> dict[str, dict[str, list[str]]]:
    """unit -> imported unit -> the files that import it (parsed once for every test here)."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _unit(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for module in _imports(path):
            target = _unit(module)
            if target != source:
                graph[source][target].append(str(path.relative_to(PACKAGE.parent)))
    return {source: dict(targets) for source, targets in graph.items()}


def find_cycle(graph: dict[str, dict[str, list[str]]]) -> list[str] | None:
    """One cycle of units (first unit repeated at the end), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(unit: str) -> list[str] | None:
        state[unit] = "open"
        stack.append(unit)
        for target in sorted(graph.get(unit, {})):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        state[unit] = "done"
        stack.pop()
        return None

    for unit in sorted(graph):
        if unit not in state and (cycle := visit(unit)) is not None:
            return cycle
    return None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("source,target", FORBIDDEN)
def test_no_forbidden_direction(source, target):
    files = import_graph().get(source, {}).get(target, [])
    assert not files, f"{source} must not import {target}: {', '.join(files)}"


def test_the_checks_can_fail():
    """The walker sees lazy imports, and the cycle finder finds a planted cycle."""
    graph = import_graph()
    assert "tuning" in graph["cli"]  # cli imports hlotune.tuning.commands at module level
    assert "evaluation" in graph["tuning"]  # tuning/models/scorer.py imports it inside a function
    planted = {"a": {"b": ["x"]}, "b": {"c": ["y"]}, "c": {"a": ["z"]}}
    assert find_cycle(planted) == ["a", "b", "c", "a"]


ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
BEGIN, END = "<!-- import graph: begin -->", "<!-- import graph: end -->"


def _summary(unit: str) -> str:
    """The first sentence of the unit's docstring (its package's `__init__.py`, or the module)."""
    path = PACKAGE / unit / "__init__.py" if (PACKAGE / unit).is_dir() else PACKAGE / f"{unit}.py"
    text = " ".join((ast.get_docstring(ast.parse(path.read_text())) or "").split())
    return re.split(r"(?<=\.)\s", text, maxsplit=1)[0].rstrip(".")


def diagram() -> str:
    """The import graph as a table, each unit after every unit it imports (by depth, then name)."""
    graph = import_graph()
    units = {path.stem if path.is_file() else path.name for path in PACKAGE.iterdir()
             if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()}
    depth: dict[str, int] = {}

    def level(unit: str) -> int:
        if unit not in depth:
            depth[unit] = 1 + max((level(t) for t in graph.get(unit, {})), default=-1)
        return depth[unit]

    rows = sorted(units, key=lambda u: (level(u), u))
    lines = ["| unit | imports | what it is |", "|---|---|---|"]
    lines += [f"| `{u}` | {', '.join(sorted(graph.get(u, {}))) or '-'} | {_summary(u)} |" for u in rows]
    return "\n".join(lines)


def documented_diagram() -> str:
    text = ARCHITECTURE.read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()


def test_the_architecture_diagram_is_the_import_graph():
    """docs/architecture.md shows the graph this file checks (`python tests/test_imports.py
    --write` regenerates it from the code)."""
    assert documented_diagram() == diagram(), "run: python tests/test_imports.py --write"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    text = ARCHITECTURE.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    ARCHITECTURE.write_text(text[:start] + "\n" + diagram() + "\n" + text[end:])
